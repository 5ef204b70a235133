"""`ridtrace trace " ID"` finds the request an id pasted with spaces around it names.

An id copied from a log, a ticket or a terminal often brings a space or a tab with it
(`ridtrace trace " f6c2…"`); read as given, it matched nothing and the operator was told
"no request" (exit 1) for a request in the logs. A client id may hold spaces of its own
(printable ASCII, space included): one logged so is still found as given.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.trace_match import matching_spans
from tests.forensics.helpers import rt_request

SERVER_ID = "f6c2ae14-3b44-4596-864c-cd3b4c1a7e5b"


def test_an_id_pasted_with_spaces_finds_its_request(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    lines = (rt_request("a1" * 8, SERVER_ID, 0, 1, xrid="job 7")
             + rt_request("b2" * 8, "other", 2, 3, xrid=" job 7 "))
    log.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(main, ["trace", f" {SERVER_ID}\t", str(log), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert '"matched": 1' in result.stdout and f'"request_id": "{SERVER_ID}"' in result.stdout
    events = load_events([str(log)]).events
    requests = build_requests(events)
    found = {" b2b2b2b2b2b2b2b2 ": ["b2" * 8], "job 7": ["a1" * 8], " job 7 ": ["b2" * 8],
             "  job 7": ["a1" * 8]}
    for ident, spans in found.items():
        assert requests["span_id"][matching_spans(requests, events, ident)].tolist() == spans
