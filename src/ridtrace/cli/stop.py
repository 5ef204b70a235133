"""How a command stopped by a signal exits: the shell's 128 + the signal's number, so a
CI job or `timeout` tells Ctrl-C (130) from SIGTERM (143) and neither from findings (1)."""

import signal
from types import FrameType

__all__ = [
    "EXIT_HUNG_UP", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "HungUp", "Terminated", "exit_code",
    "hangup_to_handle", "interrupt_behind", "quit_to_handle", "raise_hung_up",
    "raise_terminated",
]

EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_HUNG_UP = 128 + 1  # SIGHUP's number on every Unix (Windows has no SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM, taken down the path of Ctrl-C so a stopped command cleans up the same."""


class HungUp(Terminated):
    """SIGHUP (the terminal or ssh session closed), taken down the same path."""


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    """A SIGTERM handler: unwind as Ctrl-C does, remembering it was SIGTERM."""
    raise Terminated


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
    raise HungUp


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
