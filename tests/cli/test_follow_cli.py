"""`ridtrace analyze --follow` options, output and exit codes, as a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli import follow as follow_module
from ridtrace.cli.follow import table_line
from ridtrace.cli.follow_stop import StopFlag
from ridtrace.cli.main import main
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.forensics.helpers import rt, rt_request, ts
from tests.support.follower import start_follower


@pytest.mark.parametrize("args", [
    ["--from-start"], ["--fail-fast"], ["--window", "5m"],
    ["--follow", "--format", "csv"], ["--follow", "--since", "2026-01-01"],
    ["--follow", "--window", "soon"], ["--follow", "--window", "0s"],
    ["--settle", "2s"], ["--follow", "--settle", "-1s"], ["--follow", "--settle", "soon"],
    # The Dask engine's options without it, as without --follow: ignored, a scheduler
    # address looked used.
    ["--follow", "--scheduler", "tcp://10.0.0.1:8786"], ["--follow", "--partition-size", "1MiB"],
    ["--follow", "--no-workers-timeout", "5s"],
])
def test_usage_errors_exit_2(
    tmp_path: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # In-process: a usage error is click's exit 2 before any follow starts, the same
    # code in a CliRunner as in a process (the processes cost ~0.5 CPU-s each). Options
    # accepted would start a follow: it returns 0 here at once instead of following on.
    monkeypatch.setattr(follow_module, "run_follow", lambda *a, **k: 0)
    done = CliRunner().invoke(main, ["analyze", str(tmp_path), *args])
    assert done.exit_code == 2, (done.output, done.exception)


@pytest.mark.parametrize("settle", [[], ["--settle", "0"]])
def test_fail_fast_exits_1_at_the_first_error_finding(tmp_path: Path, settle: list[str]) -> None:
    write_logs(tmp_path, SynthSpec(requests=400))
    # In-process: it ends on its own (no signal) and is checked by its output and exit
    # code, which a CliRunner gives as a process does.
    done = CliRunner().invoke(main, ["analyze", str(tmp_path), "--follow", "--from-start",
                                     "--fail-fast", "--format", "json", "-q", *settle])
    assert done.exit_code == 1, (done.stderr, done.exception)
    findings = [line for line in done.stdout.splitlines() if line]
    assert len(findings) == 1 and '"severity":"error"' in findings[0]
    assert '"errors": 1' in done.stderr.splitlines()[-1]  # the summary so far


# SIGHUP: the terminal or ssh session running the follower closed. It killed the
# follower where it stood, with no summary and its decoded copies left behind.
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGHUP])
def test_a_stop_prints_the_final_table(tmp_path: Path, stop: signal.Signals) -> None:
    write_logs(tmp_path, SynthSpec(requests=400))
    follower = start_follower([str(tmp_path)], "--from-start", fmt="table")
    follower.wait_for(lambda: any("crossed_stream" in p.text for p in follower.stdout),
                      timeout=60, what="a crossed stream line")
    code = follower.stop(stop)
    text = [p.text for p in follower.stdout]
    assert code == 1
    assert "summary" in text
    assert any(line.split() == ["crossed_stream", "1"] for line in text), text
    line = next(t for t in text if "  crossed_stream  " in t)
    assert "request_id=" in line and "frontend.jsonl:" in line and "worker-" in line


def test_clean_logs_exit_0_and_too_many_bad_lines_exit_3(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    write_logs(tmp_path, SynthSpec(requests=100, crossed=0, collisions=0, duplicates=0))
    follower = start_follower([str(tmp_path)], "--from-start")
    assert follower.stop() == 0
    assert follower.summary()["errors"] == 0
    with open(log, "a") as fh:
        fh.write("not json\n" * 50)
    follower = start_follower([str(tmp_path)], "--from-start")
    assert follower.stop() == 3
    assert follower.summary()["incomplete"] is True
    follower = start_follower([str(tmp_path)], "--from-start", "--allow-incomplete")
    assert follower.stop() == 0


def test_a_table_line_caps_the_evidence_json_keeps_it_all() -> None:
    # A duplicate held by ten callers cited twenty lines on one ~2000-column line.
    evidence = [{"file": "logs/frontend.jsonl", "line": n} for n in range(1, 21)]
    finding = {"time": "2026-12-01T16:15:25.908838Z", "kind": "duplicate_in_flight",
               "request_id": "r", "x_request_id": "r", "evidence": evidence}
    line = table_line(finding)
    assert line.endswith("logs/frontend.jsonl:1 logs/frontend.jsonl:2 logs/frontend.jsonl:3 "
                         "logs/frontend.jsonl:4 … +16 more")
    finding["evidence"] = evidence[:4]
    assert table_line(finding).endswith("logs/frontend.jsonl:4")


def test_a_table_line_cuts_a_megabyte_id_as_the_batch_table_does() -> None:
    # A 5 MB request_id printed whole: one finding was a line of 5 MB on the terminal.
    finding = {"time": "t", "kind": "unlinked", "request_id": "G" * 5_000_000,
               "x_request_id": 7, "evidence": [{"file": "f.jsonl", "line": 1}]}
    line = table_line(finding)
    assert len(line) < 1200
    assert f"request_id='{'G' * 1000}…' (4999000 more characters: --format json" in line
    assert line.endswith("has it whole) x_request_id=7  f.jsonl:1")


def test_a_table_line_quotes_an_id_that_could_forge_another_or_a_citation() -> None:
    # Printed bare, this request_id read as request id 'a', client id 'victim' and a
    # first citation of /etc/passwd: the line is offered to alerting scripts.
    finding = {"time": "t", "kind": "duplicate_in_flight",
               "request_id": "a x_request_id=victim  /etc/passwd:1", "x_request_id": "b",
               "evidence": [{"file": "logs/frontend.jsonl", "line": 142}]}
    assert table_line(finding) == ("t  duplicate_in_flight  "
                                   "request_id='a x_request_id=victim  /etc/passwd:1' "
                                   "x_request_id=b  logs/frontend.jsonl:142")
    for forged, shown in (("it's", "'it\\'s'"), ("", "''"), ("k=v", "'k=v'"),
                          ('say "hi"', "'say \"hi\"'"), ("back\\slash x", "'back\\\\slash x'")):
        finding["request_id"] = forged
        assert f"request_id={shown} x_request_id=b" in table_line(finding)


def test_an_input_that_never_appeared_makes_the_follow_incomplete(tmp_path: Path) -> None:
    # A mistyped path is waited for; stopped, the follow said complete and exit 0 on
    # logs it never read, where the batch read refuses a missing path (exit 2).
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    follower = start_follower([str(tmp_path), str(tmp_path / "wroker.jsonl")], "--from-start")
    assert follower.stop() == 3
    summary = follower.summary()
    assert summary["missing_inputs"] == [str(tmp_path / "wroker.jsonl")]
    assert summary["incomplete_reasons"] == [
        f"{tmp_path / 'wroker.jsonl'}: never appeared while followed, nothing read from it"
    ]
    follower = start_follower([str(tmp_path), str(tmp_path / "wroker.jsonl")], "--from-start",
                              "--allow-incomplete")
    assert follower.stop() == 0


def test_a_named_link_to_nothing_is_said_to_be_one_while_waited_for(tmp_path: Path) -> None:
    # The batch read refuses it as "a symbolic link loop"; followed, it was only
    # "waiting for … to appear", as if the name were mistyped.
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    (tmp_path / "a.jsonl").symlink_to("b.jsonl")
    (tmp_path / "b.jsonl").symlink_to("a.jsonl")
    loop = str(tmp_path / "a.jsonl")
    follower = start_follower([str(tmp_path / "frontend.jsonl"), loop], "--from-start")
    try:
        follower.wait_for(
            lambda: f"ridtrace: waiting for {loop} to appear (a symbolic link loop)"
            in follower.stderr,
            timeout=30, what="the note on the link")
    finally:
        code = follower.stop()
    assert code == 3
    assert follower.summary()["incomplete_reasons"] == [
        f"{loop}: never appeared while followed (a symbolic link loop), nothing read from it"]


def test_a_glob_that_never_matched_makes_the_follow_incomplete(tmp_path: Path) -> None:
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    typo = str(tmp_path / "*.jsnol")
    follower = start_follower([str(tmp_path / "*.jsonl"), typo], "--from-start")
    try:
        # Printed just after the line the start waits for: its pump may not have read it.
        follower.wait_for(lambda: f"ridtrace: waiting for {typo} to appear" in follower.stderr,
                          timeout=30, what="the note on the missing input")
    finally:
        code = follower.stop()  # a failed wait left the follower running past the suite
    assert code == 3
    summary = follower.summary()
    assert (summary["missing_inputs"], summary["lines"]) == ([typo], 2)
    assert summary["incomplete_reasons"] == [
        f"{typo}: never appeared while followed, nothing read from it"
    ]


def test_an_input_read_and_then_removed_is_no_missing_input(tmp_path: Path) -> None:
    log = tmp_path / "frontend.jsonl"
    follower = start_follower([str(log)], "--from-start")
    try:
        lines = [*rt_request("a", "dup", 0, 5), *rt_request("b", "dup", 1, 6)]
        log.write_text("\n".join(sorted(lines, key=_time)) + "\n")
        # Its finding printed is what says the log was read. A descriptor on it is not:
        # the follower's look at a named file's first bytes holds one for a moment, and
        # the file removed then was never opened to be followed (0 lines).
        follower.wait_for(lambda: bool(follower.findings()), timeout=30, what="the duplicate")
        log.unlink()
        follower.wait_for(lambda: not follower.holds_open(Path(f"{log} (deleted)")),
                          timeout=30, what="the removed log closed")
    finally:
        code = follower.stop()
    summary = follower.summary()
    assert (summary["lines"], summary["incomplete"]) == (4, False), summary
    assert code == 1


def test_a_signal_ends_the_pause_between_polls(tmp_path: Path) -> None:
    # time.sleep resumed after the handler: with a long --poll-interval the stop waited
    # out the pause, past a container's grace period, and lost the summary to SIGKILL.
    lines = [*rt_request("a", "dup", 0, 5), *rt_request("b", "dup", 1, 6)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(sorted(lines, key=_time)) + "\n")
    follower = start_follower([str(tmp_path)], "--from-start", "--poll-interval", "10m")
    # The poll that printed it is done: the follower pauses now.
    try:
        follower.wait_for(lambda: bool(follower.findings()), timeout=30, what="the duplicate")
        code = follower.stop(timeout=15)
    finally:
        follower.process.kill()  # gone already, unless the stop waited out the pause
    assert code == 1
    assert follower.summary()["duplicate_in_flight"] == 1


def test_a_pause_longer_than_a_wait_can_take_is_no_internal_error() -> None:
    # threading's wait refused a timeout past TIMEOUT_MAX: `--poll-interval 99999999999h`
    # was an OverflowError, exit 4, at the follower's first idle poll.
    with StopFlag(quiet=True) as stop:
        timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        try:
            stop.sleep(99999999999 * 3600.0)  # returns at the signal, as any pause does
        finally:
            timer.cancel()
    assert stop()


def _time(line: str) -> str:
    return str(json.loads(line)["time"])


def test_the_follower_is_ready_to_parse_when_it_says_following(tmp_path: Path) -> None:
    # pyarrow imported pandas at the first chunk parsed: the first finding after the
    # start came about a second late (0.4-1.1 s here, half the 2 s live target).
    follower = start_follower([str(tmp_path)])  # returns once "following" is printed
    try:
        maps = Path(f"/proc/{follower.process.pid}/maps").read_text()
    finally:
        follower.stop()
    assert "/pandas/_libs/" in maps


def test_a_table_line_leaves_out_an_id_the_logs_do_not_have() -> None:
    # A request whose client sent no x-request-id printed 'x_request_id=None', which is
    # also what a client sending the id 'None' printed.
    finding = {"time": "2026-12-01T16:15:25.908838Z", "kind": "unlinked", "request_id": "r",
               "x_request_id": None, "evidence": [{"file": "frontend.jsonl", "line": 3}]}
    assert table_line(finding) == (
        "2026-12-01T16:15:25.908838Z  unlinked             request_id=r  frontend.jsonl:3"
    )
    finding["x_request_id"] = "None"
    assert "request_id=r x_request_id=None  frontend.jsonl:3" in table_line(finding)


def test_more_files_than_the_open_file_limit_are_listed_not_a_crash(tmp_path: Path) -> None:
    # A follower holds each followed file open. A directory of more files than the soft
    # limit (1024 by default; 128 here, and no higher hard limit to raise it to) used
    # every descriptor, and the poll's own next file stopped it: a traceback, exit 4.
    from tests.forensics.helpers import rt_request

    for n in range(200):
        lines = rt_request(f"{n:x}", f"r{n}", 0, 1)
        (tmp_path / f"pod-{n:03}.log").write_text("\n".join(lines) + "\n")
    limited = ["sh", "-c", 'ulimit -n 128 && exec "$@"', "sh"]
    follower = start_follower([str(tmp_path)], "--from-start", runner=limited)
    code = follower.stop(signal.SIGINT)
    summary = follower.summary()
    assert not any("Traceback" in line for line in follower.stderr), follower.stderr
    unfollowed = [n for n in summary["unreadable_files"] if n["reason"].startswith("not followed")]
    assert unfollowed and summary["files"] + len(unfollowed) == 200
    assert summary["incomplete"] is True
    assert code == 3


def test_a_second_signal_while_the_summary_is_made_still_prints_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # `timeout` then a container stop, or Ctrl-C twice: the second signal came while the
    # follower made its summary or closed its files, after the follow's own handlers were
    # put back, so it killed the run (143 or 130, the summary lost or cut off) instead of
    # exiting as the findings say. The follow had printed its findings: exit 1.
    import os

    from ridtrace.cli.follow import run_follow
    from ridtrace.forensics.live.follow import Follower

    write_logs(tmp_path, SynthSpec(requests=100))
    run, summary = Follower.run, Follower.summary

    def stopped_run(self: Follower, *args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the first stop: read what is written, end
        run(self, *args, **kwargs)  # type: ignore[arg-type]

    def summary_then_signal(self: Follower) -> dict[str, object]:
        os.kill(os.getpid(), signal.SIGINT)  # the second, while the summary is made
        return summary(self)

    from ridtrace.cli import quick_exit

    monkeypatch.setattr(quick_exit, "_requested", [False])
    monkeypatch.setattr(Follower, "run", stopped_run)
    monkeypatch.setattr(Follower, "summary", summary_then_signal)
    try:
        code = run_follow((str(tmp_path),), fmt="json", from_start=True, window="10m",
                          interval="0.05s", fail_fast=False, allow_incomplete=False, quiet=True)
    except KeyboardInterrupt:
        pytest.fail("the second signal killed the follow before its summary")
    assert code == 1
    assert json.loads(capsys.readouterr().err.splitlines()[-1])["errors"] >= 1
    # And the process leaves at once (from the console entry): tearing the window's state
    # down took seconds after a large follow, and a signal then ended it with 143.
    assert quick_exit.requested()


_IGNORING_SIGINT = [sys.executable, "-c", "import os, signal, sys; "
                    "signal.signal(signal.SIGINT, signal.SIG_IGN); "
                    "os.execv(sys.argv[1], sys.argv[1:])"]


def test_the_start_line_names_ctrl_c_when_ctrl_c_stops_the_follow(tmp_path: Path) -> None:
    # The start line asked whose SIGINT handler was in place after the follow had set its
    # own, found another's, and told every interactive user to send SIGTERM instead.
    (tmp_path / "frontend.jsonl").write_text("\n".join(rt_request("a", "1", 0, 1)) + "\n")
    follower = start_follower([str(tmp_path)], "--from-start")
    try:
        assert any(line.endswith("; Ctrl-C prints the summary") for line in follower.stderr)
    finally:
        code = follower.stop(signal.SIGINT)
    assert code == 0 and follower.summary()["requests"] == 1


def test_a_sigint_the_follower_was_started_ignoring_stays_ignored(tmp_path: Path) -> None:
    # A background job of a shell without job control starts with SIGINT ignored: the
    # batch read keeps it so, the follower stopped on it (a Ctrl-C meant for a script's
    # foreground step ended the follower the script had started).
    def unlinked(span: str, rid: str, at: float) -> str:
        lines = [*rt_request(span, rid, at, at + 1),
                 rt("response.unlinked", time=ts(at + 1), request_id=rid, span_id=span,
                    trace_id=f"{span:0>32}")]
        return "".join(line + "\n" for line in lines)

    log = tmp_path / "frontend.jsonl"
    log.write_text(unlinked("a", "1", 0))
    follower = start_follower([str(tmp_path)], "--from-start", runner=_IGNORING_SIGINT)
    try:
        assert any("SIGTERM prints the summary" in line for line in follower.stderr)
        # Its first finding printed: the loop runs, its stop signals are set up.
        follower.wait_for(lambda: len(follower.findings()) == 1, timeout=30, what="a finding")
        os.kill(follower.process.pid, signal.SIGINT)  # discarded at once when ignored
        with log.open("a") as fh:
            fh.write(unlinked("b", "2", 5))
        follower.wait_for(lambda: len(follower.findings()) == 2, timeout=30,
                          what="a finding written after the ignored SIGINT")
    finally:
        code = follower.stop(signal.SIGTERM)  # stopped whatever failed: SIGINT would not
    assert code == 1


def test_an_embedding_programs_sigint_handler_stays_its_own() -> None:
    # The batch read leaves a handler other than Python's default to its program; the
    # follower's stop took SIGINT over all the same.
    def its_own(signum: int, frame: object) -> None:
        raise AssertionError("not called here")

    previous = signal.signal(signal.SIGINT, its_own)
    try:
        with StopFlag(quiet=True):
            assert signal.getsignal(signal.SIGINT) is its_own
        signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's: taken
        with StopFlag(quiet=True):
            assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
