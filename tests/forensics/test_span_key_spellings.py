"""The views' reads key a span by its ids spelt one way, as the lean pass (`analyze`) does.

The lean pass groups a span's lines on (trace_id, span_id) spelt by `reading.hex_ids`;
the events path (`span_sql.spans_select`, what `trace`, `export jaeger` and `audit`
build requests with) and the full per-file read (`scan.full_spans_sql`, the Dask
engine's full read) grouped them as logged: one span whose lines spelt its id two ways
(upper case, ``0x``, a trace id padded to 32 digits) was two requests there, one here.
They now group as the lean pass does and keep the first line's spelling to show.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.reading.parallel import read_all
from ridtrace.forensics.records.read import pieces_partial, read_partials, span_piece
from ridtrace.forensics.records.spans import build_requests, requests_from_partials
from tests.forensics.helpers import rt_at_us, ts

_TRACE, _SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "a1b2c3d4e5f60718"


def _dynamo(at: float, message: str, span: str, trace: str, **fields: Any) -> str:
    return json.dumps({
        "time": ts(at), "level": "DEBUG", "target": "dynamo_llm::http::service::metrics",
        "message": message, "request_id": "A", "span_id": span, "span_name": "http-request",
        "trace_id": trace, "method": "POST", "uri": "/v1/chat/completions", **fields})


def _logs(tmp_path: Path) -> list[str]:
    """A Dynamo request upper-casing its span id after its first line, one padding its
    trace id and prefixing its span id with 0x, and a ridtrace request whose end line is
    upper case and in the next rotated file."""
    short = _TRACE[16:]
    (tmp_path / "dynamo.jsonl").write_text("\n".join([
        _dynamo(0.0, "request received", _SPAN, _TRACE),
        _dynamo(0.5, "request completed", _SPAN.upper(), _TRACE, status="success"),
        _dynamo(0.501, "http response sent", _SPAN.upper(), _TRACE, status="200",
                latency_ms="500"),
        _dynamo(1.0, "request received", "b" * 16, short),
        _dynamo(1.5, "request completed", "0x" + "b" * 16, "0" * 16 + short,
                status="success"),
    ]) + "\n")
    ctx = {"request_id": "r1", "trace_id": "c" * 32}
    (tmp_path / "frontend.jsonl.1").write_text(
        rt_at_us(2_000_000, "request.start", "frontend", span_id="c" * 16, **ctx) + "\n")
    (tmp_path / "frontend.jsonl").write_text(rt_at_us(
        2_500_000, "request.end", "frontend", span_id="C" * 16, status=200, outcome="ok",
        **ctx) + "\n")
    return [str(tmp_path / n) for n in ("dynamo.jsonl", "frontend.jsonl.1", "frontend.jsonl")]


def _ids(frame: Any) -> list[tuple[str, str, int]]:
    return sorted(zip(frame["trace_id"], frame["span_id"], frame["lines"], strict=True))


def test_the_events_path_keys_spans_as_the_lean_pass(tmp_path: Path) -> None:
    paths = _logs(tmp_path)
    read = read_partials(expand_inputs(paths))
    lean = requests_from_partials(read.partials, read.files)
    full = build_requests(load_events(paths).events)

    assert len(lean) == len(full) == 3
    # Shown as the span's first line spelt its ids.
    assert _ids(full) == [(_TRACE, _SPAN, 3), (_TRACE[16:], "b" * 16, 2),
                          ("c" * 32, "c" * 16, 2)]
    assert full["closing"].tolist() == lean["closing"].tolist() == [True] * 3


def test_the_full_per_file_read_keys_spans_as_the_lean_pass(tmp_path: Path) -> None:
    # LogTable's full read (`full_spans_sql`): what `--engine dask` reads for the views.
    paths = _logs(tmp_path)
    sources = expand_inputs(paths)
    read = read_all(sources, lambda table, file_id: [span_piece(table, file_id)], lean=False)
    partials = [pieces_partial(pieces) for pieces in read.results]
    full = requests_from_partials(partials, [s.name for s in sources])

    assert _ids(full) == [(_TRACE, _SPAN, 3), (_TRACE[16:], "b" * 16, 2),
                          ("c" * 32, "c" * 16, 2)]
