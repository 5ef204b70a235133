"""Request targets uvicorn's httptools protocol mishandles (RFC 9112 section 3.2).

uvicorn hands any target llhttp reads to ``httptools.parse_url`` and takes its path:
an absolute-form target with an empty path (``http://host:8000``, which RFC 9112
section 3.2.2 reads as ``/``) has none, so it failed in a parser callback, a 400 that
said only "Invalid HTTP request received.".
"""

from __future__ import annotations

import httptools

__all__ = ["with_root_path"]


def with_root_path(target: bytes) -> bytes:
    """An absolute-form target with its empty path read as ``/`` (RFC 9112 section
    3.2.2: ``http://host:8000?q`` is ``http://host:8000/?q``); any other as it is."""
    if target.startswith(b"/") or target == b"*":
        return target
    try:
        if httptools.parse_url(target).path is not None:
            return target
    except httptools.HttpParserInvalidURLError:
        return target
    head, mark, query = target.partition(b"?")
    return head + b"/" + mark + query
