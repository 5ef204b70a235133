"""A worker that spells its caller's trace and span ids otherwise than the caller's log is
still that caller's child.

Other systems log hex ids upper case, B3/Jaeger 64-bit trace ids go in a 128-bit
field as 32 digits whose high 16 are zeros, or as 16, and an id printed as a number
loses its leading zeros (``0x`` + digits, from Python's ``hex()``). `analyze` keyed and linked spans
by the ids as logged: the worker span named no caller it could find, so it was a second
holder of the request id at once, a false duplicate_in_flight (exit 1), on both engines
and live.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.forensics.helpers import engine_report, follow_as_written, rt_at_us, rt_request
from tests.support.extras import ENGINES

SAMPLE = Path(__file__).parent / "data" / "dynamo-jsonl-sample.jsonl"


def _spellings(i: int) -> dict[str, tuple[str, str, str, str]]:
    """Case `i`'s (caller's trace_id, caller's span_id, the worker's trace_id, its
    parent_span_id), by name: one id each, spelt two ways."""
    trace, span = f"4bf92f3577b34da6a3ce929d0e0e47{i:02x}", f"a1b2c3d4e5f607{i:02x}"
    short = f"a3ce929d0e0e47{i:02x}"
    # Ids with leading zeros, which a number printed drops (Python's hex(), Go's %#x).
    zeros, zero_span = "000" + trace[3:], "00" + span[2:]
    return {
        "upper caller": (trace.upper(), span.upper(), trace, span),
        "upper worker": (trace, span, trace.upper(), span.upper()),
        "64-bit padded caller": ("0" * 16 + short, span, short, span),
        "64-bit padded upper worker": (short, span, "0" * 16 + short.upper(), span),
        "hex() worker": (zeros, zero_span, "0x" + zeros.lstrip("0"), "0x" + zero_span[2:]),
        "short upper caller": (zeros.lstrip("0").upper(), "0X" + zero_span[2:].upper(),
                               zeros, zero_span),
    }


def _lines(i: int, caller_trace: str, caller_span: str, trace: str,
           parent: str) -> list[tuple[int, str, str]]:
    """(µs, file, line): a frontend request of 500 ms and its worker span inside it, the
    `i`th second after T0, holding request id ``r{i}``."""
    t0, rid = i * 1_000_000, f"r{i}"
    caller = {"request_id": rid, "trace_id": caller_trace, "span_id": caller_span}
    worker = {"request_id": rid, "trace_id": trace, "span_id": f"b{i:015x}",
              "parent_span_id": parent}
    return [
        (t0, "frontend.jsonl", rt_at_us(t0, "request.start", "frontend", **caller)),
        (t0 + 100_000, "worker-8101.jsonl",
         rt_at_us(t0 + 100_000, "request.start", "worker", **worker)),
        (t0 + 400_000, "worker-8101.jsonl", rt_at_us(t0 + 400_000, "worker.end", "worker",
                                                     outcome="ok", fp_in="in", fp_out="out",
                                                     **worker)),
        (t0 + 400_000, "worker-8101.jsonl", rt_at_us(t0 + 400_000, "request.end", "worker",
                                                     status=200, outcome="ok", **worker)),
        (t0 + 500_000, "frontend.jsonl", rt_at_us(t0 + 500_000, "request.end", "frontend",
                                                  status=200, outcome="ok", fp_in="in",
                                                  fp_out="out", **caller)),
    ]


def _every_spelling() -> list[tuple[int, str, str]]:
    """Each spelling case once, each its own request, in time order."""
    return [line for i, name in enumerate(_spellings(0))
            for line in _lines(i, *_spellings(i)[name])]


def _write(directory: Path, lines: list[tuple[int, str, str]]) -> None:
    for name in {name for _, name, _ in lines}:
        (directory / name).write_text("".join(line + "\n" for _, n, line in lines if n == name))


def _dynamo_upper_worker(directory: Path) -> None:
    """The sample's request received/completed lines of the frontend (http-request) and
    of the worker (handle_payload), the worker's ids upper case."""
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()[1:5]]
    front = [r for r in rows if r["span_name"] == "http-request"]
    worker = [{**r, "trace_id": r["trace_id"].upper(), "parent_id": r["parent_id"].upper()}
              for r in rows if r["span_name"] == "handle_payload"]
    assert len(front) == len(worker) == 2
    (directory / "dynamo-frontend.jsonl").write_text("".join(json.dumps(r) + "\n" for r in front))
    (directory / "dynamo-worker.jsonl").write_text("".join(json.dumps(r) + "\n" for r in worker))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_worker_spelling_ids_otherwise_is_its_callers_child(
    request: pytest.FixtureRequest, tmp_path: Path, engine: str,
) -> None:
    # Six ridtrace cases and a Dynamo one, each its own request, read at once (cheap).
    _write(tmp_path, _every_spelling())
    _dynamo_upper_worker(tmp_path)
    doc = engine_report(request, engine, tmp_path)
    # Each worker linked to its caller: seven requests of two spans each.
    assert (doc["findings"], doc["summary"]["requests"], doc["summary"]["spans"]) == (
        [], 7, 14)
    if engine == "dask":
        assert doc == engine_report(request, "pandas", tmp_path)


