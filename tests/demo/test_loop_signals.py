"""A stop signal while the demo's event loop runs cancels the work and is raised after.

Raised where it landed — inside one of asyncio's own callbacks — it lost the callback
that would wake a task, and asyncio.run's clean-up then waited for that task forever:
the demo hung after Ctrl-C, its frontend and workers still up.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from ridtrace.demo.loop_signals import stop_signals_cancel


class _Stopped(KeyboardInterrupt):
    pass


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped


@pytest.fixture
def raising_handlers() -> Iterator[None]:
    """The demo's kind of handlers: raise wherever the signal lands."""
    previous = {s: signal.signal(s, _raise_stopped) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _run_until_signalled(signum: int) -> list[int]:
    seen_inside: list[object] = []

    async def work() -> None:
        seen_inside.append(signal.getsignal(signum))
        # Delivered in a plain loop callback, where raising loses what runs next.
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signum)
        await asyncio.sleep(30)

    with asyncio.Runner() as runner:
        loop = runner.get_loop()

        def cancel_all() -> None:
            for task in asyncio.all_tasks(loop):
                task.cancel()

        with stop_signals_cancel(loop, cancel_all) as received:
            runner.run(work())
    assert seen_inside[0] is not _raise_stopped  # the loop's, while it runs
    return received


@pytest.mark.usefixtures("raising_handlers")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_signal_cancels_the_work_and_the_handler_raises_after_the_loop(signum: int) -> None:
    with pytest.raises(_Stopped) as stopped:
        _run_until_signalled(signum)
    # Raised by the process's own handler, from the clean-up, not from inside the loop.
    assert isinstance(stopped.value.__context__, asyncio.CancelledError)
    assert signal.getsignal(signum) is _raise_stopped


def test_a_signal_nohup_ignores_stays_ignored() -> None:
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        async def work() -> None:
            os.kill(os.getpid(), signal.SIGHUP)
            await asyncio.sleep(0.01)  # room for a handled signal to cancel this sleep

        with asyncio.Runner() as runner, stop_signals_cancel(
            runner.get_loop(), lambda: None
        ) as received:
            runner.run(work())
        assert received == []
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
