"""`ridtrace trace` says why a request was dispatched again.

A frontend logs each attempt (`dispatch.attempt`, its `worker`) and each attempt it gave
up (`dispatch.retry`: `worker`, `reason`, `marked_down`). The trace listed both events
by name only: which worker refused, and why, had to be read in the log file.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner
from rich.cells import cell_len

from ridtrace.cli.main import main
from ridtrace.forensics.views.text_fit import words_within
from tests.forensics.helpers import rt

_IDS = {"request_id": "r-a1", "trace_id": "a1" * 16, "span_id": "a1" * 8}


def _log(tmp_path: Path) -> Path:
    def at(ms: int) -> str:
        return f"2026-11-29T10:00:01.{ms:03d}000Z"

    lines = [
        rt("request.start", time=at(0), method="POST", path="/v1/completions", **_IDS),
        rt("dispatch.attempt", time=at(1), worker="http://w1:8101", attempt=1, **_IDS),
        rt("dispatch.retry", time=at(10), level="WARN", worker="http://w1:8101", attempt=1,
           reason="conflict", marked_down=False, error="worker refused", **_IDS),
        rt("dispatch.attempt", time=at(11), worker="http://w2:8102", attempt=2, **_IDS),
        rt("dispatch.retry", time=at(20), level="WARN", worker="http://w2:8102", attempt=2,
           reason="connect", marked_down=True, error="connection refused", **_IDS),
        rt("request.end", time=at(30), method="POST", route="/v1/completions",
           duration_ms=30.0, attempts=2, status=502, outcome="error", error="no worker",
           **_IDS),
    ]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    return log


def _trace(log: Path, *args: str, width: int = 100) -> str:
    got = CliRunner().invoke(main, ["trace", "r-a1", str(log), *args],
                             env={"COLUMNS": str(width)})
    assert got.exit_code == 0, got.output
    return got.output


def _detail_under(out: list[str], at: int) -> str:
    """The detail printed under line `at`: the indented lines after it, joined (a long
    one is broken between its parts)."""
    lines = []
    for line in out[at + 1:]:
        if not line.startswith(" " * 20):
            break
        lines.append(line.strip())
    return " ".join(lines)


def test_the_text_names_each_attempts_worker_and_each_retrys_reason(tmp_path: Path) -> None:
    out = _trace(_log(tmp_path)).splitlines()
    retries = [i for i, line in enumerate(out) if "dispatch.retry" in line]
    # And the refusal each logged (`error`), as a failed request's end shows its error.
    assert [_detail_under(out, i) for i in retries] == [
        "worker http://w1:8101, reason conflict, error: worker refused",
        "worker http://w2:8102, reason connect, marked down, error: connection refused",
    ]
    attempts = [i for i, line in enumerate(out) if "dispatch.attempt" in line]
    assert [out[i + 1].strip() for i in attempts] == ["worker http://w1:8101",
                                                      "worker http://w2:8102"]
    ends = [i for i, line in enumerate(out) if "request.end" in line]
    assert [_detail_under(out, i) for i in ends] == ["error: no worker"]
    # No other event gets a line of its own.
    assert sum(line.lstrip().startswith("worker ") for line in out) == 4


def test_a_narrow_terminal_breaks_the_detail_between_its_parts(tmp_path: Path) -> None:
    out = _trace(_log(tmp_path), width=40).splitlines()
    assert all(len(line) <= 40 for line in out)
    shown = " ".join(line.strip() for line in out)
    assert "worker http://w2:8102, reason connect, marked down" in shown


_REFUSAL = ('worker refused duplicate id: {"error":{"message":"request id \'r-a1\' is already '
            'in flight","type":"conflict","param":null,"code":null}}')


def test_a_long_refusal_stays_under_its_event_broken_between_words(tmp_path: Path) -> None:
    # One part longer than the line took the indent off every part (to column 0), and
    # the terminal broke it anywhere ("already in \nflight").
    log = _log(tmp_path)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    records[2]["error"] = _REFUSAL  # the first retry's
    log.write_text("".join(json.dumps(record) + "\n" for record in records))
    for width in (60, 100):
        out = _trace(log, width=width).splitlines()
        at = next(i for i, line in enumerate(out) if "dispatch.retry" in line)
        below = []
        for line in out[at + 1:]:
            if not line.startswith(" " * 20):
                break
            if "frontend.jsonl" not in line:  # the event's file:line, on a narrow line
                below.append(line)
        # Every break is at a space, but at 60 columns one word is cut (at its line's end).
        expected = f"worker http://w1:8101, reason conflict, error: {_REFUSAL}"
        if width == 100:
            assert " ".join(line.strip() for line in below) == expected
        assert "".join(below).replace(" ", "") == expected.replace(" ", "")
        assert all(len(line) <= width and line[26] != " " for line in below), below


def test_json_and_csv_carry_the_detail(tmp_path: Path) -> None:
    log = _log(tmp_path)
    doc = json.loads(_trace(log, "--format", "json"))
    details = [(e["event"], e["detail"]) for e in doc["requests"][0]["events"]]
    assert details == [
        ("request.start", None),
        ("dispatch.attempt", "worker http://w1:8101"),
        ("dispatch.retry", "worker http://w1:8101, reason conflict, error: worker refused"),
        ("dispatch.attempt", "worker http://w2:8102"),
        ("dispatch.retry",
         "worker http://w2:8102, reason connect, marked down, error: connection refused"),
        ("request.end", "error: no worker"),
    ]
    rows = list(csv.DictReader(io.StringIO(_trace(log, "--format", "csv"))))
    assert [(r["event"], r["detail"]) for r in rows] == [(e, d or "") for e, d in details]


def test_a_word_cut_to_fit_keeps_each_character_whole() -> None:
    # Cut by code point, an emoji joined by ZWJ lost its parts across two lines.
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f466"
    word = "x" + family * 3 + "e\u0301" * 4
    pieces = words_within(word, 3)
    assert "".join(pieces) == word
    assert all(cell_len(piece) <= 3 for piece in pieces)
    assert all(not piece.startswith(("\u200d", "\u0301")) for piece in pieces)
    assert sum(piece.count(family) for piece in pieces) == 3


def test_a_refused_foreign_chunk_names_its_request_and_worker(tmp_path: Path) -> None:
    # `analyze`'s finding names both; `trace`, the one view of the request, showed the
    # bare event, the one that must never happen.
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join([
        rt("request.start", time="2026-11-29T10:00:01.000000Z", **_IDS),
        rt("stream.foreign_chunk", time="2026-11-29T10:00:01.010000Z", level="ERROR",
           worker="http://w1:8101", chunk_request_id="someone-else", **_IDS),
        rt("request.end", time="2026-11-29T10:00:01.020000Z", status=502, outcome="error",
           **_IDS),
    ]) + "\n")
    doc = json.loads(_trace(log, "--format", "json"))
    (foreign,) = [e for e in doc["requests"][0]["events"] if e["event"] == "stream.foreign_chunk"]
    assert foreign["detail"] == "chunk for request someone-else from worker http://w1:8101"
