"""Worker URLs as they may be shown: in log lines, span attributes, errors, endpoints.

A worker URL may carry credentials (``http://user:password@host:port``) for a proxy in
front of the worker. The frontend connects with the full URL; everything it writes
down or shows goes through :func:`redacted_url`, the one place that decides what of a
URL is safe to show.
"""

from __future__ import annotations

__all__ = ["REDACTED_USERINFO", "redacted_url"]

REDACTED_USERINFO = "***"
"""What stands in for a URL's ``user:password`` part."""


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
