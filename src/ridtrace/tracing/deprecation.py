"""Policy for the deprecated request-id headers: ignore, warn once, record, advertise."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from email.utils import format_datetime

from ridtrace.contract import DEPRECATED_HEADER
from ridtrace.tracing.eventlog import EventLog

__all__ = ["deprecated_headers_used", "deprecation_response_headers", "warn_once"]

events = EventLog(__name__)

# Process-wide on purpose: "one WARN per header name per process" must hold across
# every middleware and interceptor instance, so this cannot live on an instance.
_warned: set[str] = set()
_warned_lock = threading.Lock()


_IGNORED = "ignoring deprecated client request id header"
# The frontend's legacy id policy keys requests by the header, as the pre-fix frontend
# did: "ignoring" said the opposite of what it does.
_USED = "deprecated client request id header used as the request id (legacy id policy)"
_message = _IGNORED


def deprecated_headers_used(used: bool) -> None:
    """Whether this process keys requests by the deprecated headers (the frontend's
    legacy id policy): its WARN then says so. The last app built decides, as the WARN
    is once per header per process."""
    global _message
    _message = _USED if used else _IGNORED


def warn_once(header: str) -> None:
    """Log the deprecation WARN for ``header`` the first time this process sees it."""
    if header in _warned:
        return
    with _warned_lock:
        if header in _warned:
            return
        _warned.add(header)
    events.warning(_message, event=DEPRECATED_HEADER, header=header)


def reset_warnings() -> None:
    """Forget which headers were warned about (tests and long-lived embedders)."""
    with _warned_lock:
        _warned.clear()


def _forget_warnings_in_child() -> None:
    """A forked child is a process of its own: it warns once itself (its lines carry
    its own pid, and an audit of its log found no WARN for a header it was sent). A
    new lock too: another thread of the parent may have held this one at the fork."""
    global _warned_lock
    _warned.clear()
    _warned_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_warnings_in_child)


def deprecation_response_headers(
    *,
    deprecation_at: datetime | None,
    sunset_at: datetime | None,
    link: str | None,
) -> list[tuple[bytes, bytes]]:
    """Encode RFC 9745 ``Deprecation``, RFC 8594 ``Sunset`` and the deprecation ``Link``."""
    headers: list[tuple[bytes, bytes]] = []
    if deprecation_at is not None:
        # RFC 9745: an RFC 9651 Date structured field, "@" + Unix seconds.
        stamp = int(_as_utc(deprecation_at).timestamp())
        headers.append((b"deprecation", f"@{stamp}".encode("ascii")))
    if sunset_at is not None:
        headers.append((b"sunset", format_datetime(_as_utc(sunset_at), usegmt=True).encode()))
    if link:
        headers.append((b"link", f'<{link}>; rel="deprecation"'.encode("latin-1")))
    return headers


def _as_utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
