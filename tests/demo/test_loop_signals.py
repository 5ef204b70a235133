"""Stop signals held back around the demo's event loop's making and closing."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from ridtrace.demo.loop_signals import stop_signals_deferred


def test_a_stop_signal_while_the_loop_is_made_is_raised_once_it_is_whole() -> None:
    # Raised inside new_event_loop() it left a half-made loop, whose __del__ printed
    # "Exception ignored ... no attribute '_signal_handlers'" under the demo's message.
    made: list[asyncio.AbstractEventLoop] = []
    with pytest.raises(KeyboardInterrupt), stop_signals_deferred():
        signal.raise_signal(signal.SIGINT)
        made.append(asyncio.new_event_loop())  # not interrupted
    (loop,) = made
    assert not loop.is_closed()
    loop.close()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_stop_signal_raises_at_once() -> None:
    reached = []
    with pytest.raises(KeyboardInterrupt), stop_signals_deferred():
        signal.raise_signal(signal.SIGINT)
        reached.append("after the first")
        signal.raise_signal(signal.SIGINT)
        reached.append("after the second")
    assert reached == ["after the first"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_stop_duckdb_turned_into_its_own_error_ends_as_the_demos_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while the demo analysed a run's logs landed in a DuckDB query, which raised
    # "Query interrupted" with no context: the generic "ridtrace: interrupted" came out,
    # not the line that says every process the demo started was stopped.
    import signal as signals

    from click.testing import CliRunner

    import ridtrace.demo.main as demo_main
    from ridtrace.cli import stop
    from ridtrace.cli.main import main

    def interrupted_query(*args: object, **kwargs: object) -> int:
        stop._received = KeyboardInterrupt()  # what the demo's handler records
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(demo_main, "run_demo", interrupted_query)
    handlers = {sig: signals.getsignal(sig) for sig in (signals.SIGINT, signals.SIGTERM, signals.SIGHUP)}
    try:
        result = CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "out")])
    finally:
        for sig, handler in handlers.items():
            signals.signal(sig, handler)
    assert result.exit_code == 130, (result.output, result.exception)
    assert "interrupted: every process the demo started has been stopped" in result.stderr
