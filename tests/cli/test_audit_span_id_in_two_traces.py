"""`audit`'s summary counts requests as `analyze` does: by trace and span id.

Two requests in two traces that log one span id (a client that reuses its ids, a
generator's collision) are two requests to `analyze` and to the audit's rows; the
audit's summary said one, counting span ids alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.cli.helpers import analyze_json
from tests.forensics.helpers import rt, ts


def test_the_audit_summary_counts_a_span_id_in_two_traces_as_two_requests(
    tmp_path: Path,
) -> None:
    lines = []
    for n, trace in enumerate(("a" * 32, "b" * 32)):
        ids = {"request_id": f"req-{n}", "trace_id": trace, "span_id": "1234567890abcdef",
               "deprecated_headers": "x-dynamo-request-id", "path": "/v1/models"}
        lines += [rt("request.start", time=ts(n * 60), method="GET", **ids),
                  rt("request.end", time=ts(n * 60 + 0.03), method="GET", route="/v1/models",
                     status=200, outcome="ok", **ids)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    _, analyzed = analyze_json(str(tmp_path))
    audited = CliRunner().invoke(main, ["audit", str(tmp_path), "--format", "json"])
    assert audited.exit_code == 0, audited.output
    audit = json.loads(audited.stdout)
    assert analyzed["summary"]["requests"] == audit["summary"]["requests"] == 2
    assert [row["requests"] for row in audit["rows"]] == [2]
