"""The command line as a person meets it: Ctrl-C, a terminal of any width, help texts."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request
from tests.support.signals import hangup_as_from_a_terminal


def _interrupt_analyze_of_a_pipe(
    fifo: Path, requests: int, *, env: dict[str, str] | None = None,
    when: Callable[[], bool] = lambda: True, stop: signal.Signals = signal.SIGINT,
    options: tuple[str, ...] = (),
) -> tuple[int, str]:
    """`ridtrace analyze FIFO`, Ctrl-C (or `stop`) once `requests` requests are written
    and `when` holds, the writer still open: its exit code and stderr after the note
    that the pipe is read until its writer closes it.

    A named pipe holds the read open for as long as the test likes, so the signal lands
    mid-read.
    """
    os.mkfifo(fifo)
    process = subprocess.Popen([sys.executable, "-m", "ridtrace", "analyze", *options, str(fifo)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, **(env or {})},
                               preexec_fn=hangup_as_from_a_terminal)
    try:
        with open(fifo, "w") as writer:
            for i in range(requests):
                writer.write("\n".join(rt_request(f"{i + 1:016x}", f"r{i}", i, i + 1)) + "\n")
            writer.flush()
            deadline = time.monotonic() + 60
            while not when():
                assert time.monotonic() < deadline and process.poll() is None
                time.sleep(0.01)
            process.send_signal(stop)
            _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    note = f"ridtrace: reading {fifo}, a named pipe, until its writer closes it\n"
    assert err.startswith(note), err
    return process.returncode, err.removeprefix(note)


def test_ctrl_c_during_analyze_exits_130_without_a_traceback(tmp_path: Path) -> None:
    code, err = _interrupt_analyze_of_a_pipe(tmp_path / "frontend.jsonl", 1)
    assert code == 130, err  # not 1, which a CI gate reads as findings
    assert "Traceback" not in err and "Aborted" not in err
    assert err.strip() == "ridtrace: interrupted"


@pytest.mark.parametrize(("stop", "code", "said"), [
    (signal.SIGINT, 130, "interrupted"),
    # A CI job's timeout, `timeout`, a container stop: SIGTERM killed the process where
    # it stood, the staged copy with it left behind.
    (signal.SIGTERM, 143, "terminated"),
    # The terminal or ssh session closed: SIGHUP killed it where it stood, too.
    (signal.SIGHUP, 129, "hung up"),
])
def test_a_stopped_analyze_leaves_no_staged_copy_behind(
    tmp_path: Path, stop: signal.Signals, code: int, said: str
) -> None:
    # A pipe (like an archive) is read through a decoded copy in the temp directory. The
    # interrupted run leaves at once, before the reading thread's cleanup: the copy, as
    # large as the log, stayed behind.
    temp = tmp_path / "tmp"
    temp.mkdir()
    # More than the read takes from a pipe (1 MiB) before it starts the copy.
    exit_code, err = _interrupt_analyze_of_a_pipe(
        tmp_path / "frontend.jsonl", 3000, env={"TMPDIR": str(temp)},
        when=lambda: bool(list(temp.glob("ridtrace-*"))),  # the copy is being written
        stop=stop,
    )
    assert exit_code == code, err
    assert err.strip() == f"ridtrace: {said}"
    assert list(temp.iterdir()) == []


# `ridtrace analyze --engine dask` with its read held on a worker of the cluster, run as a
# module as `python -m ridtrace` runs: a pipe, which once held the read there, is now
# refused on Dask before anything is read (exit 2).
_HELD_DASK_RUN = """
import sys, time

import ridtrace.forensics.dask_engine.engine as engine

def _held(client, *args, **kwargs):
    open(sys.argv[-1] + ".held", "w").close()  # the cluster is up and reading
    while True:  # short tasks, as reading blocks are: a worker closes between them
        client.submit(time.sleep, 0.2, pure=False).result()

if __name__ == "__main__":
    engine.load_requests = _held
    from ridtrace.cli.main import run
    run()
