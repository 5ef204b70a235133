"""KServe v2 through NVIDIA's tritonclient (the official client): one identity per request
inside a ModelStreamInfer stream, echo on stream responses, the server id in the response
parameters, hostile body ids flagged, and ids on gRPC's own exception line and the WARN."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest
import tritonclient.grpc.aio as triton
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tritonclient.grpc import service_pb2, service_pb2_grpc

from ridtrace.tracing import TracingSettings
from ridtrace.tracing.deprecation import reset_warnings
from ridtrace.tracing.grpc import RequestTracingInterceptor, echo_client_id
from ridtrace.tracing.logs import configure_logging
from tests.tracing.grpc.conftest import LogLines, serving

DOC = Path(__file__).resolve().parents[3] / "docs" / "grpc.md"
PARAM = "ridtrace_request_id"
HOSTILE = "evil\r\n" + "x" * 10_000


def test_the_triton_doc_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    (code,) = [b for b in blocks if b.startswith("# triton_stream_example.py")]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    printed = [line.split() for line in done.stdout.splitlines()]
    assert [p[0] for p in printed] == ["as-0", "as-1", "as-2"]
    assert [p[2] for p in printed] == ["0", "1", "2"]
    server_ids = [p[1] for p in printed]
    assert len(set(server_ids)) == 3
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    inferring = [(x["request_id"], x["x_request_id"]) for x in lines if x["message"] == "inferring"]
    assert inferring == list(zip(server_ids, ["as-0", "as-1", "as-2"], strict=True))


def _infer(request: Any) -> Any:
    if request.model_name == "crash":
        raise RuntimeError("model crashed")
    output = service_pb2.ModelInferResponse.InferOutputTensor(name="OUT", datatype="INT32", shape=[1])
    return service_pb2.ModelInferResponse(
        model_name=request.model_name, outputs=[output],
        raw_output_contents=list(request.raw_input_contents),
    )


class _Inference(service_pb2_grpc.GRPCInferenceServiceServicer):  # type: ignore[misc]
    @echo_client_id(request_id_parameter=PARAM)
    async def ModelInfer(self, request: Any, context: Any) -> Any:
        return _infer(request)

    @echo_client_id(request_id_parameter=PARAM)
    async def ModelStreamInfer(self, request_iterator: Any, context: Any) -> Any:
        async for request in request_iterator:
            yield service_pb2.ModelStreamInferResponse(infer_response=_infer(request))


def _tensor(value: int) -> Any:
    tensor = triton.InferInput("IN", [1], "INT32")
    tensor.set_data_from_numpy(np.array([value], dtype=np.int32))
    return tensor


async def _with_server(body: Any, provider: TracerProvider | None = None) -> Any:
    interceptor = RequestTracingInterceptor(settings=TracingSettings(tracer_provider=provider))

    def add(server: grpc.aio.Server) -> None:
        service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(_Inference(), server)

    async with serving(add, interceptors=[interceptor]) as target:
        client = triton.InferenceServerClient(target)
        try:
            return await body(client)
        finally:
            await client.close()


def test_each_request_of_a_stream_has_its_own_identity_span_and_lines(log_lines: LogLines) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ids = ["as-0", "as-1", HOSTILE, "as-3"]

    async def body(client: Any) -> list[Any]:
        async def requests() -> Any:
            for i, rid in enumerate(ids):
                yield {"model_name": "echo", "inputs": [_tensor(i)], "request_id": rid}

        return [
            result.get_response()
            async for result, error in client.stream_infer(requests(), headers={"x-request-id": "whole-stream"})
        ]

    responses = asyncio.run(_with_server(body, provider))
    # The echo is the protocol's: verbatim, even for the hostile id.
    assert [r.id for r in responses] == ids
    server_ids = [r.parameters[PARAM].string_param for r in responses]
    assert len(set(server_ids)) == 4

    (stream_end,) = [x for x in log_lines.events("request.end") if "stream_request_id" not in x]
    assert stream_end["stream_requests"] == 4 and stream_end["x_request_id"] == "whole-stream"
    starts = log_lines.events("request.start", stream_request_id=stream_end["request_id"])
    ends = log_lines.events("request.end", stream_request_id=stream_end["request_id"])
    assert [x["request_id"] for x in starts] == [x["request_id"] for x in ends] == server_ids
    # Its own id, or the stream's when its own is refused: never the hostile one.
    assert [x["x_request_id"] for x in ends] == ["as-0", "as-1", "whole-stream", "as-3"]
    assert [x.get("x_request_id_rejected") for x in starts] == [None, None, True, None]
    assert not any(b"evil" in raw for raw in log_lines.raw_lines)

    spans = {s.attributes["request_id"]: s for s in exporter.get_finished_spans()}
    stream_span = spans[stream_end["request_id"]]
    for server_id in server_ids:
        item = spans[server_id]
        assert item.parent is not None and item.parent.span_id == stream_span.context.span_id
        assert item.context.trace_id == stream_span.context.trace_id
        assert item.attributes["stream_request_id"] == stream_end["request_id"]
    # The refused body id is flagged on its request's span too, as on a unary call's.
    flags = [spans[server_id].attributes.get("x_request_id_rejected") for server_id in server_ids]
    assert flags == [None, None, True, None]


def test_unary_hostile_body_id_is_flagged_not_used(log_lines: LogLines) -> None:
    async def body(client: Any) -> Any:
        result = await client.infer("echo", [_tensor(7)], request_id=HOSTILE)
        return result.get_response()

    response = asyncio.run(_with_server(body))
    assert response.id == HOSTILE  # KServe requires the echo
    (end,) = log_lines.events("request.end")
    assert end["x_request_id_rejected"] is True and "x_request_id" not in end
    assert response.parameters[PARAM].string_param == end["request_id"]
    assert not any(b"evil" in raw for raw in log_lines.raw_lines)


@pytest.fixture
def stdlib_lines() -> LogLines:
    sink = LogLines()
    configure_logging(sink, service="grpc-test", level="DEBUG", intercept_stdlib=True)
    return sink


def test_grpc_exception_line_and_deprecation_warn_carry_the_ids(stdlib_lines: LogLines) -> None:
    reset_warnings()

    async def body(client: Any) -> None:
        with pytest.raises(Exception, match="model crashed"):
            await client.infer(
                "crash", [_tensor(1)], request_id="body-1",
                headers={"x-request-id": "crash-1", "x-dynamo-request-id": "old"},
            )

    asyncio.run(_with_server(body))
    (end,) = stdlib_lines.events("request.end")
    (warn,) = [x for x in stdlib_lines.lines if x.get("event") == "deprecated_header"]
    assert (warn["request_id"], warn["x_request_id"]) == (end["request_id"], "crash-1")
    (crash,) = [x for x in stdlib_lines.lines if "raised by servicer method" in x["message"]]
    assert (crash["request_id"], crash["x_request_id"]) == (end["request_id"], "crash-1")
    assert crash["trace_id"] == end["trace_id"] and crash["level"] == "ERROR"
