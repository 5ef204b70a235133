"""A span whose later lines are read before its first ones keeps its real start.

``--from-start`` over a rotated log reads the older part (``app.jsonl.1``, or the copy
a copy-and-truncate made) and the live file a chunk a poll each, side by side: the end
of a request in flight at the rotation is read from the live file before its start is
reached in the older part. The span was known from its end line only, its start taken
from it for good: two callers that held one id together looked one after the other
(the duplicate lost), or the second was taken for the first (the finding named it).
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.rules.report import analyze, report_json
from tests.forensics.helpers import rt, rt_request, ts

Key = tuple[str, str, str]


def _key(finding: dict[str, object]) -> Key:
    return (str(finding["kind"]), str(finding["span_id"]), str(finding["request_id"]))


def _rotated_mid_incident(directory: Path, filler: int) -> None:
    """Callers a1 and b2 held id 7 together; the log rotated while both were in flight:
    their starts (after `filler` other requests) in ``frontend.jsonl.1``, their ends in
    ``frontend.jsonl``."""
    first, second = rt_request("a1", "7", 10.0, 12.0), rt_request("b2", "7", 10.5, 12.5)
    older = [line for n in range(filler)
             for line in rt_request(f"f{n}", f"r{n}", n / 10, n / 10 + 0.05)]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "frontend.jsonl.1").write_text(
        "".join(line + "\n" for line in [*older, first[0], second[0]]))
    (directory / "frontend.jsonl").write_text(
        "".join(line + "\n" for line in [first[1], second[1]]))


def _live(directory: Path, max_bytes: int) -> list[Key]:
    follower = Follower([str(directory)], FollowSettings(from_start=True, max_bytes=max_bytes))
    found: list[Key] = []
    try:
        follower.start()
        follower.run(lambda f: found.append(_key(f)) is None, stop=lambda: True)
        assert follower.polls > (3 if max_bytes < 1 << 20 else 0)
    finally:
        follower.close()
    return found


def test_a_span_ended_in_the_live_file_keeps_its_start_from_the_older_part(
    tmp_path: Path,
) -> None:
    _rotated_mid_incident(tmp_path, filler=60)
    doc = report_json(analyze(load_events([str(tmp_path)], lean=True)))
    batch = [_key(f) for f in doc["findings"] if f["severity"] == "error"]
    assert batch == [("duplicate_in_flight", "a1", "7")]
    assert _live(tmp_path, 64 << 20) == batch  # one poll: every line in one batch
    assert _live(tmp_path, 8192) == batch  # the older part read behind the live file


def test_a_duplicate_waits_for_the_older_part_to_name_the_first_caller(
    tmp_path: Path,
) -> None:
    # a1's start is in the older part, b2 was served by another frontend: read from a1's
    # end alone, b2 looked the first holder of 7, and the live finding named it.
    _rotated_mid_incident(tmp_path, filler=60)
    older = tmp_path / "frontend.jsonl.1"
    older.write_text("".join(line for line in older.read_text().splitlines(keepends=True)
                             if '"span_id": "b2"' not in line))
    live = tmp_path / "frontend.jsonl"
    live.write_text("".join(line for line in live.read_text().splitlines(keepends=True)
                            if '"span_id": "b2"' not in line))
    (tmp_path / "frontend-2.jsonl").write_text(
        "".join(line + "\n" for line in rt_request("b2", "7", 10.5, 12.5)))
    doc = report_json(analyze(load_events([str(tmp_path)], lean=True)))
    batch = [_key(f) for f in doc["findings"] if f["severity"] == "error"]
    assert batch == [("duplicate_in_flight", "a1", "7")]
    assert _live(tmp_path, 8192) == batch


class _Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_whose_end_is_in_the_live_file_read_behind_is_not_in_flight(
    tmp_path: Path,
) -> None:
    # a1's start is in the renamed part, its end (10.3) in the live file past the
    # first chunk; b2's worker took id 7 at 10.6. The part was read to its end, and
    # once polls had taken longer than the settle time it counted as caught up to
    # what the others showed: a1 looked in flight at 10.6, a false duplicate.
    first, second = rt_request("a1", "7", 10.0, 10.3), rt_request("b2", "7", 10.5, 11.0)
    others = [line for n in range(80)
              for line in rt_request(f"f{n}", f"r{n}", 10.01 + n / 500, 10.02 + n / 500)]
    (tmp_path / "frontend.jsonl.1").write_text(first[0] + "\n")
    (tmp_path / "frontend.jsonl").write_text(
        "".join(line + "\n" for line in [*others, first[1], *second]))
    ctx = {"request_id": "7", "trace_id": f"{'b2':0>32}", "span_id": "w2",
           "parent_span_id": "b2", "service": "worker"}
    (tmp_path / "worker.jsonl").write_text(
        rt("worker.start", time=ts(10.6), **ctx) + "\n"
        + rt("worker.end", time=ts(10.9), outcome="ok", **ctx) + "\n")
    doc = report_json(analyze(load_events([str(tmp_path)], lean=True)))
    assert [f for f in doc["findings"] if f["severity"] == "error"] == []
    ticks = _Ticks()
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True, max_bytes=8192),
                        ticks=ticks)
    found: list[Key] = []
    try:
        follower.start()
        more = True
        while more:  # a backlog: each poll takes longer than the settle time
            batch, more = follower.poll()
            found.extend(map(_key, batch))
            ticks.now += 2.0
        found.extend(map(_key, follower.finish()))
        assert follower.polls > 3
    finally:
        follower.close()
    assert found == []


def test_a_crossed_caller_keeps_the_id_of_its_later_lines(tmp_path: Path) -> None:
    # Under the legacy policy a1's start logs a minted id, its later lines the client's
    # (7). Its end, read first from the live file, waited for the older part; reading
    # its start there re-keyed it to the minted id, which the finding then reported.
    older = [line for n in range(60)
             for line in rt_request(f"f{n}", f"r{n}", n / 10, n / 10 + 0.05)]
    ctx = {"trace_id": f"{'a1':0>32}", "span_id": "a1", "x_request_id": "7"}
    older.append(rt("request.start", time=ts(10.0), request_id="minted-a1", method="POST",
                    path="/v1/chat/completions", **ctx))
    (tmp_path / "frontend.jsonl.1").write_text("".join(line + "\n" for line in older))
    (tmp_path / "frontend.jsonl").write_text(
        rt("request.end", time=ts(10.5), request_id="7", status=200, outcome="ok",
           fp_in="in-a", fp_out="out-b", **ctx) + "\n")
    work = []
    for span, caller, rid, fp_in, fp_out in (("wa", "a1", "7", "in-a", "out-a"),
                                             ("wb", "b2", "8", "in-b", "out-b")):
        wctx = {"request_id": rid, "trace_id": f"{caller:0>32}", "span_id": span,
                "parent_span_id": caller, "service": "worker", "fp_in": fp_in}
        work += [rt("worker.start", time=ts(10.1), **wctx),
                 rt("worker.end", time=ts(10.4), outcome="ok", fp_out=fp_out, **wctx)]
    (tmp_path / "worker.jsonl").write_text("".join(line + "\n" for line in sorted(work)))
    doc = report_json(analyze(load_events([str(tmp_path)], lean=True)))
    crossed = [_key(f) for f in doc["findings"] if f["kind"] == "crossed_stream"]
    assert crossed == [("crossed_stream", "a1", "7")]
    assert _live(tmp_path, 8192) == crossed


def test_a_worker_output_whose_start_is_read_last_still_proves_a_crossed_stream(
    tmp_path: Path,
) -> None:
    # wb produced out-b for b2, a1 was delivered it. wb's start (its fp_in) is in the
    # rotated part of its worker's log, its end (its fp_out) in the live file, read
    # first: the output was taken as produced only on the end line, with both
    # fingerprints, and a1's crossed stream was never printed.
    def worker_line(event: str, span: str, caller: str, at: float, **fields: object) -> str:
        return rt(event, time=ts(at), request_id=f"id-{caller}", trace_id=f"{caller:0>32}",
                  span_id=span, parent_span_id=caller, service="worker", **fields)

    older = [worker_line("worker.start", f"wf{n}", f"f{n}", n / 10, fp_in=f"in-f{n}")
             for n in range(100)]
    older.append(worker_line("worker.start", "wb", "b2", 10.1, fp_in="in-b"))
    (tmp_path / "worker-1.jsonl.1").write_text("".join(line + "\n" for line in older))
    (tmp_path / "worker-1.jsonl").write_text(
        worker_line("worker.end", "wb", "b2", 10.4, outcome="ok", fp_out="out-b") + "\n")
    (tmp_path / "worker-2.jsonl").write_text("".join(line + "\n" for line in [
        worker_line("worker.start", "wa", "a1", 10.1, fp_in="in-a"),
        worker_line("worker.end", "wa", "a1", 10.4, outcome="ok", fp_out="out-a"),
    ]))
    (tmp_path / "frontend.jsonl").write_text("".join(
        line + "\n" for line in rt_request("a1", "id-a1", 10.0, 10.5, fp_in="in-a",
                                           fp_out="out-b")))
    doc = report_json(analyze(load_events([str(tmp_path)], lean=True)))
    crossed = [_key(f) for f in doc["findings"] if f["kind"] == "crossed_stream"]
    assert crossed == [("crossed_stream", "a1", "id-a1")]
    assert [key for key in _live(tmp_path, 8192) if key[0] == "crossed_stream"] == crossed
