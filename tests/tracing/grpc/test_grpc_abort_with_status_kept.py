"""grpc.aio: ``abort_with_status`` with a status that carries no trailing metadata keeps
what the handler set before, as grpc.aio does without ridtrace.

grpc.aio's abort treats empty trailing metadata as "keep what was set"; ridtrace's
context handed it its own ids instead of the empty metadata, so the handler's
``set_trailing_metadata`` (an error detail, a retry hint) never reached the client.
``abort`` had the rule already; ``abort_with_status`` had not.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import grpc
import grpc.aio

from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, metadata_dict, service_of, serving

CALL_TIMEOUT = 30.0


class _Status(collections.namedtuple("_Status", ("code", "details", "trailing_metadata")),
              grpc.Status):
    pass


async def _refuses(request: bytes, context: Any) -> bytes:
    context.set_trailing_metadata((("retry-after-ms", "250"),))
    await context.abort_with_status(_Status(grpc.StatusCode.UNAVAILABLE, "busy", ()))
    raise AssertionError("abort_with_status returned")


def test_abort_with_status_without_metadata_keeps_the_handlers_trailing_metadata(
    log_lines: LogLines,
) -> None:
    async def run() -> grpc.aio.AioRpcError:
        async with (
            serving(
                service_of({"Refuse": grpc.unary_unary_rpc_method_handler(_refuses)}),
                interceptors=[RequestTracingInterceptor()],
            ) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            try:
                await channel.unary_unary("/t.S/Refuse")(
                    b"", metadata=(("x-request-id", "caller-1"),), timeout=CALL_TIMEOUT
                )
            except grpc.aio.AioRpcError as error:
                await log_lines.wait_for(lambda lines: bool(lines.events("request.end")))
                return error
            raise AssertionError("the call succeeded")

    error = asyncio.run(run())
    assert (error.code(), error.details()) == (grpc.StatusCode.UNAVAILABLE, "busy")
    trailing = metadata_dict(error.trailing_metadata())
    (end,) = log_lines.events("request.end")
    assert trailing == {
        "retry-after-ms": ["250"],
        "x-server-request-id": [end["request_id"]],
        "x-request-id": ["caller-1"],
    }
    assert end["grpc_status"] == "UNAVAILABLE"
