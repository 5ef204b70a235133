"""The handler for a method the server does not have: gRPC's own answer, but traced.

gRPC answers such a call ``UNIMPLEMENTED`` ("Method not found!") by itself, before any
handler runs, so an interceptor that passed the lookup's ``None`` on left no line, no
id and no span for it, where the HTTP middleware logs a 404. The interceptor hands the
server one of these instead, wrapped like any handler: the same status and details
reach the client, and the call gets its ``request_id``, span and lifecycle lines.

Stream in and out: whatever the client's call shape, the handler reads no request
message (a unary shape would read one, and fail a client that sent none or several).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import grpc.aio

__all__ = ["NOT_FOUND_DETAILS", "unknown_method_handler"]

# gRPC's own details for the case (grpc._server and the grpc.aio server say the same).
NOT_FOUND_DETAILS = "Method not found!"


async def _unimplemented_aio(
    requests: Any, context: grpc.aio.ServicerContext
) -> AsyncIterator[Any]:
    # An async generator, as a stream-response handler is: OpenTelemetry's aio server
    # interceptor, listed first as docs/grpc.md says, iterates whatever it wraps with
    # `async for`, and a coroutine here failed the call with UNKNOWN before ridtrace's
    # wrapper ran (no ids, no lines, no count).
    await context.abort(grpc.StatusCode.UNIMPLEMENTED, NOT_FOUND_DETAILS)
    yield  # pragma: no cover - abort always raises


def _unimplemented_sync(requests: Any, context: grpc.ServicerContext) -> Any:
    context.abort(grpc.StatusCode.UNIMPLEMENTED, NOT_FOUND_DETAILS)
    raise AssertionError("abort() returned")  # pragma: no cover - abort always raises


_AIO = grpc.stream_stream_rpc_method_handler(_unimplemented_aio)
_SYNC = grpc.stream_stream_rpc_method_handler(_unimplemented_sync)


def unknown_method_handler(*, aio: bool) -> grpc.RpcMethodHandler:
    """The raw (untraced) handler answering ``UNIMPLEMENTED`` for ``grpc.aio`` or a
    synchronous ``grpc.server``."""
    return _AIO if aio else _SYNC
