"""`ridtrace audit` says how much it read: "nobody sends the header any more" is only
evidence when the logs were understood.

On logs with no request of ridtrace's or Dynamo's in them (a Node service's pino lines,
once bad lines, now read as another logger's), audit printed an empty table and exited
0, which reads as "support can be removed". It now carries
`analyze`'s read summary and exit code 3 for incomplete input; so does `export jaeger`
(an empty trace file and exit 0), and `trace` when nothing matched ("no request with
that id" is no answer when the request may be in what was not read).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs

# The read counters audit and analyze must agree on for the same input.
READ_KEYS = ("files", "lines", "bad_lines", "requests", "bad_line_samples", "ignored_files",
             "unreadable_files", "incomplete", "incomplete_reasons")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _json(*args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(*args, "--format", "json")
    assert out.strip(), err
    return code, json.loads(out)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("logs")
    write_logs(out, SynthSpec(requests=100, deprecated_every=10))
    (out / "README.md").write_text("# the service's logs\n")
    return out


@pytest.fixture(scope="module")
def pino(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Node service's pino log: JSON lines, epoch-millisecond times, no request."""
    out = tmp_path_factory.mktemp("pino") / "app.log"
    lines = [
        json.dumps({
            "level": 30, "time": 1764590000000 + i, "pid": 7, "hostname": "api-0",
            "reqId": f"req-{i}", "msg": "incoming request",
            "req": {"method": "POST", "url": "/v1/chat/completions",
                    "headers": {"x-dynamo-request-id": f"c-{i}"}},
        })
        for i in range(40)
    ]
    out.write_text("\n".join(lines) + "\n")
    return out


def test_logs_it_cannot_read_exit_3_not_an_empty_all_clear(pino: Path) -> None:
    code, doc = _json("audit", str(pino))
    assert code == 3
    assert doc["rows"] == []
    summary = doc["summary"]
    assert (summary["files"], summary["lines"], summary["bad_lines"]) == (1, 40, 0)
    assert summary["requests"] == 0 and summary["incomplete"] is True
    assert summary["incomplete_reasons"] == ["40 lines read but no request found in them"]


def test_the_table_says_the_input_was_incomplete(pino: Path) -> None:
    code, out, err = run("audit", str(pino))
    assert code == 3
    assert "(none seen)" in out
    assert "read 1 file(s): 40 line(s), 0 bad, 0 request(s)" in out
    assert "INCOMPLETE" in out and "40 lines read but no request found in them" in out
    assert "input incomplete, deprecated-header use may be missing" in err


def test_allow_incomplete_exits_0_and_still_says_so(pino: Path) -> None:
    code, doc = _json("audit", str(pino), "--allow-incomplete")
    assert code == 0 and doc["summary"]["incomplete"] is True
    code, _, _ = run("audit", str(pino), "--allow-incomplete", "--format", "csv")
    assert code == 0


def test_whole_input_exits_0_with_analyzes_read_summary(logs: Path) -> None:
    code, doc = _json("audit", str(logs))
    assert code == 0 and doc["rows"]
    _, report = _json("analyze", str(logs), "--allow-incomplete")
    assert {k: doc["summary"][k] for k in READ_KEYS} == {
        k: report["summary"][k] for k in READ_KEYS
    }
    assert doc["summary"]["incomplete"] is False
    assert [n["file"] for n in doc["summary"]["ignored_files"]] == [str(logs / "README.md")]
    code, out, _ = run("audit", str(logs))
    assert code == 0 and "INCOMPLETE" not in out
    assert f"read {report['summary']['files']} file(s)" in out


