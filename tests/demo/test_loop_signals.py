"""Stop signals held back around the demo's event loop's making and closing."""

from __future__ import annotations

import asyncio
import signal

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
