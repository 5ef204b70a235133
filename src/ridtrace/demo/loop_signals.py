"""Stop signals while the demo's event loop runs: taken by the loop, raised after it.

The demo's handlers raise ``KeyboardInterrupt`` (or the CLI's SIGTERM / SIGHUP kinds)
wherever the signal lands, so that every path out stops its processes. Inside a
running event loop "wherever" includes asyncio's own callbacks (``gather``'s
``_done_callback``, a future's wake-up): the callback was lost, the task waiting on it
never woke, and ``asyncio.run``'s clean-up waited for it to finish cancelling forever —
the demo hung after Ctrl-C with its frontend and workers still up (seen once in about a
dozen, with spans exported over gRPC). Raised inside a lock's bookkeeping it also came
out as another error.

While the loop runs, :func:`stop_signals_cancel` lets the loop take these signals
(``loop.add_signal_handler``: they arrive between callbacks) and cancel the work; once
the loop is done the first one is raised again, so the process's own handler runs at a
point where raising is safe. A second signal raises at once, as before, for a stop that
will not wait.

Around the loop's making and closing, where no loop takes them, :func:`stop_signals_deferred`
holds them back: raised inside ``new_event_loop()`` a signal left a loop half made,
whose ``__del__`` then printed "Exception ignored … no attribute '_signal_handlers'"
under the demo's one-line "interrupted" message (seen once in a full test run).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["stop_signals_cancel", "stop_signals_deferred"]

_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def stop_signals_cancel(
    loop: asyncio.AbstractEventLoop, cancel: Callable[[], None]
) -> Iterator[list[int]]:
    """While the block runs ``loop`` (not inside it: the signal is raised again on
    leaving), a stop signal calls ``cancel()`` instead of the process's handler; yields
    the list the signals received are appended to. On leaving, the process's handlers
    are back and the first signal received is raised again."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # only the main thread gets signals
        return
    previous = _replaceable_handlers()

    def taken(signum: int) -> None:
        _note(received, previous, signum)
        cancel()

    for signum in previous:
        loop.add_signal_handler(signum, taken, signum)
    try:
        yield received
    finally:
        for signum, handler in previous.items():
            loop.remove_signal_handler(signum)  # which sets SIG_DFL / Python's default
            signal.signal(signum, handler)
        if received:
            # The process's handler, at a point where raising is safe; what it raises
            # replaces the cancellation the work ended with.
            signal.raise_signal(received[0])


@contextlib.contextmanager
def stop_signals_deferred(*, all_of_them: bool = False) -> Iterator[None]:
    """While the block runs, the first stop signal is only noted, and raised again on
    leaving (to the process's own handler); a second one raises at once, as before.
    `all_of_them`: a second one is only noted too, for a block too short to need a way
    out (a child's spawn, which a signal raised inside leaves running unlisted)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread gets signals
        return
    received: list[int] = []
    previous = _replaceable_handlers()

    def noted(signum: int, _frame: object) -> None:
        if all_of_them:
            received.append(signum)
            return
        _note(received, previous, signum)

    for signum in previous:
        signal.signal(signum, noted)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if received:
            signal.raise_signal(received[0])


_Handler = Callable[..., object] | int


def _replaceable_handlers() -> dict[int, _Handler]:
    """The stop signals' handlers now, of those Python may replace and put back: one
    not set from Python, or ignored (nohup), stays as it is."""
    handlers = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    return {signum: handler for signum, handler in handlers.items()
            if handler not in (None, signal.SIG_IGN)}


def _note(received: list[int], previous: dict[int, _Handler], signum: int) -> None:
    """Note a stop signal; the second one stops now, through the process's handler,
    whatever is running."""
    if received:
        signal.signal(signum, previous[signum])
        signal.raise_signal(signum)
    received.append(signum)
