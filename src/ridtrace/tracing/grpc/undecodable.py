"""Request messages the method's deserializer refuses, or a unary handler's result its
serializer refuses (``None``, a ``dict``): answered as gRPC answers them, but traced.

gRPC deserializes a unary request before any handler runs and answers a failure itself
(``INTERNAL`` "Exception deserializing request!" on a synchronous server; on grpc.aio
``UNKNOWN`` "Unexpected <class ...>: ..."), so an interceptor saw nothing of such a call:
no ``request_id`` (not even in the status's metadata), no lines, no span, and gRPC's own
error line named no request. The interceptor gives the server a deserializer that hands
the failure on as an :class:`Undecodable` instead; the traced handler begins the call as
any other and then answers what gRPC would have (`answer_undecodable`), without ever
calling the servicer. A request *stream*'s messages keep gRPC's own deserializer: gRPC
answers a refused one mid-stream, and a synchronous server's handler only sees its
request iterator end; `refused_by_grpc` tells that end from a client's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import grpc

from ridtrace.tracing.grpc.status import UNDECODABLE_ERROR, deadline_passed

__all__ = [
    "Undecodable",
    "answer_undecodable",
    "answer_unserializable",
    "end_as_refused",
    "nothing_to_send",
    "refuse_unsendable",
    "refused_by_grpc",
    "tolerant_deserializer",
    "unsendable",
    "unserializable_reason",
]

# What grpc's synchronous server answers for the case (grpc._server).
_SYNC_DETAILS = "Exception deserializing request!"
# ... and for a unary response its serializer refuses.
_SYNC_SERIALIZE_DETAILS = "Failed to serialize response!"


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
                       *, aio: bool) -> NoReturn:
    """Answer as gRPC would have (raises). On grpc.aio the deserializer's exception
    escapes the handler, which is what the server did with it; a synchronous server
    aborts with its own code and details."""
    ctx_annotations["error"] = f"{UNDECODABLE_ERROR} ({type(request.error).__qualname__})"
    if aio:
        raise request.error
    context.abort(grpc.StatusCode.INTERNAL, _SYNC_DETAILS)
    raise AssertionError("abort() returned")  # pragma: no cover - abort always raises


def refused_by_grpc(context: Any) -> bool:
    """On a synchronous server (``context``: ridtrace's proxy), the request stream just
    ended because gRPC could not deserialize a message.

    gRPC then sends ``INTERNAL`` at once and ends the handler's request iterator as if
    the client had closed its stream; the call is over though the handler neither
    aborted nor returned. A client's cancel (or its deadline) makes the iterator raise
    ``grpc.RpcError`` instead, and a stream the client closed leaves the call active.
    A cancel that lands between the iterator's end and this check looks the same from
    the public API; gRPC's call state (private, read only if it is there) tells them
    apart.
    """
    if context.aborted or context.is_active() or deadline_passed(context):
        return False
    state = getattr(context._context, "_state", None)
    return getattr(state, "client", None) != "cancelled"


def end_as_refused(context: Any) -> NoReturn:
    """Hand gRPC an abort (raises) instead of the result of a call it already answered
    ``INTERNAL`` for a message it could not deserialize.

    grpcio's synchronous server sends the result's status anyway, in a batch that may
    never complete (1.85: about one client-streaming call in four): the call is never
    finished, and ``server.stop()`` then waits for it forever. After an abort it does
    not. The client's status was sent before and stays as it was.
    """
    context._context.abort(grpc.StatusCode.INTERNAL, _SYNC_DETAILS)
    raise AssertionError("abort() returned")  # pragma: no cover - abort always raises


def nothing_to_send(
    result: Any, serializer: Callable[[Any], bytes] | None, context: Any, *, aio: bool
) -> Exception | None:
    """What the response serializer raises for a unary handler's result when no status
    was set: ``None`` (a forgotten ``return``), or a value that is no message (a
    ``dict``). gRPC then fails the call after the handler returned, where ridtrace had
    recorded it ``OK``. ``None`` when gRPC will send it.

    Without a serializer (a bytes handler) a synchronous server fails a ``None`` too
    ("Failed to serialize response!": gRPC takes a None from any serializer for a
    refusal), where grpc.aio sends it as an empty message.

    A code the handler set (``set_code(NOT_FOUND)``, then ``return``) is what both
    servers answer such a call with, and what ridtrace records anyway.
    """
    if hasattr(result, "SerializeToString"):
        return None
    refused = _raw_refusal(result, aio=aio) if serializer is None else None
    if serializer is None and refused is None:
        return None
    code = context.code()
    # A synchronous server never answers a bytes handler's value that is no bytes,
    # whatever code was set: its client waited for its deadline (recorded with the code).
    hangs = not aio and serializer is None and result is not None
    if isinstance(code, grpc.StatusCode) and code is not grpc.StatusCode.OK and not hangs:
        return None
    return refused if serializer is None else _refusal(result, serializer)


def refuse_unsendable(
    message: Any,
    serializer: Callable[[Any], bytes] | None,
    context: Any,
    ctx_annotations: dict[str, Any],
    *,
    aio: bool,
) -> None:
    """Answer as gRPC would (raises) for a streamed ``message`` its serializer refuses.

    gRPC's own refusal ends the stream as a client's cancel does, so such a call was
    recorded ``CANCELLED`` while its client got ``UNKNOWN`` / ``INTERNAL``. A protobuf
    message is not tried: that would serialize every response twice.
    """
    refused = _streamed_refusal(message, serializer, aio=aio)
    if refused is not None:
        answer_unserializable(refused, message, context, ctx_annotations, aio=aio, verb="yielded")


def note_refused_write(
    context: Any, escaping: BaseException, serializer: Callable[[Any], bytes] | None,
    ctx_annotations: dict[str, Any],
) -> None:
    """Name in the call's ``error`` a message a grpc.aio ``context.write()`` refused, when
    that write's error is the one escaping the handler (`escaping`) and the serializer
    refuses the message: the call ends over it, gRPC's own ``UNKNOWN``, where a yielded
    one was named and a written one was not. A handler that caught the error and went
    on ended over something else."""
    failed = context.failed_write
    if failed is None or failed[0] is not escaping:
        return
    message = failed[1]
    refused = _streamed_refusal(message, serializer, aio=True)
    if refused is not None:
        ctx_annotations["error"] = unserializable_reason(refused, message, "wrote")


def _streamed_refusal(
    message: Any, serializer: Callable[[Any], bytes] | None, *, aio: bool,
) -> Exception | None:
    """What sending a streamed `message` raises: a bytes handler's (no serializer) takes
    what `_raw_refusal` says; else the method's serializer judges."""
    return _raw_refusal(message, aio=aio, streamed=True) if serializer is None else unsendable(
        message, serializer)


def unsendable(message: Any, serializer: Callable[[Any], bytes] | None) -> Exception | None:
    """What the method's serializer raises for a streamed ``message`` (``None`` when it
    takes it); a protobuf message is not tried (that would serialize it twice)."""
    if serializer is None or hasattr(message, "SerializeToString"):
        return None
    return _refusal(message, serializer)


def _raw_refusal(message: Any, *, aio: bool, streamed: bool = False) -> Exception | None:
    """What sending ``message`` without a serializer (a bytes handler) raises. grpc.aio
    takes bytes, a str (encoded) and None (an empty message). A synchronous server takes
    bytes, and a None yielded ends its stream; it fails a None returned itself ("Failed
    to serialize response!"), and anything else raises in gRPC's own thread, where the
    call is never answered (its client waits for its deadline) while ridtrace had
    recorded it ``OK``, or ``CANCELLED`` for a stream."""
    # Exactly bytes: a subclass of it is refused by both servers' C code.
    if type(message) is bytes or (message is None and (aio or streamed)) or (
            aio and isinstance(message, str)):
        return None
    if aio:  # grpc.aio's own words, which its client gets
        return TypeError(f"Expected bytes, got {type(message).__name__}")
    name = "None" if message is None else type(message).__name__
    return TypeError(f"a response without a serializer must be bytes, not {name}")


def _refusal(message: Any, serializer: Callable[[Any], bytes]) -> Exception | None:
    try:
        serializer(message)
    except Exception as exc:  # what gRPC itself would catch
        return exc
    return None


def answer_unserializable(
    error: Exception, result: Any, context: Any, ctx_annotations: dict[str, Any], *, aio: bool,
    verb: str = "returned",
) -> Any:
    """Answer as gRPC would have (raises): on grpc.aio the serializer's exception escapes
    (``UNKNOWN``), a synchronous server aborts ``INTERNAL`` with its own details."""
    ctx_annotations["error"] = unserializable_reason(error, result, verb)
    if aio:
        raise error
    context.abort(grpc.StatusCode.INTERNAL, _SYNC_SERIALIZE_DETAILS)


def unserializable_reason(error: Exception, result: Any, verb: str) -> str:
    """The ``error`` a call's ``request.end`` names for a response gRPC could not send."""
    name = type(result).__qualname__
    returned = "None" if result is None else f"{'an' if name[:1] in 'AEIOUaeiou' else 'a'} {name}"
    return (
        f"gRPC could not serialize the response: the handler {verb} {returned} "
        f"({type(error).__qualname__})"
    )
