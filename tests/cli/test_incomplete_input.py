"""Never a silent false clean: every input `ridtrace analyze` could not use shows up.

Each case is one a user met on real logs: banners before the JSON logger starts, a
UTF-8 BOM, a report lying beside the logs, torn rotated archives, lone surrogates a
client can send, and worker clocks that disagree.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from datetime import UTC
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.dynamo import DynamoSpec, DynamoTruth, write_dynamo_logs
from tests.forensics.helpers import rt, rt_request, ts

DUPLICATES = 4


def run(*args: str) -> tuple[int, dict[str, object], str]:
    result = CliRunner().invoke(main, ["analyze", *args, "--format", "json", "-q"])
    doc = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.exit_code, doc, result.stderr


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DynamoTruth]:
    """Dynamo logs (banner first, torn lines inside) with a truth.json beside them."""
    out = tmp_path_factory.mktemp("incident")
    truth = write_dynamo_logs(out, DynamoSpec(requests=400, duplicates=DUPLICATES))
    (out / "truth.json").write_text(json.dumps({"expected": sorted(truth.expected)}, indent=2))
    (out / "README.md").write_text("# incident 42\nlogs copied from the pods\n")
    return out, truth


def _found(doc: dict[str, object], kind: str) -> int:
    return sum(1 for f in doc["findings"] if f["kind"] == kind)  # type: ignore[attr-defined]


def test_banner_lines_do_not_hide_a_directory_of_logs(incident: tuple[Path, DynamoTruth]) -> None:
    folder, truth = incident
    code, doc, _ = run(str(folder))
    summary = doc["summary"]
    assert code == 1
    assert _found(doc, "duplicate_in_flight") == DUPLICATES
    ignored = {Path(n["file"]).name: n["reason"] for n in summary["ignored_files"]}  # type: ignore[index]
    assert ignored == {
        "truth.json": "a JSON document, not JSON lines",
        "README.md": "no JSON lines in its first lines",
    }
    assert summary["files"] == len(truth.files)  # type: ignore[index]
    # The banner and the torn lines are counted, with their file:line.
    assert summary["bad_lines"] == truth.bad_lines  # type: ignore[index]
    first = summary["bad_line_samples"][0]  # type: ignore[index]
    assert first["line"] == 1 and first["reason"] == "not JSON"


def test_bom_is_stripped(tmp_path: Path) -> None:
    line = rt("request.start", request_id="r1", span_id="a" * 16, trace_id="t" * 32)
    end = rt("request.end", request_id="r1", span_id="a" * 16, trace_id="t" * 32,
             outcome="ok", status=200)
    path = tmp_path / "frontend.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + f"{line}\n{end}\n".encode())
    code, doc, _ = run(str(tmp_path))
    assert code == 0
    assert doc["summary"]["bad_lines"] == 0 and doc["summary"]["requests"] == 1  # type: ignore[index]


def test_a_bom_where_cat_joined_two_files_is_stripped_too(tmp_path: Path) -> None:
    # `cat a.jsonl b.jsonl` of two files a Windows tool wrote: the second BOM opens a line.
    parts = []
    for i in range(2):
        span, trace = f"{i + 1}" * 16, f"{i + 1}" * 32
        start = rt("request.start", request_id=f"r{i}", span_id=span, trace_id=trace)
        end = rt("request.end", request_id=f"r{i}", span_id=span, trace_id=trace,
                 outcome="ok", status=200)
        parts.append(b"\xef\xbb\xbf" + f"{start}\n{end}\n".encode())
    (tmp_path / "frontend.jsonl").write_bytes(b"".join(parts))
    code, doc, _ = run(str(tmp_path))
    assert code == 0, doc
    assert doc["summary"]["bad_lines"] == 0 and doc["summary"]["requests"] == 2  # type: ignore[index]


def test_a_key_given_twice_means_its_first_value_whichever_parser_reads_the_line(
    tmp_path: Path,
) -> None:
    # DuckDB keeps the first value of a repeated key; a line it rejects (a lone
    # surrogate in it) is read by the standard library, which kept the last.
    span, trace = "a" * 16, "t" * 32
    start = rt("request.start", request_id="r1", span_id=span, trace_id=trace)
    end = rt("request.end", request_id="r1", span_id=span, trace_id=trace, outcome="ok",
             status=200, model="\udc80")
    doubled = end[:-1] + ', "event": "response.unlinked"}'  # the first "event" is request.end
    (tmp_path / "frontend.jsonl").write_text(f"{start}\n{doubled}\n")
    code, doc, _ = run(str(tmp_path / "frontend.jsonl"))
    assert code == 0, doc
    assert doc["summary"]["unlinked"] == 0 and doc["summary"]["bad_lines"] == 0  # type: ignore[index]


def _gzip_of(path: Path) -> bytes:
    return gzip.compress(path.read_bytes())


def _without_trailer(data: bytes) -> bytes:
    return data[:-8]


def test_truncated_gzip_keeps_every_line_before_the_tear(
    incident: tuple[Path, DynamoTruth], tmp_path: Path
) -> None:
    folder, _ = incident
    for name in ("frontend.jsonl", "worker-0.jsonl", "worker-1.jsonl", "worker-2.jsonl"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    whole = (folder / "frontend.jsonl").read_bytes()
    packed = gzip.compress(whole)
    (tmp_path / "frontend.jsonl").unlink()
    (tmp_path / "frontend.jsonl.1.gz").write_bytes(packed[: int(len(packed) * 0.97)])
    code, doc, _ = run(str(tmp_path))
    summary = doc["summary"]
    unreadable = summary["unreadable_files"]  # type: ignore[index]
    assert [Path(n["file"]).name for n in unreadable] == ["frontend.jsonl.1.gz"]
    assert "gzip stream truncated" in unreadable[0]["reason"]
    assert summary["incomplete"] is True  # type: ignore[index]
    # Lines before the tear are all read: the duplicates in the first 90% are found.
    assert _found(doc, "duplicate_in_flight") >= DUPLICATES - 1
    torn = [s for s in summary["bad_line_samples"] if "torn last line" in s["reason"]]  # type: ignore[index]
    assert code == 1 and len(torn) <= 1


def test_gzip_without_its_trailer_loses_no_line(
    incident: tuple[Path, DynamoTruth], tmp_path: Path
) -> None:
    folder, _ = incident
    whole = (folder / "frontend.jsonl").read_bytes()
    (tmp_path / "frontend.jsonl.gz").write_bytes(_without_trailer(_gzip_of(folder / "frontend.jsonl")))
    code, doc, _ = run(str(tmp_path / "frontend.jsonl.gz"))
    plain = tmp_path / "plain" / "frontend.jsonl"
    plain.parent.mkdir()
    plain.write_bytes(whole)
    _, want, _ = run(str(plain))
    assert doc["summary"]["lines"] == want["summary"]["lines"]  # type: ignore[index]
    assert doc["findings"] == [  # type: ignore[index]
        {**f, "evidence": [{**e, "file": str(tmp_path / "frontend.jsonl.gz")} for e in f["evidence"]]}
        for f in want["findings"]  # type: ignore[union-attr]
    ]
    assert doc["summary"]["incomplete"] is True and code == 1  # type: ignore[index]


def test_corrupt_gzip_data_is_reported(tmp_path: Path) -> None:
    line = rt("request.start", request_id="r1", span_id="a" * 16, trace_id="t" * 32) + "\n"
    packed = bytearray(gzip.compress((line * 2000).encode()))
    packed[len(packed) // 2 : len(packed) // 2 + 16] = b"\xff" * 16
    (tmp_path / "x.log.gz").write_bytes(bytes(packed))
    code, doc, _ = run(str(tmp_path))
    assert code == 3
    note = doc["summary"]["unreadable_files"][0]  # type: ignore[index]
    assert "gzip" in note["reason"]
    err = CliRunner().invoke(main, ["analyze", str(tmp_path)]).stderr
    assert "could not read all of" in err and "incidents may be missing" in err


def test_lone_surrogate_from_a_client_is_valid_json(tmp_path: Path) -> None:
    span, trace = "a" * 16, "t" * 32
    start = rt("request.start", request_id="r1", span_id=span, trace_id=trace)
    # json.dumps keeps the escape as written: "\udc80" is valid per RFC 8259.
    end = rt("request.end", request_id="r1", span_id=span, trace_id=trace, outcome="ok",
             status=200, model="\udc80")
    assert "\\udc80" in end
    (tmp_path / "frontend.jsonl").write_text(f"{start}\n{end}\n")
    code, doc, _ = run(str(tmp_path / "frontend.jsonl"))
    assert code == 0, doc
    assert doc["summary"]["bad_lines"] == 0 and doc["summary"]["unlinked"] == 0  # type: ignore[index]
    assert doc["summary"]["requests"] == 1  # type: ignore[index]


def test_skew_only_overlap_is_not_a_duplicate(tmp_path: Path) -> None:
    # Worker-0's clock runs 400 ms ahead; the other requests link each worker file to
    # the frontend, which is how the offsets are known. Two sequential requests with
    # one id reach the workers only (their frontend lines were rotated away): A on
    # worker-0 at true time t for 100 ms, B on worker-1 at t + 350 ms. Stamped, A
    # seems to run from t + 400 ms: it overlaps B only because of the skew.
    spec = DynamoSpec(requests=300, duplicates=0, cancelled=0, worker_skew_us=(400_000, 0, 0))
    truth = write_dynamo_logs(tmp_path, spec)

    def template(name: str) -> dict[str, object]:
        rows = (tmp_path / name).read_text().splitlines()
        return dict(json.loads(next(r for r in reversed(rows) if "handle_payload" in r)))

    t = seconds(str(template("worker-1.jsonl")["time"])) + 1.0
    for name, stamped, span in (("worker-0.jsonl", t + 0.4, "a"), ("worker-1.jsonl", t + 0.35, "b")):
        base = template(name)
        with (tmp_path / name).open("a") as fh:
            for message, at in (("request received", stamped), ("request completed", stamped + 0.1)):
                row = dict(base, message=message, time=iso(at), request_id="seq-1",
                           x_request_id="seq-1", span_id=span * 16, parent_id=span * 8 + "9" * 8,
                           trace_id=span * 32)
                fh.write(json.dumps(row) + "\n")
    paths = [str(p) for p in truth.files]
    code, doc, _ = run(*paths)
    offsets = doc["summary"]["clock_offsets_ms"]  # type: ignore[index]
    assert offsets[str(tmp_path / "worker-0.jsonl")] == pytest.approx(-400.0, abs=5.0)
    assert _found(doc, "duplicate_in_flight") == 0 and code == 0
    # Without the correction the two overlap: the skew, not the ids, made them collide.
    from ridtrace.forensics.reading.inputs import expand_inputs
    from ridtrace.forensics.records.read import read_partials
    from ridtrace.forensics.records.spans import requests_from_partials
    from ridtrace.forensics.rules.overlap import duplicate_in_flight

    read = read_partials(expand_inputs(paths))
    assert len(duplicate_in_flight(requests_from_partials(read.partials, read.files))) == 1


def seconds(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def iso(seconds: float) -> str:
    from datetime import datetime

    stamp = datetime.fromtimestamp(seconds, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.parametrize("case", ["bad share", "no request", "unreadable"])
def test_exit_3_when_incomplete_and_allow_incomplete(tmp_path: Path, case: str) -> None:
    good = [
        rt("request.start", request_id=f"r{i}", span_id=f"{i + 1:016x}", trace_id="t" * 32)
        for i in range(50)
    ]
    if case == "bad share":
        lines = [*good, "not json at all", "nor this"]
    elif case == "no request":
        lines = [json.dumps({"time": "2026-11-29T10:00:00Z", "target": "x", "message": "hi"})]
    else:
        lines = good
        packed = gzip.compress(("\n".join(good) + "\n").encode())
        (tmp_path / "old.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    code, doc, _ = run(str(tmp_path))
    assert code == 3, doc["summary"]
    assert doc["summary"]["incomplete"] is True and doc["summary"]["incomplete_reasons"]  # type: ignore[index]
    code, _, _ = run(str(tmp_path), "--allow-incomplete")
    assert code == 0


def test_the_table_never_says_no_findings_over_an_incomplete_read(tmp_path: Path) -> None:
    # With -q nothing reaches stderr, so the table is all a reader sees: a bare
    # "No findings." over logs it could not read would be a confident false clean.
    (tmp_path / "app.log").write_text("not json\n" * 40)
    result = CliRunner().invoke(main, ["analyze", str(tmp_path), "-q"])
    assert result.exit_code == 3
    assert "No findings." not in result.stdout
    assert "incidents may be missing" in result.stdout
    assert "40 lines read but no request found in them" in result.stdout


def test_one_banner_in_200_lines_is_complete(tmp_path: Path) -> None:
    good = [
        rt(event, request_id=f"r{i}", span_id=f"{i + 1:016x}", trace_id="t" * 32)
        for i in range(100) for event in ("request.start", "request.end")
    ]
    (tmp_path / "frontend.jsonl").write_text("\n".join([*good, "one banner"]) + "\n")
    code, doc, _ = run(str(tmp_path))
    assert code == 0 and doc["summary"]["incomplete"] is False  # type: ignore[index]


def test_a_file_duckdb_has_no_memory_for_is_named_and_makes_the_result_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ridtrace.forensics.reading.parallel as parallel

    lines = [rt("request.start", request_id="1", span_id="a", trace_id="t"),
             rt("request.end", request_id="1", span_id="a", trace_id="t")]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    real_connect = parallel.connect

    def starved() -> object:
        con = real_connect()
        con.execute("SET memory_limit = '1MB'")  # less than the JSON reader's first buffer
        return con

    monkeypatch.setattr(parallel, "connect", starved)
    # A database of its own even for so small a read: the limit is the database's.
    monkeypatch.setattr(parallel, "_small_input", lambda sources: False)
    result = CliRunner().invoke(main, ["analyze", str(tmp_path), "--format", "json"])
    assert result.exit_code == 3, result.output
    summary = json.loads(result.stdout)["summary"]
    [note] = summary["unreadable_files"]
    assert Path(note["file"]).name == "frontend.jsonl"
    assert note["reason"].startswith("out of memory while reading it (")
    assert "--engine dask" in note["reason"]
    assert "frontend.jsonl: out of memory" in result.stderr


def test_a_named_pipe_is_read_whole_as_a_stream(tmp_path: Path) -> None:
    # `ridtrace analyze <(zcat app.jsonl.gz)` hands over a pipe: DuckDB and the line
    # numbering must not each open it (the second reader saw nothing: "0 lines", exit 0).
    pipe = tmp_path / "frontend.jsonl"
    os.mkfifo(pipe)
    lines = rt_request("a", "7", 0, 3) + rt_request("b", "7", 1, 2)
    text = "\n".join(sorted(lines, key=lambda x: json.loads(x)["time"])) + "\n"

    def write() -> None:
        with open(pipe, "w") as out:  # blocks until the reader opens it
            out.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    # A real process, so that a read that waits on the pipe fails the test, not the run.
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "analyze", str(pipe), "--format", "json", "-q"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    writer.join(timeout=30)
    assert not writer.is_alive()
    doc = json.loads(done.stdout)
    assert doc["summary"]["lines"] == 4
    assert _found(doc, "duplicate_in_flight") == 1
    assert done.returncode == 1


def test_a_walk_names_the_pipes_it_leaves_and_the_broken_links_it_cannot_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    os.mkfifo(tmp_path / "stream.jsonl")  # nobody writes: opening it would wait forever
    (tmp_path / "worker.jsonl").symlink_to(tmp_path / "rotated-away.jsonl")
    (tmp_path / "NOTES").symlink_to(tmp_path / "gone")
    code, doc, _ = run(str(tmp_path))
    summary = doc["summary"]
    ignored = {Path(n["file"]).name: n["reason"] for n in summary["ignored_files"]}  # type: ignore[index]
    unreadable = {Path(n["file"]).name: n["reason"] for n in summary["unreadable_files"]}  # type: ignore[index]
    assert ignored == {"stream.jsonl": "not a regular file (a pipe, socket or device)",
                       "NOTES": "a broken symbolic link"}
    assert unreadable == {"worker.jsonl": "a broken symbolic link"}
    assert summary["files"] == 1 and summary["requests"] == 1  # type: ignore[index]
    assert code == 3  # a log-named file could not be read: incidents may be missing


def test_a_socket_the_user_names_is_a_usage_error(tmp_path: Path) -> None:
    # A file the user names that cannot be read is exit 2; a socket was opened, failed
    # with ENXIO, and was an unreadable input: exit 3, "cannot open: No such device".
    import socket

    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "app.sock"))
        done = subprocess.run(
            [sys.executable, "-m", "ridtrace", "analyze", str(tmp_path / "app.sock"),
             str(tmp_path / "frontend.jsonl"), "-q"], capture_output=True, text=True,
            timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"cannot read {tmp_path / 'app.sock'}: a socket, not a file" in done.stderr


def test_a_socket_named_to_follow_is_said_to_be_one(tmp_path: Path) -> None:
    # Opening it fails with ENXIO: the follower said "No such device or address".
    import socket

    from ridtrace.forensics.live.follow import Follower, FollowSettings

    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "app.sock"))
        follower = Follower([str(tmp_path / "app.sock")], FollowSettings(from_start=True))
        follower.start()
        try:
            follower.run(lambda finding: True, stop=lambda: True)
        finally:
            follower.close()
    assert follower.summary()["unreadable_files"] == [
        {"file": str(tmp_path / "app.sock"), "reason": "cannot read it: a socket, not a file"}]


@pytest.mark.parametrize(("line", "what"), [
    # Dynamo's, logged outside the request's span (a spawned task): no span fields.
    ({"time": "2026-11-29T10:00:00.5Z", "level": "ERROR", "target": "dynamo_llm::http",
      "message": "engine generate call failed", "request_id": "1",
      "error": "Unlinked response; response task was dropped or cancelled"}, "an Unlinked error"),
    (json.loads(rt("response.unlinked", time="2026-11-29T10:00:00.5Z", request_id="1",
                   message="Unlinked response; response task was dropped or cancelled")),
     "an Unlinked error"),
    (json.loads(rt("stream.foreign_chunk", time="2026-11-29T10:00:00.5Z", request_id="1",
                   chunk_request_id="2")), "a foreign chunk"),
])
def test_an_error_line_with_no_span_id_is_named_not_dropped(
    tmp_path: Path, line: dict[str, object], what: str,
) -> None:
    # Requests are keyed by span id: such a line joined none and was dropped without a
    # word, so the report said "No findings", complete, exit 0, over the very error the
    # tool is for. It names the line now, and the result is incomplete.
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join([*rt_request("a", "1", 0, 1), json.dumps(line)]) + "\n")
    code, doc, _ = run(str(log))
    assert doc["summary"]["unreadable_files"] == [{  # type: ignore[index]
        "file": str(log), "reason": f"{what} at line 3 names no span_id, so no request "
        "holds it: the finding is missing (read that line)"}]
    assert code == 3


def test_an_empty_folder_is_not_reported_as_healthy_logs(tmp_path: Path) -> None:
    # No input is complete by the contract (exit 0), but a bare "No findings." over a
    # folder holding no log line read as a clean bill of health: a wrong path, logs not
    # shipped yet.
    result = CliRunner().invoke(main, ["analyze", str(tmp_path)])
    assert result.exit_code == 0
    assert "No findings: no log line was read." in result.stdout
    assert "no log lines found" in result.stderr


def test_a_window_that_holds_no_line_says_so_not_that_nothing_was_read(tmp_path: Path) -> None:
    # A mistyped year: every line was read, none falls in the window, and the table said
    # "no log line was read", as for an empty folder or a wrong path.
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    result = CliRunner().invoke(main, ["analyze", str(log), "--since", "2099-01-01"])
    assert result.exit_code == 0, result.output
    assert "No findings: none of the 2 lines read falls in the --since/--until window." in (
        result.stdout)


def test_a_window_between_lines_says_the_requests_across_it_were_checked(
    tmp_path: Path,
) -> None:
    # A window inside a request, between two of its lines: the request was checked, and
    # "none of the lines falls in the window" read as if nothing had been.
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a", "1", 0, 10)) + "\n")
    result = CliRunner().invoke(main, ["analyze", str(log), "--since", ts(2), "--until", ts(3)])
    assert result.exit_code == 0, result.output
    assert ("No findings: 1 request(s) ran across the --since/--until window, none of the "
            "2 lines read falls in it.") in result.stdout
