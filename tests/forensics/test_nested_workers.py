"""Worker spans called by worker spans: one request, whatever the depth.

A Dynamo pipeline's frontend calls a processor that calls the engine worker, a decode
worker calls its prefill worker: each logs a ``handle_payload`` span whose ``parent_id``
is its caller's span, a worker's. Only the first level was followed, so without the
frontend's logs the two spans of one request were two callers holding its id at once
(an invented ``duplicate_in_flight``, exit 1), and with them ``requests`` counted two.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ridtrace.forensics import analyze, load_events, report_json
from ridtrace.forensics.live.rules import LiveRules
from tests.forensics.test_follow_rules import S, _rows

_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _dynamo(t: str, message: str, span: str, parent: str, *, rid: str = "req-1",
            name: str = "handle_payload", trace: str = _TRACE, **more: Any) -> str:
    line = {"time": t, "level": "DEBUG", "file": "push_handler.rs", "line": 214,
            "target": "dynamo_runtime::pipeline::network::ingress::push_handler",
            "message": message, "request_id": rid, "span_id": span, "span_name": name,
            "trace_id": trace, "x_request_id": "x", **more}
    if parent:
        line["parent_id"] = parent
    return json.dumps(line)


def _spans(directory: Path, chains: list[tuple[str, str, str]]) -> None:
    """A decode span and its prefill span per (frontend span, decode span, trace)."""
    decode, prefill = [], []
    for i, (front, span, trace) in enumerate(chains):
        decode += [_dynamo(f"2026-10-02T14:00:0{i}.100000Z", "request received", span, front,
                           trace=trace),
                   _dynamo("2026-10-02T14:00:05.000000Z", "request completed", span, front,
                           trace=trace)]
        prefill += [_dynamo(f"2026-10-02T14:00:0{i}.200000Z", "request received", f"p{span}",
                            span, trace=trace),
                    _dynamo(f"2026-10-02T14:00:0{i}.500000Z", "request completed", f"p{span}",
                            span, trace=trace)]
    directory.mkdir(exist_ok=True)
    (directory / "decode.jsonl").write_text("\n".join(decode) + "\n")
    (directory / "a-prefill.jsonl").write_text("\n".join(prefill) + "\n")


def _report(directory: Path) -> dict[str, Any]:
    return report_json(analyze(load_events([str(directory)])))


def test_a_workers_own_worker_is_the_same_request(tmp_path: Path) -> None:
    _spans(tmp_path, [("f000000000000001", "d000000000000001", _TRACE)])
    doc = _report(tmp_path)
    assert doc["findings"] == []
    assert doc["summary"]["requests"] == 1 and doc["summary"]["spans"] == 2


def test_two_callers_chains_holding_one_id_are_still_a_duplicate(tmp_path: Path) -> None:
    _spans(tmp_path, [("f000000000000001", "d000000000000001", _TRACE),
                      ("f000000000000002", "d000000000000002", "5" * 32)])
    doc = _report(tmp_path)
    assert [(f["kind"], f["request_id"]) for f in doc["findings"]] == [
        ("duplicate_in_flight", "req-1")
    ]
    assert doc["findings"][0]["detail"].startswith("2 requests held request_id req-1")
    assert doc["summary"]["requests"] == 2


def _chain_with_its_frontend(tmp_path: Path) -> None:
    """One decode → prefill chain and the frontend request it works for."""
    _spans(tmp_path, [("f000000000000001", "d000000000000001", _TRACE)])
    front = [_dynamo("2026-10-02T14:00:00.050000Z", "request received", "f000000000000001", "",
                     name="http-request"),
             _dynamo("2026-10-02T14:00:05.100000Z", "request completed", "f000000000000001", "",
                     name="http-request", status="success")]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")


def test_with_the_frontend_a_chain_counts_one_request(tmp_path: Path) -> None:
    _chain_with_its_frontend(tmp_path)
    doc = _report(tmp_path)
    assert doc["findings"] == [] and doc["summary"]["requests"] == 1


def _work(span: str, parent: str, t0: int, t1: int) -> dict[str, Any]:
    return {"span_id": span, "parent_span_id": parent, "request_id": "7", "t0": t0, "t1": t1,
            "worker": True}


def test_live_a_workers_own_worker_is_no_duplicate() -> None:
    for order in (1, -1):  # the prefill worker's file read first, or last
        rules = LiveRules(window_s=600)
        rows = [_work("d1", "f1", 0, 5 * S), _work("pd1", "d1", S // 10, S // 2)][::order]
        assert rules.feed(_rows(*rows)) == []
        # Another caller's chain holding the id is still one.
        found = rules.feed(_rows(_work("d2", "f2", S, 3 * S), _work("pd2", "d2", 2 * S, 3 * S)))
        assert [(f["kind"], f["request_id"]) for f in found] == [("duplicate_in_flight", "7")]


def test_a_workers_own_workers_file_is_put_on_the_frontends_clock(tmp_path: Path) -> None:
    """The decode worker's clock runs 300 ms ahead, the prefill worker's 200 ms behind.
    Only files linked to frontend spans were corrected: the prefill spans stayed 200 ms
    early, before the callers they worked for had started (in `trace`, in Jaeger)."""
    front, decode, prefill = [], [], []

    def at(us: int) -> str:
        return f"2026-10-02T14:00:{us // 1_000_000:02d}.{us % 1_000_000:06d}Z"

    for i in range(20):
        t, trace, rid = 1_000_000 + 100_000 * i, f"{i + 1:032x}", f"r{i}"
        f, d = f"f{i:015x}", f"d{i:015x}"
        front += [_dynamo(at(t), "request received", f, "", name="http-request", trace=trace,
                          rid=rid),
                  _dynamo(at(t + 400_000), "request completed", f, "", name="http-request",
                          trace=trace, rid=rid, status="success")]
        # Inside [t + 20 ms, t + 380 ms] and [t + 40 ms, t + 100 ms] on the frontend's clock.
        decode += [_dynamo(at(t + 320_000), "request received", d, f, trace=trace, rid=rid),
                   _dynamo(at(t + 680_000), "request completed", d, f, trace=trace, rid=rid)]
        prefill += [_dynamo(at(t - 160_000), "request received", f"p{d}", d, trace=trace,
                            rid=rid),
                    _dynamo(at(t - 100_000), "request completed", f"p{d}", d, trace=trace,
                            rid=rid)]
    for name, lines in (("frontend", front), ("decode", decode), ("prefill", prefill)):
        (tmp_path / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    doc = _report(tmp_path)
    # The middle of the offsets that put every span inside its caller's: the decode
    # spans' [-320, -280] ms, then the prefill spans' [180, 480] ms in the decode spans
    # so placed.
    assert doc["summary"]["clock_offsets_ms"] == {
        str(tmp_path / "decode.jsonl"): -300.0, str(tmp_path / "prefill.jsonl"): 330.0,
    }


def test_trace_shows_a_chain_as_one_request(tmp_path: Path) -> None:
    """`ridtrace trace` showed the prefill span as a request of its own, its caller
    unknown, beside the frontend request it worked for."""
    from ridtrace.forensics.records.spans import build_requests
    from ridtrace.forensics.views.trace_model import build_trace

    _chain_with_its_frontend(tmp_path)
    events = load_events([str(tmp_path)]).events
    view = build_trace(events, build_requests(events), "req-1", limit=None)
    assert [b.span_id for b in view.blocks] == ["f000000000000001"]
    assert len(view.blocks[0].spans) == 3


def test_live_counts_a_chain_as_one_request_whatever_order_its_spans_come_in() -> None:
    """The follower's ``requests`` counted each prefill span read before its decode span
    as a caller of its own: 120 requests for `analyze`'s 60."""
    front = {"span_id": "f1", "request_id": "7", "t0": 0, "t1": 5 * S}
    for rows in ([front, _work("pd1", "d1", S // 10, S // 2), _work("d1", "f1", 0, 4 * S)],
                 [_work("pd1", "d1", S // 10, S // 2), _work("d1", "f1", 0, 4 * S), front],
                 [front, _work("d1", "f1", 0, 4 * S), _work("pd1", "d1", S // 10, S // 2)]):
        rules = LiveRules(window_s=600)
        for row in rows:  # one poll each: the later ones find the earlier
            rules.feed(_rows(row))
        assert rules.callers_seen == 1, rows


def test_workers_of_a_nested_frontend_span_are_its_callers_request(tmp_path: Path) -> None:
    """Workers called from Dynamo's ``generate`` span (inside ``http-request``) work for
    the ``http-request`` caller: one request, in `analyze` and live alike."""
    front = [_dynamo("2026-10-02T14:00:00.050000Z", "request received", "h1", "",
                     name="http-request"),
             _dynamo("2026-10-02T14:00:00.060000Z", "generating", "g1", "h1", name="generate"),
             _dynamo("2026-10-02T14:00:05.100000Z", "request completed", "h1", "",
                     name="http-request", status="success")]
    worker = [_dynamo("2026-10-02T14:00:00.100000Z", "request received", "w1", "g1"),
              _dynamo("2026-10-02T14:00:05.000000Z", "request completed", "w1", "g1")]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")
    (tmp_path / "worker.jsonl").write_text("\n".join(worker) + "\n")
    assert _report(tmp_path)["summary"]["requests"] == 1
    rules = LiveRules(window_s=600)
    rules.feed(_rows(_work("w1", "g1", S // 10, 5 * S)))
    rules.feed(_rows({"span_id": "h1", "request_id": "7", "t0": 0, "t1": 5 * S}))
    rules.feed(_rows({"span_id": "g1", "parent_span_id": "h1", "request_id": "7", "t0": S // 20}))
    assert rules.callers_seen == 1


def test_jaeger_names_a_workers_own_worker_after_the_requests_route(tmp_path: Path) -> None:
    """A worker span is named after its caller's route; the prefill span, whose parent
    is the decode worker's span (no route of its own), was ``worker request``. Both start
    together here: the name must not hang on which one is written first."""
    from ridtrace.forensics.records.spans import build_requests
    from ridtrace.forensics.views.jaeger import to_jaeger

    _spans(tmp_path, [("f000000000000001", "d000000000000001", _TRACE)])
    prefill = tmp_path / "a-prefill.jsonl"
    prefill.write_text(prefill.read_text().replace("14:00:00.200000Z", "14:00:00.100000Z"))
    front = [_dynamo("2026-10-02T14:00:00.050000Z", "request received", "f000000000000001", "",
                     name="http-request", method="POST", uri="/v1/chat/completions"),
             _dynamo("2026-10-02T14:00:05.100000Z", "request completed", "f000000000000001", "",
                     name="http-request", status="success", method="POST",
                     uri="/v1/chat/completions")]
    (tmp_path / "frontend.jsonl").write_text("\n".join(front) + "\n")
    events = load_events([str(tmp_path)]).events
    doc = to_jaeger(build_requests(events), events)
    names = sorted(s["operationName"] for t in doc["data"] for s in t["spans"])
    assert names == ["POST /v1/chat/completions", "worker /v1/chat/completions",
                     "worker /v1/chat/completions"]
