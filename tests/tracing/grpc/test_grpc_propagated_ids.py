"""With nothing exported, a gRPC handler's call onward names the ids its lines carry.

Under a tracer that records nothing (no SDK, or one with no span processor), the
interceptor minted the ids the call's log lines carry while `propagate.inject` handed
on the caller's span, or nothing: the next service's lines named no line of this one.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import grpc.aio
import pytest
from opentelemetry import propagate
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NoOpTracerProvider

from ridtrace.tracing import current_context
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import serving

CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def _hop(request: bytes, context: Any) -> bytes:
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    ctx = current_context()
    assert ctx is not None
    return json.dumps({"sent": carrier.get("traceparent"), "trace_id": ctx.trace_id,
                       "span_id": ctx.span_id, "parent": ctx.parent_span_id}).encode()


@pytest.mark.parametrize("provider", [TracerProvider, NoOpTracerProvider],
                         ids=["no-processor", "no-sdk"])
@pytest.mark.parametrize("caller", [None, CALLER])
def test_a_handlers_call_onward_names_the_calls_own_ids(provider: Any, caller: str | None) -> None:
    interceptor = RequestTracingInterceptor(tracer_provider=provider())
    methods = {"Hop": grpc.unary_unary_rpc_method_handler(_hop)}
    handlers = (grpc.method_handlers_generic_handler("demo.Hop", methods),)

    async def go() -> dict[str, Any]:
        async with (
            serving(lambda s: s.add_generic_rpc_handlers(handlers),
                    interceptors=[interceptor]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            call = channel.unary_unary("/demo.Hop/Hop")
            metadata = (("traceparent", caller),) if caller else ()
            return dict(json.loads(await call(b"", metadata=metadata)))

    got = asyncio.run(go())
    assert got["sent"] is not None
    _, trace_id, span_id, flags = got["sent"].split("-")
    assert (got["trace_id"], got["span_id"]) == (trace_id, span_id)
    if caller:
        assert (trace_id, got["parent"]) == (caller.split("-")[1], caller.split("-")[2])
        assert flags == caller.split("-")[3]
    else:  # sampled (the SDK may set its random-trace-id flag too): the next service decides
        assert int(flags, 16) & 1

