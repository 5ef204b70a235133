"""OpenTelemetry's invalid all-zero span id names no span: requests logged with it are
not one request, and a read of them says what it could not tell apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request
from tests.support.follower import start_follower


def _logged_by_a_no_op_tracer(folder: Path, span_id: str) -> None:
    # A service whose tracer is a no-op logs the invalid span context's ids for every
    # request: two requests hold D1 at once, two more are other requests.
    lines = [*rt_request(span_id, "D1", 0, 5), *rt_request(span_id, "D1", 1, 6),
             *rt_request(span_id, "Q1", 2, 3), *rt_request(span_id, "Q2", 7, 8)]
    for_all = [json.loads(line) for line in lines]
    for record in for_all:
        record["trace_id"] = "0" * 32
    for_all.sort(key=lambda record: record["time"])
    (folder / "frontend.jsonl").write_text("".join(json.dumps(r) + "\n" for r in for_all))


@pytest.mark.parametrize("span_id", ["0000000000000000", "0x0", "0"])
def test_requests_keyed_by_the_zero_span_id_are_an_incomplete_read(
        tmp_path: Path, span_id: str) -> None:
    # Keyed by it, the four were one span: 1 request, "No findings.", exit 0, and
    # `trace D1` showed one request of 8 lines with three request ids.
    _logged_by_a_no_op_tracer(tmp_path, span_id)
    done = CliRunner().invoke(main, ["analyze", str(tmp_path), "-q", "--format", "json"])
    summary = json.loads(done.output)["summary"]
    assert (summary["requests"], summary["incomplete"], done.exit_code) == (0, True, 3)
    assert summary["incomplete_reasons"] == ["8 lines read but no request found in them"]


def test_the_follower_reads_the_zero_span_id_as_the_batch_read_does(tmp_path: Path) -> None:
    _logged_by_a_no_op_tracer(tmp_path, "0000000000000000")
    follower = start_follower([str(tmp_path)], "--from-start")
    code = follower.stop()  # a stop reads what is written first: all of it
    summary = follower.summary()
    assert (summary["requests"], summary["duplicate_in_flight"], code) == (0, 0, 3)
