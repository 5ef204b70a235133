"""Evidence on a line with no ``span_id`` is named, whatever the command and engine.

Requests are keyed by span id, so a line logged outside the request's span joins none.
Dynamo's deprecated-header WARN is the only record that a request sent the header: one
without span fields was dropped in silence, and `audit` counted one use fewer, complete,
exit 0, the very count an API owner removes the header by. The Unlinked error such a
line can be was named by `analyze` and by `audit --engine dask` but not by `audit`, so
the two engines gave one input two exit codes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.support.extras import ENGINES

_HEAD = {"level": "DEBUG", "target": "dynamo_llm::http::service::metrics",
         "span_name": "http-request", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
         "uri": "/v1/chat/completions"}


def _request(rid: str, span: str, t0: int) -> list[dict[str, object]]:
    head = {**_HEAD, "request_id": rid, "span_id": span}
    return [
        {"time": f"2026-10-02T14:03:1{t0}.000001Z", **head, "message": "request received"},
        {"time": f"2026-10-02T14:03:1{t0}.500000Z", **head, "message": "request completed",
         "status": "success"},
    ]


def _warn(message: str, **fields: str) -> dict[str, object]:
    # Logged outside the request's span: no span_id, span_name or trace_id.
    return {"time": "2026-10-02T14:03:13.000002Z", "level": "WARN",
            "target": "dynamo_llm::http::service::openai", "message": message, **fields}


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _run(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(main, [*args, "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)


SPANLESS_WARNS = [
    _warn("x-dynamo-request-id header is deprecated (DEP #7812); server-generated request "
          "IDs should be used instead", request_id="c"),
    _warn("ignoring deprecated client request id header", header="request-id", request_id="c"),
]


@pytest.mark.parametrize("warn", SPANLESS_WARNS, ids=["message form", "header field"])
@pytest.mark.parametrize("command", ["analyze", "audit"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_deprecated_header_warn_with_no_span_id_is_named_not_dropped(
    tmp_path: Path, warn: dict[str, object], command: str, engine: str,
) -> None:
    log = _write(tmp_path / "frontend.jsonl",
                 [*_request("a", "a1b2c3d4e5f60718", 1), *_request("b", "b1b2c3d4e5f60718", 2),
                  warn])
    code, doc = _run(command, str(log), "--engine", engine)
    assert doc["summary"]["unreadable_files"] == [{  # type: ignore[index]
        "file": str(log), "reason": "a deprecated-header WARN at line 5 names no span_id, "
        "so no request holds it: that use of the header is missing (read that line)"}]
    assert code == 3


@pytest.mark.extra("dask")
def test_audit_names_an_unlinked_error_with_no_span_id_as_its_dask_engine_does(
    tmp_path: Path,
) -> None:
    unlinked = _warn("engine generate call failed", request_id="c",
                     error="Unlinked response; response task was dropped or cancelled")
    log = _write(tmp_path / "frontend.jsonl", [*_request("a", "a1b2c3d4e5f60718", 1), unlinked])
    pandas = _run("audit", str(log))
    assert _run("audit", str(log), "--engine", "dask") == pandas
    assert pandas[0] == 3


@pytest.mark.extra("dask")
def test_the_dask_engine_names_the_line_in_its_file_not_in_its_block(tmp_path: Path) -> None:
    # A file bigger than a partition is read in blocks: the note named the line within
    # its block (line 730 of a WARN at line 17399), and a second such line in another
    # block was a second note, where the pandas engine names the file's first one.
    requests = [line for i in range(6000)
                for line in _request(f"r{i}", f"{i + 1:016x}", 1)]
    warn = SPANLESS_WARNS[1]
    log = _write(tmp_path / "frontend.jsonl", [*requests[:10], warn, *requests[10:], warn])
    assert log.stat().st_size > 3 << 20
    pandas = _run("audit", str(log))
    assert pandas[1]["summary"]["unreadable_files"] == [{  # type: ignore[index]
        "file": str(log), "reason": "a deprecated-header WARN at line 11 names no span_id, "
        "so no request holds it: that use of the header is missing (read that line)"}]
    assert _run("audit", str(log), "--engine", "dask", "--partition-size", "1MiB") == pandas



@pytest.mark.parametrize("odd", [
    {"model": "Q\udc80"},  # a lone surrogate: valid JSON DuckDB's reader refuses
    {"time": "2026-10-02t14:03:13.000002z"},  # RFC 3339 in lower case: judged in Python
], ids=["lone surrogate", "lower-case time"])
@pytest.mark.parametrize("engine", ENGINES)
def test_an_unlinked_error_with_no_span_id_judged_in_python_is_named_too(
    tmp_path: Path, odd: dict[str, str], engine: str,
) -> None:
    # Lines DuckDB refused and Python judged valid rebuilt the spans; the check for
    # evidence with no span_id ran on DuckDB's rows only: "No findings", exit 0.
    unlinked = {**_warn("engine generate call failed", request_id="c",
                        error="Unlinked response; response task was dropped or cancelled"),
                **odd}
    log = _write(tmp_path / "frontend.jsonl",
                 [*_request("a", "a1b2c3d4e5f60718", 1), *_request("b", "b1b2c3d4e5f60718", 2),
                  unlinked])
    code, doc = _run("analyze", str(log), "--engine", engine)
    assert doc["summary"]["unreadable_files"] == [{  # type: ignore[index]
        "file": str(log), "reason": "an Unlinked error at line 5 names no span_id, so no "
        "request holds it: the finding is missing (read that line)"}]
    assert code == 3


def test_a_follower_names_the_files_line_of_evidence_with_no_span_id(tmp_path: Path) -> None:
    # Read in a later poll, the note cited the chunk's line ("at line 1"), and a second
    # such line in another chunk added a note of its own.
    from ridtrace.forensics.live.follow import Follower, FollowSettings

    log = _write(tmp_path / "frontend.jsonl",
                 [*_request("a", "a1b2c3d4e5f60718", 1), *_request("b", "b1b2c3d4e5f60718", 2)])
    unlinked = _warn("engine generate call failed", request_id="c",
                     error="Unlinked response; response task was dropped or cancelled")
    follower = Follower([str(tmp_path)], FollowSettings(from_start=True))
    try:
        follower.start()
        follower.poll()
        for _ in range(2):
            with log.open("a") as fh:
                fh.write(json.dumps(unlinked) + "\n")
            follower.poll()
        summary = follower.summary()
    finally:
        follower.close()
    assert summary["unreadable_files"] == [{
        "file": str(log), "reason": "an Unlinked error at line 5 names no span_id, so no "
        "request holds it: the finding is missing (read that line)"}]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_first_spanless_unlinked_error_in_the_file_is_named_not_the_earliest_stamped(
    tmp_path: Path, engine: str,
) -> None:
    # "The first such line": by time, the batch read named line 6 (stamped earlier, a
    # clock stepped back), where the Dask engine's blocks and the follower's chunks,
    # each naming its own first line, named line 5.
    error = "Unlinked response; response task was dropped or cancelled"
    later = {**_warn("engine generate call failed", request_id="c", error=error),
             "time": "2026-10-02T14:03:19.000000Z"}
    earlier = {**_warn("engine generate call failed", request_id="d", error=error),
               "time": "2026-10-02T14:03:11.000000Z"}
    log = _write(tmp_path / "frontend.jsonl",
                 [*_request("a", "a1b2c3d4e5f60718", 1), *_request("b", "b1b2c3d4e5f60718", 2),
                  later, earlier])
    _, doc = _run("analyze", str(log), "--engine", engine)
    assert [u["reason"].split(" names")[0] for u in doc["summary"]["unreadable_files"]] == [
        "an Unlinked error at line 5"]
