"""A gRPC stream's messages are one call, not callers reusing its client id.

The interceptor logs each message of a bidirectional stream as a span of its own, with
an id of its own, nested in the stream's span, and the client's ``x-request-id`` on
each: every such stream was a ``client_id_reuse`` finding ("1 requests held client
x_request_id ..."), in both engines. Two calls reusing one client id at
overlapping times still are one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import analyze_json
from tests.forensics.helpers import followed_summary, rt, ts
from tests.support.extras import installed_engines


def _stream(span: str, rid: str, start: float, messages: int) -> list[str]:
    """A stream's span with `messages` message spans nested in it, one a second."""
    trace = span * 2
    lines = [rt("request.start", time=ts(start), request_id=rid, x_request_id="one-call",
                trace_id=trace, span_id=span)]
    for m in range(messages):
        ids = {"request_id": f"{rid}-m{m}", "x_request_id": "one-call", "trace_id": trace,
               "span_id": f"{m + 1:016x}", "parent_span_id": span}
        lines += [rt("request.start", time=ts(start + m + 0.5), **ids),
                  rt("request.end", time=ts(start + m + 1), status=0, outcome="ok", **ids)]
    lines.append(rt("request.end", time=ts(start + messages + 1), status=0, outcome="ok",
                    request_id=rid, x_request_id="one-call", trace_id=trace, span_id=span))
    return lines


@pytest.mark.parametrize(("calls", "reuses"), [
    ([("a" * 16, "s1", 0.0, 3)], 0),
    ([("a" * 16, "s1", 0.0, 3), ("b" * 16, "s2", 1.0, 2)], 1),
    ([("a" * 16, "s1", 0.0, 3), ("b" * 16, "s2", 10.0, 2)], 0),
])
def test_a_streams_messages_are_one_call(
    tmp_path: Path, calls: list[tuple[str, str, float, int]], reuses: int
) -> None:
    lines = [line for call in calls for line in _stream(*call)]
    (tmp_path / "grpc.jsonl").write_text("\n".join(lines) + "\n")
    for engine in installed_engines():
        code, doc = analyze_json(str(tmp_path), "--engine", engine)
        assert code == 0, doc
        assert doc["summary"]["requests"] == len(calls), engine
        assert doc["summary"]["client_id_reuse"] == reuses, (engine, doc["findings"])
    live = followed_summary(tmp_path)  # the live rules report errors only
    assert (live["requests"], live["errors"]) == (len(calls), 0), live
