"""`export jaeger` writes a trace at a time: the document never exists whole in memory."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.jaeger import jaeger_traces, to_jaeger, write_jaeger
from ridtrace.testing.synth import SynthSpec, write_logs


def test_streamed_file_is_the_document_and_needs_less_memory_than_its_text(
    tmp_path: Path,
) -> None:
    # The whole document as dicts, then as one string, took six times the file's size
    # on top of the read: a 2 GB log's export needed tens of GB. Allocations traced by
    # tracemalloc are deterministic, unlike the process's RSS on a shared machine.
    write_logs(tmp_path, SynthSpec(requests=1500))
    events = load_events([str(tmp_path)]).events
    requests = build_requests(events)
    written = 0

    def count(text: str) -> None:
        nonlocal written
        written += len(text)

    tracemalloc.start()
    try:
        traces = write_jaeger(jaeger_traces(requests, events), count)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert traces == 1500
    assert peak < 2 * written, (peak, written)
    out = io.StringIO()
    write_jaeger(jaeger_traces(requests, events), out.write)
    assert out.getvalue() == json.dumps(to_jaeger(requests, events))
