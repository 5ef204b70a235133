"""The media types Anthropic's API takes for ``image`` and ``document`` blocks.

A base64 image must be JPEG, PNG, GIF or WebP (``image/jpg``, from a file's extension,
is the usual slip), a base64 document a PDF and a ``text`` document ``text/plain``; the
real API refuses any other (400) where they were served here, so code tested against
the frontend broke at its first real call with a picture or a file. So was base64
``data`` that is not base64 (a data URL, a file path).
"""

from __future__ import annotations

import binascii
from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of
from ridtrace.tracing.identity import shown_text

__all__ = ["check_media_types"]


def check_media_types(block: Any, where: str) -> None:
    """Refuse an ``image`` or ``document`` block (``where`` names it) whose source's
    media type Anthropic's API does not take for it; other blocks pass."""
    if isinstance(block, dict) and block.get("type") == "image":
        _check_image_type(block.get("source"), f"{where}.source")
    if isinstance(block, dict) and block.get("type") == "document":
        _check_document_type(block.get("source"), f"{where}.source")


# The base64 image types Anthropic's API takes; "image/jpg" (from a file's extension)
# is the usual slip, refused there and served here before.
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _check_image_type(source: Any, where: str) -> None:
    if not isinstance(source, dict) or source.get("type") != "base64":
        return  # a URL or a file id: the type is the server's to find out
    media_type = source.get("media_type")
    if media_type not in _IMAGE_TYPES:
        # The type is the client's text: capped and escaped before it is logged.
        sent = f"'{shown_text(media_type, 64)}'" if isinstance(media_type, str) else (
            kind_of(media_type))
        raise InvalidRequest(f"'{where}.media_type' must be {', '.join(_IMAGE_TYPES[:-1])} "
                             f"or {_IMAGE_TYPES[-1]}, not {sent}", param=f"{where}.media_type")
    _check_base64(source.get("data"), f"{where}.data")


# The one media type Anthropic's API takes per document source that names one: a Word
# file sent as base64, or Markdown as text/markdown, is refused there (400).
_DOCUMENT_TYPES = {"base64": "application/pdf", "text": "text/plain"}


def _check_document_type(source: Any, where: str) -> None:
    kind = source.get("type") if isinstance(source, dict) else None
    wanted = _DOCUMENT_TYPES.get(kind) if isinstance(kind, str) else None
    if wanted is None:
        return  # a URL, a file id or content blocks: no media type to name
    if source.get("media_type") == wanted:
        if kind == "base64":
            _check_base64(source.get("data"), f"{where}.data")
        return
    media_type = source.get("media_type")
    sent = f"'{shown_text(media_type, 64)}'" if isinstance(media_type, str) else (
        kind_of(media_type))
    raise InvalidRequest(f"'{where}.media_type' of a {kind} document must be "
                         f"{wanted}, not {sent}", param=f"{where}.media_type")


def _check_base64(data: Any, where: str) -> None:
    """Refuse base64 ``data`` that is empty or not base64: a file path, a data URL
    (``data:image/png;base64,...``) or a URL in ``data`` were served here, the
    engines never reading the picture, and refused by Anthropic's API (400). Line
    breaks (``base64`` the command wraps at 76) are let through."""
    if not isinstance(data, str) or not data:
        raise InvalidRequest(f"'{where}' must be the file's bytes as non-empty base64 text, "
                             f"not {'an empty string' if data == '' else kind_of(data)}",
                             param=where)
    try:
        binascii.a2b_base64(data.replace("\r", "").replace("\n", ""), strict_mode=True)
    except (binascii.Error, ValueError):
        # Not echoed: the data is the client's, and may be megabytes of it.
        raise InvalidRequest(f"'{where}': invalid base64 data", param=where) from None
