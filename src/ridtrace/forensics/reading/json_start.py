"""Lines that are surely no JSON text, seen from their first bytes: judging a text log's
lines skips the JSON parser, whose error was half the cost of each."""

from __future__ import annotations

import re

__all__ = ["cannot_be_json"]


# First bytes no JSON text begins with (after NULs and blanks): printable ASCII but
# the starts of an object, array, string, number or literal (the standard library also
# reads NaN and Infinity).
_NO_JSON_START = frozenset(bytes([b]) for b in range(0x21, 0x7F)) - {
    bytes([b]) for b in b'{["-0123456789tfn'}
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_BLANKS = b"\0 \t\r\n"


def cannot_be_json(text: bytes) -> bool:
    """Whether `text` is surely no JSON text, seen from its first bytes: a printable byte
    no JSON value begins with (``INFO``, ``[``, ``<``), or a number followed by a
    printable byte (an address or a date: ``127.0.0.1 - -``, ``2026-12-02 10:00``).
    False when unsure: the parser decides."""
    body = text.lstrip(_BLANKS)
    if body[:1] in _NO_JSON_START:
        return not body.startswith((b"NaN", b"Infinity"))
    number = _NUMBER.match(body)
    if number is None:
        return False
    after = body[number.end():].lstrip(b" \t\r\n")[:1]
    return bool(after) and 0x21 <= after[0] <= 0x7E