def test_a_torn_archive_makes_the_audit_incomplete(logs: Path, tmp_path: Path) -> None:
    packed = gzip.compress((logs / "frontend.jsonl").read_bytes())
    (tmp_path / "frontend.jsonl.1.gz").write_bytes(packed[: len(packed) // 2])
    code, doc = _json("audit", str(tmp_path))
    assert code == 3
    (note,) = doc["summary"]["unreadable_files"]
    assert note["file"].endswith("frontend.jsonl.1.gz") and "truncated" in note["reason"]


def test_missing_input_is_exit_2(tmp_path: Path) -> None:
    code, _, err = run("audit", str(tmp_path / "nope.jsonl"))
    assert code == 2, err


def test_trace_on_logs_it_cannot_read_is_exit_3_not_no_such_request(pino: Path) -> None:
    # "no request with that id" is no answer when the request may be in what was not read.
    code, _, err = run("trace", "req-3", str(pino))
    assert code == 3
    assert "in the input that could be read" in err
    code, _, _ = run("trace", "req-3", str(pino), "--allow-incomplete")
    assert code == 1


def test_trace_shows_what_it_found_and_says_what_may_be_missing(
    logs: Path, tmp_path: Path
) -> None:
    frontend = next(p for p in sorted(logs.iterdir()) if p.name.startswith("frontend"))
    ident = json.loads(next(
        line for line in frontend.read_text().splitlines() if '"request_id"' in line
    ))["request_id"]
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "frontend.jsonl").write_text(frontend.read_text())
    (mixed / "app.log.gz").write_bytes(gzip.compress(b'{"time": 1}\n' * 50)[:-12])  # torn
    code, out, err = run("trace", ident, str(mixed), "--format", "json")
    assert code == 0 and json.loads(out)["matched"]
    assert "input incomplete, lines of these requests may be missing" in err
    code, out, err = run("trace", ident, str(frontend), "--format", "json")
    assert code == 0 and "incomplete" not in err


def test_export_jaeger_of_logs_it_cannot_read_is_exit_3_not_an_empty_success(
    pino: Path, logs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(pino), "-o", str(out))
    assert code == 3 and json.loads(out.read_text())["data"] == []
    assert "traces may be missing" in err
    assert run("export", "jaeger", str(pino), "-o", str(out), "--allow-incomplete")[0] == 0
    assert run("export", "jaeger", str(logs), "-o", str(out))[0] == 0


def test_export_jaeger_says_which_spans_had_no_trace_id_to_be_exported(tmp_path: Path) -> None:
    # Dynamo logs no trace_id when a span's trace context is missing ("falling back to
    # internal ids"): such a span's lines crashed the export (exit 4), and with none of
    # them among the lines it was left out of the file without a word (exit 0).
    sample = Path(__file__).parents[1] / "forensics" / "data" / "dynamo-jsonl-sample.jsonl"
    records = [json.loads(line) for line in sample.read_text().splitlines()]
    unlinked = next(r for r in records if r.get("error"))
    del unlinked["trace_id"]
    log = tmp_path / "frontend.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "traces.json"
    code, _, err = run("export", "jaeger", str(log), "-o", str(out))
    assert code == 3, err
    assert "1 span(s) logged no trace_id, which a Jaeger trace needs" in err
    spans = [s["spanID"] for t in json.loads(out.read_text())["data"] for s in t["spans"]]
    assert unlinked["span_id"] not in spans and len(spans) == 3
    assert run("export", "jaeger", str(log), "-o", str(out), "--allow-incomplete")[0] == 0


def test_the_plot_says_the_input_was_incomplete(logs: Path, pino: Path, tmp_path: Path) -> None:
    # The image travels without the report: on logs not read it drew the same "no
    # deprecated headers seen" a clean input gets, the audit's false all-clear.
    pytest.importorskip("matplotlib")
    packed = gzip.compress((logs / "frontend.jsonl").read_bytes())
    torn = tmp_path / "frontend.jsonl.1.gz"
    torn.write_bytes(packed[: len(packed) // 2])
    drawn = {}
    for name, paths in (("clean", [logs]), ("unread", [pino]), ("part", [logs, torn])):
        image = tmp_path / f"{name}.svg"
        code, _, _ = run("audit", *map(str, paths), "--plot", str(image), "-q")
        assert code == (0 if name == "clean" else 3), name
        drawn[name] = image.read_text()  # matplotlib writes each text as a comment
    assert "INPUT INCOMPLETE" not in drawn["clean"]
    assert "no deprecated headers seen" not in drawn["unread"]
    assert "no deprecated headers in what could be read" in drawn["unread"]
    for name in ("unread", "part"):
        assert "INPUT INCOMPLETE, use may be missing: " in drawn[name], name
