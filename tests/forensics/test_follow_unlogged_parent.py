"""A Dynamo worker span whose parent span is not in the logs does not stand in for a
second caller when its trace's frontend span is read.

The worker's `parent_id` names the frontend span current when the request was
dispatched: a span nested in `http-request` (a router's, the native route's
`generate`) that logs nothing at the level the frontend ran at. `analyze` counts such a
worker span as the id's holder only when its trace has no frontend span in the logs;
`--follow` counted it as a caller of its own, so every request of a clean post-fix
deployment was printed as a `duplicate_in_flight` of itself, two "requests" holding its
one minted id.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import follow_as_written

_FRONT = ('{{"time":"{t}","level":"DEBUG","file":"lib/llm/src/http/service/metrics.rs",'
          '"line":905,"target":"dynamo_llm::http::service::metrics","message":"{msg}",'
          '"method":"POST","request_id":"{rid}","span_id":"{span}","span_name":"http-request",'
          '"trace_id":"{trace}","uri":"/inference/v1/generate","version":"HTTP/1.1",'
          '"x_request_id":"1"{extra}}}')
_WORKER = ('{{"time":"{t}","level":"DEBUG","file":"lib/runtime/src/pipeline/network/ingress/'
           'push_handler.rs","line":214,"target":"dynamo_runtime::pipeline::network::ingress::'
           'push_handler","message":"{msg}","component":"backend","endpoint":"generate",'
           '"namespace":"dynamo","otel.kind":"server","parent_id":"{parent}",'
           '"request_id":"{rid}","span_id":"{span}","span_name":"handle_payload",'
           '"trace_id":"{trace}","x_request_id":"1"}}')


def _t(seconds: float) -> str:
    return f"2026-10-02T10:00:{seconds:09.6f}Z"


def _request(n: int, rid: str, start: float) -> list[tuple[float, str, str]]:
    """One request: its http-request span, and its worker span under a span of the
    frontend's that logged nothing."""
    trace, span = f"{n:x}" * 32, f"{n:x}" * 16
    front = {"rid": rid, "span": span, "trace": trace}
    work = {"rid": rid, "span": f"{n + 8:x}" * 16, "trace": trace, "parent": f"{n + 4:x}" * 16}
    return [
        (start, "frontend.jsonl", _FRONT.format(t=_t(start), msg="request received",
                                                extra="", **front)),
        (start + 0.1, "worker.jsonl", _WORKER.format(t=_t(start + 0.1),
                                                     msg="request received", **work)),
        (start + 1.0, "worker.jsonl", _WORKER.format(t=_t(start + 1.0),
                                                     msg="request completed", **work)),
        (start + 1.1, "frontend.jsonl", _FRONT.format(
            t=_t(start + 1.1), msg="http response sent",
            extra=',"status":"200","latency_ms":"1100"', **front)),
    ]


def _live(tmp_path: Path, lines: list[tuple[float, str, str]], *,
          worker_first: bool) -> list[dict[str, object]]:
    """Follow the logs as they are written, a poll after each line (the worker's log
    written whole before the frontend's when `worker_first`)."""
    order = sorted(lines, key=lambda row: (row[1] != "worker.jsonl", row[0])) if worker_first \
        else sorted(lines)
    return follow_as_written(tmp_path, order)


def _duplicates(findings: list[dict[str, object]]) -> list[tuple[object, object]]:
    return sorted((f["request_id"], f["detail"]) for f in findings
                  if f["kind"] == "duplicate_in_flight")


def _batch(tmp_path: Path) -> list[tuple[object, object]]:
    result = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json", "-q"])
    return _duplicates(json.loads(result.stdout)["findings"])


def test_one_request_is_no_duplicate_of_itself(tmp_path: Path) -> None:
    lines = _request(1, "0d6e3c1a-7d3f-4e8a-b1c2-5f6a7b8c9d0e", 0.0)
    assert _live(tmp_path, lines, worker_first=False) == []
    assert _batch(tmp_path) == []


def test_nor_when_the_worker_log_is_read_first(tmp_path: Path) -> None:
    lines = _request(1, "0d6e3c1a-7d3f-4e8a-b1c2-5f6a7b8c9d0e", 0.0)
    assert _live(tmp_path, lines, worker_first=True) == []


def test_two_callers_sharing_the_id_are_one_duplicate_of_two(tmp_path: Path) -> None:
    # The legacy policy: both took the client's "1" as their id, in flight together.
    lines = [*_request(1, "1", 0.0), *_request(2, "1", 0.5)]
    live = _duplicates(_live(tmp_path, lines, worker_first=False))
    assert live == _batch(tmp_path)
    assert len(live) == 1 and "2 requests held request_id 1" in str(live[0][1])
