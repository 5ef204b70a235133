"""A worker that refused a duplicate id (Conflict, 409) did not hold it.

A client of the worker's `/v1/work` other than a ridtrace frontend (another gateway, a
direct call) sent an id in flight there: the worker refused it, the fix working, and
`analyze` reported the refusal as a second holder of the id, a `duplicate_in_flight`
error (exit 1); so did the follow.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import follow_as_written, rt_at_us
from tests.support.extras import ENGINES

_MS = 1000


def _worker_lines(*, refused: bool) -> list[tuple[float, str, str]]:
    """A worker span holding dup-1 for [0, 500] ms, and a second request for dup-1 at
    250 ms: refused (`refused`), or served for [250, 400] ms."""
    held = {"request_id": "dup-1", "trace_id": "a" * 32, "span_id": "a" * 16}
    other = {"request_id": "dup-1", "trace_id": "b" * 32, "span_id": "b" * 16}
    lines = [(0.0, rt_at_us(0, "worker.start", "worker", **held)),
             (0.5, rt_at_us(500 * _MS, "worker.end", "worker", outcome="ok", fp_out="x",
                            **held))]
    if refused:
        lines.append((0.25, rt_at_us(250 * _MS, "worker.refused", "worker", outcome="conflict",
                                     status=409, **other)))
    else:
        lines += [(0.25, rt_at_us(250 * _MS, "worker.start", "worker", **other)),
                  (0.4, rt_at_us(400 * _MS, "worker.end", "worker", outcome="ok", fp_out="y",
                                 **other))]
    return sorted((at, "worker.jsonl", line) for at, line in lines)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("refused", [True, False])
def test_a_refused_request_is_no_duplicate_in_flight(
    tmp_path: Path, engine: str, refused: bool
) -> None:
    lines = _worker_lines(refused=refused)
    (tmp_path / "worker.jsonl").write_text("".join(line + "\n" for _, _, line in lines))
    code, doc = analyze_json(str(tmp_path), "--engine", engine)
    kinds = [f["kind"] for f in doc["findings"]]
    assert kinds == ([] if refused else ["duplicate_in_flight"])
    assert code == (0 if refused else 1)


@pytest.mark.parametrize("refused", [True, False])
def test_the_follow_takes_a_refusal_for_no_holder_either(tmp_path: Path, refused: bool) -> None:
    found = follow_as_written(tmp_path, _worker_lines(refused=refused))
    assert [f["kind"] for f in found] == ([] if refused else ["duplicate_in_flight"])
