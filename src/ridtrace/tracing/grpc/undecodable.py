"""A unary request message the method's deserializer refuses: answered as gRPC answers it,
but traced.

gRPC deserializes a unary request before any handler runs and answers a failure itself
(``INTERNAL`` "Exception deserializing request!" on a synchronous server; on grpc.aio
``UNKNOWN`` "Unexpected <class ...>: ..."), so an interceptor saw nothing of such a call:
no ``request_id`` (not even in the status's metadata), no lines, no span, and gRPC's own
error line named no request. The interceptor gives the server a deserializer that hands
the failure on as an :class:`Undecodable` instead; the traced handler begins the call as
any other and then answers what gRPC would have (`answer_undecodable`), without ever
calling the servicer. (A request *stream*'s messages keep gRPC's own deserializer: gRPC
answers a refused one mid-stream, see ``ridtrace.tracing.grpc.sync``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

__all__ = ["UNDECODABLE_ERROR", "Undecodable", "answer_undecodable", "tolerant_deserializer"]

UNDECODABLE_ERROR = "gRPC could not deserialize a request message"
"""The ``error`` of such a call's ``request.end`` (the handler never saw why)."""

# What grpc's synchronous server answers for the case (grpc._server).
_SYNC_DETAILS = "Exception deserializing request!"


class Undecodable:
    """Stands for a request message the method's deserializer refused."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def tolerant_deserializer(handler: grpc.RpcMethodHandler) -> Callable[[bytes], Any] | None:
    """The deserializer to give the wrapped ``handler``: its own, with a refusal handed on
    as an :class:`Undecodable` for a unary request; unchanged for a request stream."""
    deserialize = handler.request_deserializer
    if deserialize is None or handler.request_streaming:
        return deserialize  # type: ignore[no-any-return]

    def deserialize_or_hand_on(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as exc:  # what gRPC itself would have caught
            return Undecodable(exc)

    return deserialize_or_hand_on


def answer_undecodable(request: Undecodable, context: Any, ctx_annotations: dict[str, Any],
                       *, aio: bool) -> Any:
    """Answer as gRPC would have (raises). On grpc.aio the deserializer's exception
    escapes the handler, which is what the server did with it; a synchronous server
    aborts with its own code and details."""
    ctx_annotations["error"] = f"{UNDECODABLE_ERROR} ({type(request.error).__qualname__})"
    if aio:
        raise request.error
    context.abort(grpc.StatusCode.INTERNAL, _SYNC_DETAILS)
