"""An exception's text where a log line or a span needs it, even when ``str()`` fails.

An exception class whose ``__str__`` raises (a library's bug, a required attribute
missing) is still a crash to record. ``traceback`` prints such an exception as
``<exception str() failed>``; ridtrace's lines and spans do the same instead of raising
from the code that records the crash.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["UNPRINTABLE", "exception_text", "record_exception"]

UNPRINTABLE = "<exception str() failed>"
"""The text of an exception whose ``str()`` raised, as ``traceback`` writes it."""


def exception_text(value: BaseException | None) -> str:
    """``str(value)``, or :data:`UNPRINTABLE` when that raises."""
    try:
        return str(value)
    except Exception:
        return UNPRINTABLE


def record_exception(span: Span, exc: Exception) -> None:
    """``span.record_exception(exc)``, which takes ``str(exc)`` itself: for an exception
    whose ``str()`` raises, the same ``exception`` event with the text ``traceback``
    gives it. Raised from a middleware's ``finally``, that error replaced the
    application's exception and skipped the rest: the span never ended, the request
    had no ``request.end`` line and its context stayed current."""
    try:
        span.record_exception(exc)
    except Exception:
        kind = type(exc)
        module = kind.__module__
        span.add_event("exception", {  # the attributes the SDK's own event has
            "exception.type": kind.__qualname__ if module in ("", "builtins")
            else f"{module}.{kind.__qualname__}",
            "exception.message": UNPRINTABLE,
            "exception.stacktrace": "".join(traceback.format_exception(exc)),
            "exception.escaped": "False",
        })
