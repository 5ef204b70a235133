"""OpenTelemetry's invalid all-zero span id names no span, nor does an empty one (a
logger's placeholder): requests logged with it are not one request, and a read of them
says what it could not tell apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt, rt_request, ts
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


@pytest.mark.parametrize("span_id", ["0000000000000000", "0x0", "0", ""])
def test_requests_keyed_by_the_zero_span_id_are_an_incomplete_read(
        tmp_path: Path, span_id: str) -> None:
    # Keyed by it, the four were one span: 1 request, "No findings.", exit 0, and
    # `trace D1` showed one request of 8 lines with three request ids.
    _logged_by_a_no_op_tracer(tmp_path, span_id)
    done = CliRunner().invoke(main, ["analyze", str(tmp_path), "-q", "--format", "json"])
    summary = json.loads(done.output)["summary"]
    assert (summary["requests"], summary["incomplete"], done.exit_code) == (0, True, 3)
    assert summary["incomplete_reasons"] == ["8 lines read but no request found in them"]


@pytest.mark.parametrize("span_id", ["0000000000000000", ""])
def test_the_follower_reads_the_zero_span_id_as_the_batch_read_does(
        tmp_path: Path, span_id: str) -> None:
    _logged_by_a_no_op_tracer(tmp_path, span_id)
    follower = start_follower([str(tmp_path)], "--from-start")
    code = follower.stop()  # a stop reads what is written first: all of it
    summary = follower.summary()
    assert (summary["requests"], summary["duplicate_in_flight"], code) == (0, 0, 3)


@pytest.mark.parametrize("command", [["audit"], ["export", "jaeger", "-o", "-"]])
def test_the_views_say_of_a_zero_span_id_what_analyze_says(
        tmp_path: Path, command: list[str]) -> None:
    # The views' events read kept the zero id as a span: a deprecated-header WARN logged
    # with it was dropped from `audit` without a word (exit 0), where analyze said the
    # read was incomplete (exit 3), as all three say of a WARN with no span id.
    lines = [*rt_request("a" * 16, "r1", 0, 1),
             rt("deprecated_header", time=ts(0.5), level="WARNING", request_id="r1",
                trace_id="0" * 32, span_id="0" * 16, header="x-dynamo-request-id")]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    said = {}
    for name, args in (("analyze", ["analyze"]), ("view", command)):
        done = CliRunner().invoke(main, [*args, str(tmp_path), "-q"])
        said[name] = done.exit_code
    assert said == {"analyze": 3, "view": 3}


@pytest.mark.parametrize("parent", ["0" * 16, ""])
def test_workers_whose_caller_is_the_zero_span_id_are_each_their_own_request(
        tmp_path: Path, parent: str) -> None:
    # Three worker spans holding one id at once, their callers not in the logs: with
    # the zero parent id as their caller they were one request, and no duplicate.
    lines = []
    for k, start in enumerate((0.0, 0.2, 0.4)):
        ids = {"request_id": "same-id", "trace_id": f"{k + 1:032x}",
               "span_id": f"{k + 0xa1:016x}", "parent_span_id": parent, "service": "worker"}
        lines += [rt("worker.start", time=ts(start), **ids),
                  rt("worker.end", time=ts(start + 1), outcome="ok", **ids)]
    lines.sort(key=lambda line: json.loads(line)["time"])
    (tmp_path / "worker.jsonl").write_text("\n".join(lines) + "\n")
    done = CliRunner().invoke(main, ["analyze", str(tmp_path), "-q", "--format", "json"])
    summary = json.loads(done.output)["summary"]
    assert (summary["requests"], summary["duplicate_in_flight"]) == (3, 1)
