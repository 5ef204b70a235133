"""`ridtrace trace` finds a request by its UUID whatever the case it is given in: RFC 9562
reads a UUID's hex digits case-insensitively, and a tool that shows them upper case (or a
ticket that quotes them so) sent the operator to "no request" for a request in the logs."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.trace_match import matching_spans
from tests.forensics.helpers import rt_request

SERVER_ID = "f6c2ae14-3b44-4596-864c-cd3b4c1a7e5b"
CLIENT_ID = "0b0f3e0c-5f0e-4f51-9a0a-1f0d3c2b1a09"


def test_a_uuid_in_upper_case_finds_the_request_logged_in_lower_case(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    lines = rt_request("a1" * 8, SERVER_ID, 0, 1, xrid=CLIENT_ID) + rt_request(
        "b2" * 8, "other", 2, 3, xrid="other")
    log.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(main, ["trace", SERVER_ID.upper(), str(log), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert '"matched": 1' in result.stdout and f'"request_id": "{SERVER_ID}"' in result.stdout
    events = load_events([str(log)]).events
    requests = build_requests(events)
    assert matching_spans(requests, events, CLIENT_ID.upper()).sum() == 1
    # Only a UUID is read so: any other id is matched as logged, case and all.
    assert not matching_spans(requests, events, "OTHER").any()
