"""A shipper's entries whose first keys are Docker's json-file driver's (``log``, then
``stream``) but whose ``log`` has no newline: a parser took it off (Fluent Bit's file
output in its ``plain`` format, a Fluentd filter that chomps it). Read as Docker's, each
line was held as a part of a line still waiting for its last part: the whole file was one
bad line ("cut short"), the summary "none of its 1 lines is a log record"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ridtrace.testing.synth import SynthSpec, write_logs
from tests.cli.helpers import analyze_json
from tests.support.extras import ENGINES


@pytest.mark.parametrize("engine", ENGINES)
def test_entries_shaped_like_dockers_without_its_newline_are_read(
    tmp_path: Path, engine: str
) -> None:
    plain = tmp_path / "plain"
    write_logs(plain, SynthSpec(requests=80))
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    for path in plain.iterdir():
        (shipped / path.name).write_bytes(b"".join(
            json.dumps({"log": line.decode(), "stream": "stdout"}).encode() + b"\n"
            for line in path.read_bytes().splitlines()))
    want_code, want = analyze_json(str(plain))
    code, got = analyze_json(str(shipped), "--engine", engine)
    assert got["summary"]["bad_line_samples"] == []
    assert got["summary"]["lines"] == want["summary"]["lines"]
    assert [(f["kind"], f["span_id"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"]) for f in want["findings"]]
    assert code == want_code == 1



def test_an_entry_whose_stream_is_an_object_or_array_is_read(tmp_path: Path) -> None:
    # A `stream` that is a JSON object or array (a hand-edited or hostile entry) was a
    # dict key for the record's parts: the read stopped with "unhashable type", exit 4.
    sample = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
    entries = [{"log": line + "\n", "stream": "stderr", "time": "2026-10-02T14:00:00Z"}
               for line in sample.read_text().splitlines()]
    long = entries[6]["log"]  # the Unlinked error, cut in two as Docker cuts long lines
    entries[6:7] = [{**entries[6], "log": long[:100], "stream": {"fd": 2}},
                    {**entries[6], "log": long[100:], "stream": {"fd": 2}}]
    entries.append({"log": "a part", "stream": ["stdout"], "time": "2026-10-02T14:00:00Z"})
    log = tmp_path / "c-json.log"
    log.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    code, doc = analyze_json(str(log))
    summary = doc["summary"]
    assert (summary["lines"], summary["requests"], summary["unlinked"]) == (10, 3, 1)
    assert [s["line"] for s in summary["bad_line_samples"]] == [11]  # cut short
    assert code == 1
