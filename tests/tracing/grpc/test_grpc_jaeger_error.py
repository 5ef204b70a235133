"""`ridtrace export jaeger` flags a gRPC call as an error as its live span was.

A call whose deadline passed is `cancelled` on its lines, but its span is an error
(`DEADLINE_EXCEEDED`, OpenTelemetry's rpc conventions; docs/grpc.md): the file built
from the lines showed it as a success, missed by a Jaeger search for `error=true`.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ridtrace import annotate_request, configure_logging
from ridtrace.cli.main import main
from tests.tracing.grpc.conftest import traced_channel


def test_an_exported_calls_error_flag_is_its_live_spans(tmp_path: Path) -> None:
    log = tmp_path / "grpc.jsonl"
    configure_logging(log, service="grpc-test")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    async def slow(request: bytes, context: Any) -> bytes:
        await asyncio.Event().wait()  # until the deadline cancels it
        return b""

    async def slow_annotated(request: bytes, context: Any) -> bytes:
        # An app's field named like HTTP's method, on a line that has none of its own.
        annotate_request(method="beam_search")
        await asyncio.Event().wait()
        return b""

    async def boom(request: bytes, context: Any) -> bytes:
        raise ValueError("engine fell over")

    async def fine(request: bytes, context: Any) -> bytes:
        return b"ok"

    def add(server: grpc.aio.Server) -> None:
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("qa.J", {
            name: grpc.unary_unary_rpc_method_handler(handler)
            for name, handler in (("Slow", slow), ("SlowAnnotated", slow_annotated),
                                  ("Boom", boom), ("Fine", fine))}),))

    async def calls() -> dict[str, grpc.StatusCode]:
        got = {}
        async with traced_channel(add, provider) as channel:
            for name, timeout in (("Slow", 0.3), ("SlowAnnotated", 0.3), ("Boom", 10.0),
                                  ("Fine", 10.0)):
                try:
                    await channel.unary_unary(f"/qa.J/{name}")(
                        b"", metadata=(("x-request-id", name.lower()),), timeout=timeout)
                    got[name] = grpc.StatusCode.OK
                except grpc.aio.AioRpcError as exc:
                    got[name] = exc.code()
        return got

    assert asyncio.run(calls()) == {
        "Slow": grpc.StatusCode.DEADLINE_EXCEEDED, "SlowAnnotated": grpc.StatusCode.DEADLINE_EXCEEDED,
        "Boom": grpc.StatusCode.UNKNOWN, "Fine": grpc.StatusCode.OK}
    deadline = time.monotonic() + 10
    while sum('"request.end"' in line for line in log.read_text().splitlines()) < 4:
        assert time.monotonic() < deadline, "the calls' request.end lines never came"
        time.sleep(0.01)
    live = {str((s.attributes or {})["x_request_id"]): s.status.status_code is StatusCode.ERROR
            for s in exporter.get_finished_spans()}
    out = tmp_path / "jaeger.json"
    done = CliRunner().invoke(main, ["export", "jaeger", str(log), "-o", str(out), "-q"])
    assert done.exit_code == 0, done.output
    exported = {}
    for trace in json.loads(out.read_text())["data"]:
        for span in trace["spans"]:
            tags = {t["key"]: t["value"] for t in span["tags"]}
            exported[tags["x_request_id"]] = tags.get("error") is True
    assert live == {"slow": True, "slowannotated": True, "boom": True, "fine": False}
    assert exported == live
