"""An exception's text where a log line or a span needs it, even when ``str()`` fails.

An exception class whose ``__str__`` raises (a library's bug, a required attribute
missing) is still a crash to record. ``traceback`` prints such an exception as
``<exception str() failed>``; ridtrace's lines and spans do the same instead of raising
from the code that records the crash.
"""

from __future__ import annotations

__all__ = ["UNPRINTABLE", "exception_text"]

UNPRINTABLE = "<exception str() failed>"
"""The text of an exception whose ``str()`` raised, as ``traceback`` writes it."""


def exception_text(value: BaseException | None) -> str:
    """``str(value)``, or :data:`UNPRINTABLE` when that raises."""
    try:
        return str(value)
    except Exception:
        return UNPRINTABLE