def test_a_caller_read_from_a_joined_line_is_linked_too(
    request: pytest.FixtureRequest, tmp_path: Path,
) -> None:
    # Two records on one line (`cat` of a part without its last newline) are rescued in
    # Python and the file's spans rebuilt from its events: those ids were as logged.
    lines = _lines(0, *_spellings(0)["upper caller"])
    _write(tmp_path, lines)
    front = [line for _, name, line in lines if name == "frontend.jsonl"]
    (tmp_path / "frontend.jsonl").write_text(" ".join(front) + "\n")
    doc = engine_report(request, "pandas", tmp_path)
    assert (doc["findings"], doc["summary"]["requests"], doc["summary"]["bad_lines"]) == (
        [], 1, 0)


def test_ids_spelt_one_way_still_tell_two_callers_apart(
    request: pytest.FixtureRequest, tmp_path: Path,
) -> None:
    # Two callers of one trace (one logged upper case) holding r1 at once: a duplicate.
    trace, span, _, _ = _spellings(0)["upper worker"]
    lines = (rt_request(span.upper(), "r1", 0, 2, trace=trace.upper())
             + rt_request("c" * 16, "r1", 1, 3, trace=trace))
    (tmp_path / "frontend.jsonl").write_text("\n".join(sorted(
        lines, key=lambda line: json.loads(line)["time"])) + "\n")
    doc = engine_report(request, "pandas", tmp_path)
    assert [f["kind"] for f in doc["findings"]] == ["duplicate_in_flight"]


def test_follow_links_a_worker_spelling_ids_otherwise_to_its_caller(tmp_path: Path) -> None:
    # The live rules link spans by the same ids: each line written, then a poll.
    found = follow_as_written(tmp_path, [(t / 1e6, name, line)
                                         for t, name, line in _every_spelling()])
    assert found == []


def test_the_read_and_the_views_spell_ids_alike() -> None:
    # `analyze` spells ids in SQL, `trace` and `audit` in pandas: one spelling each.
    import duckdb
    import pandas as pd

    from ridtrace.forensics.reading.hex_ids import hex_id
    from ridtrace.forensics.views.trace_spellings import _span_spelling, _trace_spelling

    logged = ["00f067aa0ba902b7", "0xF067AA0BA902B7", "f067aa0ba902b7", "0X00f067aa0ba902b7",
              "0" * 16 + "f067aa0ba902b7", "4BF92F3577B34DA6A3CE929D0E0E4736", "0x1", "0",
              "0x", "", "trace Two", "0x" + "f" * 40, "G067AA0BA902B7", "A1", "0xA1", None]
    con = duckdb.connect()
    con.register("ids", pd.DataFrame({"v": pd.Series(logged, dtype=object)}))
    for trace, views in ((False, _span_spelling), (True, _trace_spelling)):
        got = [r[0] for r in con.sql(f"SELECT {hex_id('v', trace=trace)} FROM ids").fetchall()]
        assert got == views(pd.Series(logged, dtype=object)).tolist(), trace
    spans = [r[0] for r in con.sql(f"SELECT {hex_id('v')} FROM ids").fetchall()]
    assert spans[:5] == ["00f067aa0ba902b7"] * 5
    assert spans[5:] == ["4bf92f3577b34da6a3ce929d0e0e4736", "0000000000000001", "0",
                         "0x", "", "trace Two", "f" * 40, "G067AA0BA902B7",
                         # A short name is only lower cased; with 0x it is a number.
                         "a1", "00000000000000a1", None]
    traces = [r[0] for r in con.sql(f"SELECT {hex_id('v', trace=True)} FROM ids").fetchall()]
    assert traces[:5] == ["00f067aa0ba902b7"] * 5