"""


@pytest.mark.extra("dask")
def test_sigterm_on_a_dask_run_shuts_its_cluster_down(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    scratch = temp / "dask-scratch-space"  # where Dask's local cluster keeps its files
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 1)) + "\n")
    (tmp_path / "held_dask_run.py").write_text(_HELD_DASK_RUN)
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    process = subprocess.Popen(
        [sys.executable, "-m", "held_dask_run", "analyze", "--engine", "dask", str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(temp), "PYTHONPATH": path})
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{log}.held").exists():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.01)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 143, err
    # A cluster shut down in order removes its scheduler's and workers' directories.
    assert sorted(p.name for p in scratch.iterdir()) == ["global.lock", "purge.lock"], err


def test_version() -> None:
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("ridtrace ")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_audit_on_a_terminal_prints_its_table_not_escape_codes_as_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pandas as pd

    from ridtrace.cli import forensics_render

    monkeypatch.setattr(forensics_render.sys, "stdout", _Terminal())
    rows = pd.DataFrame({"header": ["request-id"], "requests": [16], "clients": [1],
                         "first_seen": ["2026-12-01T18:44:17Z"], "last_seen": ["2026-12-01T18:44:19Z"]})
    summary = {"files": 3, "lines": 993, "bad_lines": 0, "requests": 242,
               "bad_line_samples": [], "unreadable_files": [], "incomplete": False}
    text = forensics_render.render_audit(rows, summary, by="header", to_terminal=True)
    plain = _ANSI.sub("", text)
    assert "\x1b" not in plain, plain  # every escape is a whole code, none printed as text
    assert "[3m" not in plain and "[0m" not in plain
    assert "request-id" in plain and "2026-12-01T18:44:17Z" in plain
    # The counts line is the logs' numbers, not a highlighter's colours.
    assert "read 3 file(s): 993 line(s), 0 bad, 242 request(s)\n" in text


def test_each_commands_allow_incomplete_help_names_its_own_exit_codes() -> None:
    # trace's 3 becomes 1 ("no match"), not 0: the shared help text said 0.
    def option_help(*command: str) -> str:
        out = CliRunner().invoke(main, [*command, "--help"], terminal_width=200).stdout
        return next(line for line in out.splitlines() if line.strip().startswith("--allow-incomplete"))

    assert "Exit 1, not 3" in option_help("trace")
    for command in (["analyze"], ["audit"], ["export", "jaeger"]):
        assert "Exit 0, not 3" in option_help(*command)


def test_audit_plot_help_names_every_bucket_a_plot_can_use() -> None:
    # The help said "per second, minute, hour or day": a use spanning years is drawn per
    # month or per year (docs/cli.md), so the help sent readers of long logs astray.
    from ridtrace.forensics.views.audit import BUCKETS

    out = " ".join(CliRunner().invoke(main, ["audit", "--help"], terminal_width=200).stdout.split())
    plot_help = out.split("--plot FILE", 1)[1].split("--format", 1)[0]
    assert all(name in plot_help for name, _, _ in BUCKETS), plot_help


def test_under_nohup_a_hangup_leaves_analyze_reading_to_the_end(tmp_path: Path) -> None:
    # nohup ignores SIGHUP so the job outlives its terminal: ridtrace keeps it ignored.
    fifo = tmp_path / "frontend.jsonl"
    os.mkfifo(fifo)
    process = subprocess.Popen(
        [sys.executable, "-m", "ridtrace", "analyze", "--format", "json", str(fifo)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    try:
        with open(fifo, "w") as writer:
            writer.write("\n".join(rt_request("a" * 16, "r0", 0, 1)) + "\n")
            writer.flush()
            process.send_signal(signal.SIGHUP)  # while the read waits for more
            writer.write("\n".join(rt_request("b" * 16, "r1", 2, 3)) + "\n")
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert json.loads(out)["summary"]["requests"] == 2


@pytest.mark.parametrize("command", [("analyze",), ("audit",), ("trace",), ("export", "jaeger")])
def test_every_forensics_help_names_sighups_exit_status(command: tuple[str, ...]) -> None:
    # SIGHUP stops these commands with 129 (docs/cli.md's exit status table), but their
    # --help listed only 130 and 143 among the stops.
    out = CliRunner().invoke(main, [*command, "--help"], terminal_width=200).stdout
    assert "129" in out, out


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, click.Command]]:
    found = []
    for name, command in group.commands.items():
        found.append((" ".join((*path, name)), command))
        if isinstance(command, click.Group):
            found.extend(_commands(command, (*path, name)))
    return found


@pytest.mark.parametrize(("name", "command"), _commands(main), ids=[n for n, _ in _commands(main)])
def test_every_option_says_in_its_help_what_it_is(name: str, command: click.Command) -> None:
    # `--help` is the reference a user has at hand: `serve worker --first-token-delay`
    # and both serve commands' `--log-file` / `--log-level` showed a bare type.
    bare = [param.opts[0] for param in command.params
            if isinstance(param, click.Option) and not param.help]
    assert not bare, f"ridtrace {name}: {bare} have no help text"


@pytest.mark.parametrize(("name", "command"), _commands(main), ids=[n for n, _ in _commands(main)])
def test_no_option_help_is_only_a_unit(name: str, command: click.Command) -> None:
    # `serve frontend --help` said "Seconds (default 30)." for --first-byte-timeout,
    # --chunk-timeout and --total-timeout alike: three timeouts, nothing on which is which.
    bare = [param.opts[0] for param in command.params
            if isinstance(param, click.Option) and param.help
            and len(re.findall(r"\w+", re.sub(r"\([^)]*\)", "", param.help))) < 2]
    assert not bare, f"ridtrace {name}: {bare} say only a unit"


def test_the_window_options_help_allows_an_offset() -> None:
    # "(ISO 8601, UTC)" read as "give it in UTC"; a time with +01:00 is taken as such
    # (docs/cli.md), only a time without an offset is UTC.
    out = " ".join(CliRunner().invoke(main, ["analyze", "--help"], terminal_width=200).stdout.split())
    for option in ("--since TEXT", "--until TEXT"):
        assert "UTC unless it names an offset" in out.split(option, 1)[1].split("--", 1)[0], out


@pytest.mark.parametrize(("name", "command"), _commands(main), ids=[n for n, _ in _commands(main)])
def test_every_command_help_names_its_exit_status(name: str, command: click.Command) -> None:
    # `serve frontend|worker --help` and `demo --help` said nothing of their exit codes
    # (2 for a configuration they refuse, 3 a server that could not start, demo's 1).
    if isinstance(command, click.Group):
        return
    out = " ".join(CliRunner().invoke(main, [*name.split(), "--help"],
                                      terminal_width=200).stdout.split())
    assert "Exit status: " in out, out
    if name.startswith(("serve", "demo")):
        assert "2 bad usage" in out or "2 a configuration it will not start with" in out, out


def test_serve_help_says_what_is_open_without_keys() -> None:
    # `serve --help` said only "Run an inference frontend or an echo worker": nothing of
    # keys, of what stays open with them, nor where to read before going on a network.
    runner = CliRunner()
    group = runner.invoke(main, ["serve", "--help"]).output
    assert "--api-key" in group and "--worker-token" in group and "/metrics" in group
    assert "Before putting it on a network" in " ".join(group.split())
    frontend = " ".join(runner.invoke(main, ["serve", "frontend", "--help"]).output.split())
    assert "Without --api-key every route is open to anyone who reaches the port" in frontend
    worker = " ".join(runner.invoke(main, ["serve", "worker", "--help"]).output.split())
    assert "Without --worker-token anyone who reaches the port can post work" in worker


@pytest.mark.parametrize(("name", "command"), [("", main), *_commands(main)],
                         ids=["ridtrace", *(n for n, _ in _commands(main))])
def test_every_command_takes_dash_h_for_its_help(name: str, command: click.Command) -> None:
    # A new user's first try, `ridtrace analyze -h`, said "No such option: -h" (exit 2).
    words = name.split()
    short = CliRunner().invoke(main, [*words, "-h"], terminal_width=200)
    assert short.exit_code == 0, short.output
    assert short.stdout == CliRunner().invoke(main, [*words, "--help"], terminal_width=200).stdout


def test_frontend_help_lists_every_route_it_serves() -> None:
    # Its "Without --api-key every route is open" came after a list missing two of them.
    from ridtrace.frontend_plugin.routes.count_tokens import COUNT_TOKENS_PATH

    out = " ".join(CliRunner().invoke(main, ["serve", "frontend", "--help"],
                                      terminal_width=200).stdout.split())
    for route in (COUNT_TOKENS_PATH, "/v1/responses/input_tokens"):
        assert route in out, out


def test_trace_without_logs_says_its_one_argument_was_taken_as_the_id() -> None:
    # `ridtrace trace demo-out/logs` said only "Missing argument 'PATH...'".
    got = CliRunner().invoke(main, ["trace", "demo-out/safe/logs"])
    assert got.exit_code == 2
    assert ("Missing argument 'PATH...'. 'demo-out/safe/logs' was taken as the ID: give the "
            "ID to look for, then the logs (trace ID PATH...)") in got.stderr
