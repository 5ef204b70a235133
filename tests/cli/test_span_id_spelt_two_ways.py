"""`trace` and `export jaeger` keep one span whole when its own lines spell its ids two
ways, as `analyze` does.

`analyze`'s lean pass groups a span's lines on its ids spelt one way
(`reading.hex_ids`); the views' read grouped them as logged. A Dynamo request whose
``span_id`` was lower case on "request received" and upper case on its closing lines
was two spans in `trace` (one of them "no end") and two Jaeger spans with one spanID,
though `analyze` counted one request; so with ``0x``, a trace id padded to 32 digits on
some lines, ridtrace's own lines, and a span whose log rotated between two spellings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_at_us, ts

_TRACE, _SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "a1b2c3d4e5f60718"
_SHORT_TRACE = "a3ce929d0e0e4736"


def _dynamo(at: float, message: str, span: str, trace: str, **fields: Any) -> str:
    return json.dumps({
        "time": ts(at), "level": "DEBUG", "target": "dynamo_llm::http::service::metrics",
        "message": message, "request_id": "A", "span_id": span, "span_name": "http-request",
        "trace_id": trace, "method": "POST", "uri": "/v1/chat/completions", **fields})


def _dynamo_request(path: Path, first: tuple[str, str], later: tuple[str, str]) -> None:
    """One Dynamo request: "request received" with ids `first`, its two closing lines
    with `later` (span id, trace id)."""
    path.write_text("\n".join([
        _dynamo(0.0, "request received", *first),
        _dynamo(0.5, "request completed", *later, status="success", elapsed_ms=500),
        _dynamo(0.501, "http response sent", *later, status="200", latency_ms="500"),
    ]) + "\n")


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "-q"])
    assert result.exit_code == 0, result.output
    return result.stdout


def _analyzed_spans(logs: Path) -> int:
    return int(json.loads(_run("analyze", str(logs), "--format", "json"))["summary"]["spans"])


def _jaeger(tmp_path: Path, logs: Path) -> list[dict[str, Any]]:
    out = tmp_path / "jaeger.json"
    _run("export", "jaeger", str(logs), "-o", str(out))
    return [s for t in json.loads(out.read_text())["data"] for s in t["spans"]]


_SPELLINGS = {
    "upper span id": ((_SPAN, _TRACE), (_SPAN.upper(), _TRACE)),
    "0x span id": ((_SPAN, _TRACE), ("0x" + _SPAN, _TRACE)),
    "padded trace id": (("0x" + "0" * 4 + _SPAN[4:], _SHORT_TRACE),
                        ("0" * 4 + _SPAN[4:], "0" * 16 + _SHORT_TRACE)),
}


@pytest.mark.parametrize("case", list(_SPELLINGS))
def test_a_dynamo_span_spelt_two_ways_is_one_span(tmp_path: Path, case: str) -> None:
    logs = tmp_path / "mc"
    logs.mkdir()
    first, later = _SPELLINGS[case]
    _dynamo_request(logs / "frontend.jsonl", first, later)
    assert _analyzed_spans(logs) == 1

    [request] = json.loads(_run("trace", "A", str(logs), "--format", "json"))["requests"]
    # One span, ended, shown as its first line spelt it.
    assert [s["span_id"] for s in request["spans"]] == [first[0]]
    assert request["span_id"] == first[0] and request["trace_id"] == first[1]
    assert len(request["events"]) == 3
    text = _run("trace", "A", str(logs))
    assert "no end" not in text

    [span] = _jaeger(tmp_path, logs)
    assert span["warnings"] is None and span["duration"] == 501_000
    assert span["operationName"] == "POST /v1/chat/completions"


def test_ridtrace_lines_spelt_otherwise_every_other_line(tmp_path: Path) -> None:
    # ridtrace's own schema: every other line upper case, a worker under each caller.
    logs = tmp_path / "rt"
    logs.mkdir()
    front, work = [], []
    for i in range(5):
        t0, trace, span, child = i * 1_000_000, f"{i + 1:032x}", f"a{i:015x}", f"b{i:015x}"
        caller = {"request_id": f"r{i}", "trace_id": trace, "span_id": span}
        upper = {**caller, "trace_id": trace.upper(), "span_id": span.upper()}
        worker = {"request_id": f"r{i}", "trace_id": trace, "span_id": child,
                  "parent_span_id": span}
        front += [rt_at_us(t0, "request.start", "frontend", path="/v1/chat/completions",
                           method="POST", **caller),
                  rt_at_us(t0 + 500_000, "request.end", "frontend", status=200, outcome="ok",
                           **upper)]
        work += [rt_at_us(t0 + 100_000, "worker.start", "worker", **worker),
                 rt_at_us(t0 + 400_000, "worker.end", "worker", outcome="ok",
                          **{**worker, "span_id": child.upper()})]
    (logs / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (logs / "worker.jsonl").write_text("\n".join(work) + "\n")
    assert _analyzed_spans(logs) == 10

    spans = _jaeger(tmp_path, logs)
    assert len(spans) == 10
    assert len({(s["traceID"], s["spanID"]) for s in spans}) == 10
    assert all(s["warnings"] is None for s in spans)
    workers = [s for s in spans if s["operationName"].startswith("worker")]
    assert len(workers) == 5 and all(s["references"] for s in workers)

    [request] = json.loads(_run("trace", "r3", str(logs), "--format", "json"))["requests"]
    assert [(s["side"], s["span_id"]) for s in request["spans"]] == [
        ("frontend", "a" + "3".zfill(15)), ("worker-0", "b" + "3".zfill(15))]


def test_a_span_rotated_between_two_spellings_is_one_span(tmp_path: Path) -> None:
    # Its file rotated between request.start (lower case) and request.end (upper case):
    # the two files' pieces of the span combine on the ids spelt one way.
    logs = tmp_path / "rot"
    logs.mkdir()
    ctx = {"request_id": "r1", "trace_id": _TRACE}
    (logs / "frontend.jsonl.1").write_text(rt_at_us(
        0, "request.start", "frontend", span_id=_SPAN, path="/v1/chat/completions",
        method="POST", **ctx) + "\n")
    (logs / "frontend.jsonl").write_text(rt_at_us(
        500_000, "request.end", "frontend", span_id=_SPAN.upper(), status=200, outcome="ok",
        **ctx) + "\n")
    assert _analyzed_spans(logs) == 1

    [span] = _jaeger(tmp_path, logs)
    assert span["spanID"] == _SPAN and span["duration"] == 500_000
    assert span["warnings"] is None
    [request] = json.loads(_run("trace", "r1", str(logs), "--format", "json"))["requests"]
    assert [s["span_id"] for s in request["spans"]] == [_SPAN]


@pytest.mark.parametrize("parent", ["00AB00CD00EF0012", "ab00cd00ef0012"])
def test_a_worker_linked_in_another_spelling_is_exported_on_its_callers_clock(
    tmp_path: Path, parent: str
) -> None:
    # Its caller logged upper case ids (or the worker dropped the leading zeros): linked
    # in the file, but the export estimated the clock on the ids as logged, and the
    # worker, 2 s ahead, started 1.9 s after its caller had ended.
    logs = tmp_path / "skewed"
    logs.mkdir()
    trace, span = "ABCDEF0123456789ABCDEF0123456789", "00AB00CD00EF0012"
    caller = {"request_id": "k1", "trace_id": trace, "span_id": span}
    (logs / "frontend.jsonl").write_text("\n".join([
        rt_at_us(0, "request.start", "frontend", **caller),
        rt_at_us(100_000, "request.end", "frontend", status=200, outcome="ok",
                 duration_ms=100.0, **caller),
    ]) + "\n")
    worker = {"request_id": "k1", "trace_id": trace.lower(), "span_id": "1" * 16,
              "parent_span_id": parent}
    (logs / "worker-1.jsonl").write_text("\n".join([
        rt_at_us(2_010_000, "worker.start", "worker", **worker),
        rt_at_us(2_090_000, "worker.end", "worker", outcome="ok", **worker),
    ]) + "\n")
    offsets = json.loads(_run("analyze", str(logs), "--format", "json"))["summary"][
        "clock_offsets_ms"]
    assert offsets == {str(logs / "worker-1.jsonl"): -2000.0}  # the middle of [-2010, -1990]
    spans = {s["spanID"]: s for s in _jaeger(tmp_path, logs)}
    front, work = spans[span.lower()], spans["1" * 16]
    assert [r["spanID"] for r in work["references"]] == [span.lower()]
    assert front["startTime"] <= work["startTime"]
    assert work["startTime"] + work["duration"] <= front["startTime"] + front["duration"]
