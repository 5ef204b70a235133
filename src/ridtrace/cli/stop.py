"""How a command stopped by a signal exits: the shell's 128 + the signal's number, so a
CI job or `timeout` tells Ctrl-C (130) from SIGTERM (143) and neither from findings (1)."""

import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = [
    "EXIT_HUNG_UP", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "HungUp", "Terminated", "exit_code",
    "forget_stops", "hangup_to_handle", "interrupt_behind", "interrupt_to_handle",
    "quit_to_handle", "raise_hung_up", "raise_interrupted", "raise_terminated",
    "received_stop", "received_stop_signal", "unwind",
]

EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_HUNG_UP = 128 + 1  # SIGHUP's number on every Unix (Windows has no SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM, taken down the path of Ctrl-C so a stopped command cleans up the same."""


class HungUp(Terminated):
    """SIGHUP (the terminal or ssh session closed), taken down the same path."""


# The stop a signal asked for, raised or about to be: a library may turn the exception
# into one of its own (DuckDB's "Query interrupted", no context kept), still the stop.
_received: KeyboardInterrupt | None = None
_received_signal: int | None = None
# Seconds after which a signal that arrived inside the import system is sent again.
_REDELIVER_S = 0.01


def unwind(stop: KeyboardInterrupt, signum: int, frame: FrameType | None) -> None:
    """Raise `stop` from signal `signum`'s handler, where `frame` was interrupted; or,
    inside the import system, send the signal again a moment later."""
    global _received, _received_signal
    _received, _received_signal = stop, signum
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        # Raised inside the import system's lock bookkeeping (a module lock's weakref
        # callback), the exception is lost and the import lock stays held: every later
        # import, the reading threads', waited for ever, and so did the run. Sent again
        # a moment later, it lands once the import system is out of it.
        _send_again(signum)
        return
    _resend_lost_stops()
    raise stop


def _send_again(signum: int) -> None:
    """Send `signum` again in a moment, if the handler that took it still handles it:
    once the command has ended and put back the handlers it found, a stop is too late."""
    handler = signal.getsignal(signum)

    def again() -> None:
        if signal.getsignal(signum) is handler:
            os.kill(os.getpid(), signum)

    timer = threading.Timer(_REDELIVER_S, again)
    timer.daemon = True
    timer.start()


def _resend_lost_stops() -> None:
    """A stop raised where Python drops exceptions is sent again, not lost.

    Python code run between two lines of another's (a garbage-collector callback, as
    Dask's `GCDiagnosis`; a `__del__`; a weakref callback) has its exceptions printed as
    "Exception ignored in …" and dropped, through `sys.unraisablehook`. A SIGTERM whose
    handler ran inside one was lost: `analyze --engine dask` went on, and whoever sent
    it waited for a stop that never came. Sent again a moment later, the signal lands
    outside it. Each hook installed passes on to the one it replaced (a library's that
    passes on to an earlier one of ours made no loop).
    """
    if not getattr(sys.unraisablehook, "_resends_lost_stops", False):
        sys.unraisablehook = _stops_not_dropped(sys.unraisablehook)


def _stops_not_dropped(before: Callable[[Any], object]) -> Callable[[Any], None]:
    def hook(unraisable: Any) -> None:
        if unraisable.exc_value is not None and unraisable.exc_value is _received \
                and _received_signal is not None:
            _send_again(_received_signal)
            return
        before(unraisable)

    hook._resends_lost_stops = True  # type: ignore[attr-defined]
    return hook


def received_stop() -> KeyboardInterrupt | None:
    """The stop a signal asked for since `forget_stops`, if any."""
    return _received


def received_stop_signal() -> int | None:
    """The number of the signal behind `received_stop`, if one was received."""
    return _received_signal if _received is not None else None


def forget_stops() -> None:
    """A command starts: no stop received yet (commands run in one process one after
    another, as tests and embedding programs do)."""
    global _received
    _received = None


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    """A SIGTERM handler: unwind as Ctrl-C does, remembering it was SIGTERM."""
    unwind(Terminated(), signum, frame)


def raise_interrupted(signum: int, frame: FrameType | None) -> None:
    """A SIGINT handler: Python's own (KeyboardInterrupt), but kept out of the import
    system's bookkeeping, as `raise_terminated`."""
    unwind(KeyboardInterrupt(), signum, frame)


def interrupt_to_handle() -> int | None:
    """SIGINT, unless it is ignored (a shell's background job), which it must stay, or
    handled by another than Python's default (an embedding program's)."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return None
    return int(signal.SIGINT)


def interrupt_is_ours() -> bool:
    """Whether a command may take SIGINT as its stop: it is Python's default handler or
    ours (`interrupt_to_handle` let the command install it), not ignored (a background
    job) nor an embedding program's."""
    return signal.getsignal(signal.SIGINT) in (signal.default_int_handler, raise_interrupted)


def hangup_to_handle() -> int | None:
    """SIGHUP, for a command to stop on; None on a platform without it (Windows) or
    when it is ignored (``nohup``), which it must stay."""
    return _unless_ignored("SIGHUP")


def quit_to_handle() -> int | None:
    """SIGQUIT, for a server to stop on gracefully; None on a platform without it
    (Windows) or when it is ignored, which it must stay."""
    return _unless_ignored("SIGQUIT")


def _unless_ignored(name: str) -> int | None:
    sig = getattr(signal, name, None)
    if sig is None or signal.getsignal(sig) == signal.SIG_IGN:
        return None
    return int(sig)


def raise_hung_up(signum: int, frame: FrameType | None) -> None:
    """A SIGHUP handler: unwind as Ctrl-C does, remembering it was SIGHUP."""
    unwind(HungUp(), signum, frame)


def exit_code(stop: KeyboardInterrupt) -> int:
    """130 after Ctrl-C, 143 after SIGTERM, 129 after SIGHUP."""
    if isinstance(stop, HungUp):
        return EXIT_HUNG_UP
    return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt (or `Terminated`) `exc` was raised while handling, if any."""
    seen: set[int] = set()
    cause: BaseException | None = exc.__context__
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__context__
    return None
