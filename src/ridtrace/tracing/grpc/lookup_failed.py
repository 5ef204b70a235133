"""A call whose handler lookup raised in an interceptor listed after ridtrace's (an
authentication check that raises instead of answering): gRPC's own answer, but traced.

gRPC answers such a call ``UNKNOWN`` by itself once the lookup raised, before any
handler runs, so the call left no ``request_id``, no lines, no span and no count, and
gRPC's ERROR line named no request, though docs/grpc.md promises that a refusal by an
interceptor listed after ridtrace's is recorded like any other answer. The interceptor
hands the server one of these instead, wrapped like any handler: the client gets what
gRPC answered, and gRPC's line carries the call's ids.

Stream in and out, as for an unknown method: whatever the client's call shape, the
handler reads no request message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import grpc
import grpc.aio

from ridtrace.tracing.grpc.method import OTHER_METHOD, MethodInfo

__all__ = ["lookup_failed", "served_as"]

# What a synchronous server answers and logs when the lookup raises (grpc._server).
_SYNC_DETAILS = "Error in service handler!"
_GRPC_SERVER_LOG = logging.getLogger("grpc._server")


def served_as(method: str, served: Any) -> MethodInfo:
    """`method` as a call is named before the lookup has said what it is: by its name if
    the interceptor has served it before (``served``: the methods it has), else as the
    client's string under ``_OTHER``, so invented names grow no metric series."""
    if method in served:
        return MethodInfo(method)
    return MethodInfo(method, known=False, route=OTHER_METHOD)


def lookup_failed(
    error: Exception,
    method: str,
    served: Any,
    wrap: Callable[[grpc.RpcMethodHandler, MethodInfo], grpc.RpcMethodHandler],
    *,
    aio: bool = False,
) -> grpc.RpcMethodHandler:
    """The traced handler (``wrap``: the interceptor's, for its server) answering as
    gRPC does when the lookup raised ``error``: grpc.aio lets it escape the servicer
    (``UNKNOWN`` "Unexpected <class ...>: ...", and its own ERROR line); a synchronous
    server logs it and answers ``UNKNOWN`` "Error in service handler!".

    The method is named as `served_as` names it.
    """
    info = served_as(method, served)
    if aio:

        async def raise_it(requests: Any, context: grpc.aio.ServicerContext) -> None:
            raise error

        return wrap(grpc.stream_stream_rpc_method_handler(raise_it), info)

    def answer_it(requests: Any, context: grpc.ServicerContext) -> Any:
        # gRPC logs this itself when the lookup raises: here the call's ids are on it.
        _GRPC_SERVER_LOG.error("Exception servicing handler: %s", error, exc_info=error)
        context.abort(grpc.StatusCode.UNKNOWN, _SYNC_DETAILS)
        raise AssertionError("abort() returned")  # pragma: no cover - abort always raises

    return wrap(grpc.stream_stream_rpc_method_handler(answer_it), info)
