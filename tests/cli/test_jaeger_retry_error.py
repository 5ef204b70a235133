"""`export jaeger`'s ``error.message``: the request's own error, not a failed attempt's.

A frontend logs each failed attempt on ``dispatch.retry`` with its error, then the
request's outcome on ``request.end``. The span took its first error line's text: a
request served on its retry was exported with the refused attempt's error, and a
failed one with its first attempt's error, not the final one ``request.end`` names.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import jaeger_spans, rt


def _request(span: str, second: str, *, failed: bool) -> list[str]:
    ids = {"request_id": f"r-{span}", "trace_id": span * 16, "span_id": span * 8}
    end = ({"status": 502, "outcome": "error", "error": "FINAL: worker http://w2: status 502"}
           if failed else {"status": 200, "outcome": "ok", "worker": "http://w2"})
    return [
        rt("request.start", time=f"2026-11-29T10:00:{second}.000000Z", method="POST",
           path="/v1/completions", **ids),
        rt("dispatch.retry", time=f"2026-11-29T10:00:{second}.010000Z", level="WARN",
           worker="http://w1", attempt=1, reason="conflict", marked_down=False,
           error="worker refused duplicate id", **ids),
        rt("request.end", time=f"2026-11-29T10:00:{second}.030000Z", method="POST",
           route="/v1/completions", duration_ms=30.0, attempts=2, **end, **ids),
    ]


def test_a_retried_request_has_its_own_error_or_none(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_request("a1", "01", failed=True)
                             + _request("b2", "02", failed=False)) + "\n")
    out = tmp_path / "traces.json"
    got = CliRunner().invoke(main, ["export", "jaeger", str(log), "-o", str(out), "-q"])
    assert got.exit_code == 0, got.output
    spans = jaeger_spans(json.loads(out.read_text()))
    failed = {t["key"]: t["value"] for t in spans["a1" * 8]["tags"]}
    served = {t["key"]: t["value"] for t in spans["b2" * 8]["tags"]}
    assert failed["error.message"] == "FINAL: worker http://w2: status 502"
    assert failed["error"] is True
    assert "error.message" not in served and "error" not in served
