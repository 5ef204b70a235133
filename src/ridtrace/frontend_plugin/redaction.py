"""Worker URLs: checked once at start-up, and shown only redacted.

A worker URL may carry credentials (``http://user:password@host:port``) for a proxy in
front of the worker. The frontend connects with the full URL; everything it writes
down or shows goes through :func:`redacted_url`, the one place that decides what of a
URL is safe to show. :func:`checked_worker_url` refuses, when the settings are made,
a URL the connection would fail on or read differently from the redaction.
"""

from __future__ import annotations

import functools
from urllib.parse import SplitResult, urlsplit

__all__ = ["REDACTED_USERINFO", "checked_worker_url", "redacted_url"]

REDACTED_USERINFO = "***"
"""What stands in for a URL's ``user:password`` part."""


@functools.lru_cache(maxsize=256)  # the few worker URLs, shown on every request's lines
def redacted_url(url: str) -> str:
    """``url`` with any userinfo replaced: ``http://***@host:port/path``.

    Everything up to the last ``@`` is treated as userinfo. RFC 3986 ends the
    authority at the first ``/``, ``?`` or ``#``, but a password holding one of them
    unencoded would then leak the rest of itself; a worker URL with an ``@`` in its path
    shows too little instead, which is the safe way to be wrong.
    """
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme, sep, _ = head.partition("://")
    return (scheme + sep if sep else "") + REDACTED_USERINFO + "@" + tail


def checked_worker_url(url: str) -> SplitResult:
    """``url`` split, or ValueError naming it redacted: http(s), a host, a valid port,
    and no unencoded ``/``, ``?`` or ``#`` in its credentials.

    Such a character ends the authority for the URL parser (RFC 3986), so the frontend
    would connect to a host taken from the password, and an error would quote the
    password's start, while the redaction hides it all.
    """
    shown = redacted_url(url)
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL" (`http://[::1`), naming no option
        raise ValueError(f"worker URL {shown!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"worker URL must be http(s)://host[:port]: {shown!r}")
    if "@" in url.partition("://")[2] and "@" not in parts.netloc:
        raise ValueError(f"worker URL {shown!r}: percent-encode '/', '?' and '#' in its "
                         "user and password")
    after_userinfo = url.rpartition("@")[2]
    if "?" in after_userinfo or "#" in after_userinfo:
        # The dispatch posts to host, port and path: the rest was dropped without a word.
        # Not shown: a query may hold a credential, as the userinfo may.
        base = shown.partition("?")[0].partition("#")[0]
        raise ValueError(f"worker URL {base + '?…'!r}: a query or fragment is never sent; "
                         "give http(s)://host[:port][/path]")
    if any(char.isspace() or not char.isprintable() for char in parts.hostname):
        # A space pasted into the name: no resolver knows it, every request got 502.
        raise ValueError(f"worker URL {shown!r}: the host holds a space or control character")
    try:
        parts.port  # noqa: B018  (raises on a port that is not a number in range)
    except ValueError:
        raise ValueError(f"worker URL {shown!r}: the port must be a number from 1 to "
                         "65535") from None
    if parts.port == 0:
        raise ValueError(f"worker URL {shown!r}: the port must be a number from 1 to 65535")
    return parts
