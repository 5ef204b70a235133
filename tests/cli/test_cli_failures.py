"""How `ridtrace` ends when the run itself goes wrong: a clear message and an exit
code a CI gate can tell from findings (1) or incomplete input (3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ridtrace.cli import main as cli_main
from ridtrace.cli.main import EXIT_INTERNAL_ERROR, main
from tests.forensics.helpers import rt_request, ts


def _logs(tmp_path: Path) -> Path:
    lines = rt_request("a" * 16, "r1", 0, 2) + rt_request("b" * 16, "r1", 1, 3)
    log = tmp_path / "logs" / "frontend.jsonl"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n")
    return log


def test_a_full_disk_on_stdout_is_exit_2_with_a_message(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "ridtrace", "analyze", str(log)],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "cannot write the report to standard output" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_failure_of_ridtrace_itself_is_exit_4_not_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    def broken() -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli_main, "main", broken)
    with pytest.raises(SystemExit) as done:
        cli_main.run()
    assert done.value.code == EXIT_INTERNAL_ERROR == 4
    err = capsys.readouterr().err
    assert "RuntimeError: a bug" in err and "internal error" in err


def test_ctrl_c_is_exit_130_not_1(monkeypatch: pytest.MonkeyPatch) -> None:
    # click turns Ctrl-C into "Aborted!" and exit 1: a CI gate would read error findings.
    import click

    @click.command()
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setitem(main.commands, "interrupted", interrupted)
    result = CliRunner().invoke(main, ["interrupted"])
    assert result.exit_code == 130 and "interrupted" in result.stderr


def test_a_command_after_an_interrupted_one_makes_its_temporary_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An interrupt closes the staging of temporary copies for the command it ends, so
    # that no reading thread leaves one behind; in a process that goes on (a test, a
    # library caller), the next command's compressed logs were each "read failed".
    import gzip

    import click

    import ridtrace.forensics.reading.staging  # noqa: F401  (loaded, as after a read)

    @click.command()
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setitem(main.commands, "interrupted", interrupted)
    assert CliRunner().invoke(main, ["interrupted"]).exit_code == 130
    log = _logs(tmp_path)
    packed = log.with_name("frontend.jsonl.1.gz")
    packed.write_bytes(gzip.compress(log.read_bytes()))
    log.unlink()
    result = CliRunner().invoke(main, ["analyze", str(packed.parent), "--format", "json"])
    assert result.exit_code == 1, result.output  # the duplicate, read from the copy
    assert json.loads(result.stdout)["summary"]["unreadable_files"] == []


def test_since_must_come_before_until(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    result = CliRunner().invoke(main, ["analyze", str(log), "--since", ts(5), "--until", ts(1)])
    assert result.exit_code == 2 and "--since must be before --until" in result.stderr


def test_a_window_with_no_request_is_an_answer_not_an_incomplete_read(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json",
                                       "--since", ts(100), "--until", ts(200)])
    summary = json.loads(result.stdout)["summary"]
    assert (summary["lines"], summary["requests"], summary["incomplete"]) == (0, 0, False)
    assert result.exit_code == 0


def test_our_own_trace_export_beside_the_logs_is_not_a_bad_line(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    export = log.parent / "traces.json"
    assert CliRunner().invoke(main, ["export", "jaeger", str(log), "-o", str(export)]).exit_code == 0
    assert b"\n" not in export.read_bytes().strip()  # one line of JSON
    result = CliRunner().invoke(main, ["analyze", str(log.parent), "--format", "json"])
    summary = json.loads(result.stdout)["summary"]
    assert summary["bad_lines"] == 0
    assert summary["ignored_files"] == [
        {"file": str(export), "reason": "a JSON document, not JSON lines"}]
    assert result.exit_code == 1  # the duplicate in flight, nothing incomplete


@pytest.mark.extra("plot")
def test_audit_plot_draws_a_time_at_year_1(tmp_path: Path) -> None:
    from tests.forensics.helpers import rt

    lines = [rt("request.start", time=ts(i), request_id=f"r{i}", span_id=f"{i + 1:016x}",
                trace_id=f"{i:032x}", deprecated_headers="x-dynamo-request-id")
             for i in range(3)]
    # Go's zero time, as a service with an unset clock field logs it.
    lines.append(rt("request.start", time="0001-01-01T00:00:00Z", request_id="rz",
                    span_id="9" * 16, trace_id="9" * 32, deprecated_headers="x-dynamo-request-id"))
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    plot = tmp_path / "use.png"
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", str(plot),
                                       "--format", "json"])
    assert result.exit_code == 0, result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # 2,026 years of days are not zero-filled (739,000 of them, 60 MB of JSON): the
    # days with use are listed, the first with four digits.
    daily = json.loads(result.stdout)["daily"]
    assert next(iter(daily)) == "0001-01-01" and len(daily) <= 4
    assert sum(day["x-dynamo-request-id"] for day in daily.values()) == 4


def _legends_saved(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The legend texts of every figure saved from now on, in order."""
    from matplotlib.figure import Figure

    legends: list[list[str]] = []
    save = Figure.savefig

    def savefig(fig: Figure, *args: Any, **kwargs: Any) -> None:
        legends.append([t.get_text() for t in fig.axes[0].get_legend().get_texts()])
        save(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return legends


@pytest.mark.extra("plot")
def test_audit_plot_draws_header_names_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Names come from the logs: "$...$" was read as math by matplotlib (one it could not
    # parse: exit 4 with its traceback) and a name starting with "_" left the legend.
    from tests.forensics.helpers import rt

    names = ["$\\undefinedcmd$", "_hidden", "a$b$c", "x-" + "y" * 200 + "\x1b[2J"]
    lines = [rt("request.start", time=ts(i), request_id=f"r{i}", span_id=f"{i + 1:016x}",
                trace_id=f"{i:032x}", deprecated_headers=name)
             for i, name in enumerate(names)]
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    legends = _legends_saved(monkeypatch)
    plot = tmp_path / "use.png"
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (legend,) = legends
    (long,) = [text for text in legend if text.startswith("x-")]
    assert sorted(text for text in legend if text != long) == sorted(names[:3])
    assert long.endswith("…") and len(long) == 60  # cut, and no ESC even had it fit


@pytest.mark.extra("plot")
def test_audit_plot_writes_a_control_in_a_header_name_as_its_escape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A control picture (U+241B for ESC) is in no font matplotlib ships: a box in the
    # legend, and a "Glyph missing" UserWarning with ridtrace's source line under -q.
    import warnings

    from tests.forensics.helpers import rt

    log = tmp_path / "frontend.jsonl"
    log.write_text(rt("request.start", time=ts(0), request_id="r0", span_id="1" * 16,
                      trace_id="1" * 32, deprecated_headers="x-old\x1b[31m") + "\n")
    legends = _legends_saved(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(main, ["audit", str(log), "-q", "--plot",
                                           str(tmp_path / "use.png")])
    assert result.exit_code == 0, result.output
    assert legends == [["x-old\\u001b[31m"]]
    assert [str(w.message) for w in caught if "Glyph" in str(w.message)] == []


def test_times_at_the_edges_of_the_calendar_are_answers_not_crashes(tmp_path: Path) -> None:
    from tests.forensics.helpers import rt

    log = _logs(tmp_path)
    with log.open("a") as out:  # the last second of year 9999, as a leap second
        out.write(rt("request.start", time="9999-12-31T23:59:60Z", request_id="z",
                     span_id="c" * 16, trace_id="c" * 32) + "\n")
    for window, requests in ((["--since", "0001-01-01"], 2), (["--until", "9999-12-31"], 2),
                             (["--since", "9999-01-01"], 0), (["--until", "0001-01-02"], 0)):
        result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", *window])
        assert result.exception is None or isinstance(result.exception, SystemExit), window
        summary = json.loads(result.stdout)["summary"]
        assert summary["requests"] == requests and summary["bad_lines"] == 1, (window, summary)


def test_a_follower_that_cannot_write_its_findings_is_exit_2(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "ridtrace", "analyze", str(log.parent), "--follow",
             "--from-start"],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert "cannot write findings to standard output" in done.stderr
    assert "Traceback" not in done.stderr


def test_dash_as_output_is_standard_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _logs(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-o", "-"])
    assert json.loads(result.stdout)["summary"]["requests"] == 2
    assert not (tmp_path / "-").exists()


def test_a_trace_export_past_the_sniff_beside_the_logs_is_not_a_log(tmp_path: Path) -> None:
    # The demo's own traces.json is ~200 KiB, one line: past the 64 KiB sniff it was read
    # as a log whose one line is no record, and `analyze demo-out/safe` exited 3.
    from tests.forensics.helpers import rt_request

    lines = [line for i in range(400)
             for line in rt_request(f"{i + 1:016x}", f"r{i}", 2 * i, 2 * i + 1)]
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    export = run / "traces.json"
    done = CliRunner().invoke(main, ["export", "jaeger", str(run / "logs"), "-o", str(export)])
    assert done.exit_code == 0, done.output
    assert export.stat().st_size > 64 * 1024
    result = CliRunner().invoke(main, ["analyze", str(run), "--format", "json"])
    summary = json.loads(result.stdout)["summary"]
    assert summary["ignored_files"] == [
        {"file": str(export), "reason": "a Jaeger trace file, not JSON lines"}]
    assert summary["bad_lines"] == 0 and not summary["incomplete"], summary
    assert result.exit_code == 0


@pytest.mark.extra("plot")
def test_audit_plot_to_a_path_it_cannot_write_is_exit_2_not_a_crash(tmp_path: Path) -> None:
    # A typo'd directory in --plot raised FileNotFoundError from matplotlib: a traceback
    # and exit 4, "ridtrace itself failed", for a user's mistake.
    log = _logs(tmp_path)
    for plot in (tmp_path / "no-such-dir" / "use.png", log / "use.png"):  # under a file too
        result = CliRunner().invoke(main, ["audit", str(log), "--plot", str(plot)])
        assert result.exit_code == 2, result.output
        assert "cannot write" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("plot", ["/dev/stdout", "/dev/fd/1", "redirected"])
def test_audit_plot_to_standard_output_is_refused_when_the_report_goes_there(
    tmp_path: Path, plot: str
) -> None:
    # `--plot /dev/stdout` wrote the PNG and then the JSON report to standard output,
    # exit 0: no parser read the report. `-` and -o's own file were already refused.
    log = _logs(tmp_path)
    out = tmp_path / "out.txt"
    image = str(out) if plot == "redirected" else plot
    with out.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "ridtrace", "audit", str(log), "--format", "json",
             "--plot", image], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "is standard output, which carries the report" in done.stderr
    assert out.read_bytes() == b""


def test_an_export_stopped_half_way_leaves_the_previous_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The Jaeger file is streamed a trace at a time: stopped in the middle (Ctrl-C,
    # SIGTERM, a full disk), the file was left cut short, a truncated document that the
    # next step of a pipeline read as the answer.
    from ridtrace.forensics.views import jaeger

    log = _logs(tmp_path)
    target = tmp_path / "traces.json"
    target.write_text('{"data": []}\n')

    def stopped_half_way(traces: object, write: Callable[[str], object]) -> int:
        write('{"data": [{"traceID": ')
        raise KeyboardInterrupt

    monkeypatch.setattr(jaeger, "write_jaeger", stopped_half_way)
    result = CliRunner().invoke(main, ["export", "jaeger", str(log), "-o", str(target)])
    assert result.exit_code == 130, result.output
    assert target.read_text() == '{"data": []}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "traces.json"]


def test_a_report_file_is_replaced_whole_and_keeps_its_mode(tmp_path: Path) -> None:
    log = _logs(tmp_path)
    report = tmp_path / "report.json"
    report.write_text("old")
    report.chmod(0o640)
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-o",
                                       str(report)])
    assert result.exit_code == 1, result.output  # the duplicate in flight
    assert json.loads(report.read_text())["summary"]["duplicate_in_flight"] == 1
    assert report.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "fresh.json"
    CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-o", str(fresh)])
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() would make it


def test_a_report_to_a_device_is_written_in_place(tmp_path: Path) -> None:
    # /dev/null (or a named pipe, /dev/stdout) cannot be replaced by a finished file.
    result = CliRunner().invoke(main, ["analyze", str(_logs(tmp_path)), "-o", "/dev/null"])
    assert result.exit_code == 1, result.output
    assert Path("/dev/null").is_char_device()


def test_a_report_through_a_symbolic_link_replaces_what_it_points_to(tmp_path: Path) -> None:
    real = tmp_path / "reports" / "latest.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "report.json"
    link.symlink_to(real)
    result = CliRunner().invoke(main, ["analyze", str(_logs(tmp_path)), "--format", "json",
                                       "-o", str(link)])
    assert result.exit_code == 1, result.output
    assert link.is_symlink() and json.loads(real.read_text())["summary"]["requests"] == 2



def test_ctrl_c_inside_a_locks_bookkeeping_is_still_an_interrupt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ctrl-C landing in a Condition's wait surfaces as "cannot release un-acquired lock"
    # with the interrupt as its context: it was exit 4 ("ridtrace itself failed").
    import click

    @click.command()
    def interrupted() -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("cannot release un-acquired lock") from None

    monkeypatch.setitem(main.commands, "interrupted", interrupted)
    result = CliRunner().invoke(main, ["interrupted"])
    assert result.exit_code == 130 and "interrupted" in result.stderr


def _with_closed(streams: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`ridtrace ARGS` started with `streams` closed (``<&-``, ``>&-``, ``2>&-``)."""
    from tests.support.servers import child_pythonpath

    closed = ["sh", "-c", f'exec "$0" "$@" {streams}', sys.executable, "-m", "ridtrace", *args]
    return subprocess.run(closed, capture_output=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": child_pythonpath()})


@pytest.mark.parametrize("command", [["analyze", "-"], ["trace", "r1", "-"],
                                     ["analyze", "-", "--follow"],
                                     # Its link leads nowhere: "a broken symbolic link".
                                     ["analyze", "/dev/stdin"]])
def test_dash_with_standard_input_closed_is_a_usage_error(command: list[str]) -> None:
    # Started with `<&-` (or by a daemon without one), '-' stopped the read with an
    # AttributeError (exit 4), and a follower waited forever on 0 files.
    result = _with_closed("<&-", *command)
    assert result.returncode == 2, result.stderr
    assert b"standard input is closed" in result.stderr and b"Traceback" not in result.stderr


def test_closed_standard_output_or_error_is_no_internal_error(tmp_path: Path) -> None:
    # Python sets a stream closed at start to None: each use was an AttributeError,
    # exit 4, whatever the logs held.
    log = str(_logs(tmp_path))
    no_stdout = _with_closed(">&-", "analyze", log)
    assert no_stdout.returncode == 2, no_stdout.stderr  # the report could not be written
    assert b"cannot write the report to standard output" in no_stdout.stderr
    assert b"Traceback" not in no_stdout.stderr
    no_stderr = _with_closed("2>&-", "analyze", log, "--format", "json")
    assert no_stderr.returncode == 1  # the duplicate, as with stderr open
    assert json.loads(no_stderr.stdout)["summary"]["duplicate_in_flight"] == 1
    report = tmp_path / "report.json"
    neither = _with_closed(">&- 2>&-", "analyze", log, "--format", "json", "-o", str(report))
    assert neither.returncode == 1 and json.loads(report.read_text())["findings"]


def test_a_stop_a_library_turned_into_an_error_of_its_own_is_still_the_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SIGTERM landing in a DuckDB query surfaced as DuckDB's "Query interrupted", with
    # no context kept: exit 4 and a traceback ("ridtrace itself failed") for a stop.
    import click

    @click.command()
    def terminated() -> None:
        stopped = False
        try:
            signal.raise_signal(signal.SIGTERM)
        except KeyboardInterrupt:
            stopped = True
        if stopped:  # outside the handler: the library's error has no context
            raise RuntimeError("Query interrupted")

    monkeypatch.setitem(main.commands, "terminated", terminated)
    result = CliRunner().invoke(main, ["terminated"])
    assert result.exit_code == 143 and "terminated" in result.stderr


def test_a_stop_inside_the_import_system_is_delivered_again_outside_it() -> None:
    # Raised in a module lock's weakref callback, the stop was lost and the import lock
    # left held: the reading threads' imports, and the run, waited for ever.
    from types import SimpleNamespace

    from ridtrace.cli import stop

    delivered: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: delivered.append(signum))
    try:
        inside = SimpleNamespace(f_code=SimpleNamespace(co_filename="<frozen importlib._bootstrap>"))
        stop.raise_terminated(signal.SIGUSR1, inside)  # type: ignore[arg-type]  # no raise
        assert isinstance(stop.received_stop(), stop.Terminated)
        deadline = time.monotonic() + 30
        while not delivered:  # the handler runs in this thread, between sleeps
            assert time.monotonic() < deadline, "the signal was not sent again"
            time.sleep(0.01)
        assert delivered == [signal.SIGUSR1]
        outside = SimpleNamespace(f_code=SimpleNamespace(co_filename=__file__))
        with pytest.raises(stop.Terminated):
            stop.raise_terminated(signal.SIGUSR1, outside)  # type: ignore[arg-type]
    finally:
        signal.signal(signal.SIGUSR1, previous)
        stop.forget_stops()


@pytest.mark.extra("plot")
def test_audit_plot_quiet_keeps_matplotlibs_start_up_warnings_off_stderr(tmp_path: Path) -> None:
    # A HOME matplotlib cannot make its config and cache folders in (a service account's,
    # read-only): "mkdir -p failed" and "created a temporary cache directory" under -q.
    home = tmp_path / "home-is-a-file"
    home.touch()
    env = {k: v for k, v in os.environ.items()
           if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "audit", str(_logs(tmp_path)), "-q",
         "--plot", str(tmp_path / "use.png")],
        capture_output=True, text=True, env={**env, "HOME": str(home)}, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and (tmp_path / "use.png").stat().st_size > 0
