"""Lone surrogates spelt as the JSON escape that carried them.

RFC 8259 lets a string hold any ``\\uXXXX`` escape, a lone surrogate too, and a client
can put one in an id it sends (``"r\\udc80"``). Arrow's strings are UTF-8 and cannot hold
one, so the reader used to keep it as U+FFFD: ``"r\\udc80"`` and ``"r\\udc81"`` were then
one id, and two requests that held them at once a false `duplicate_in_flight`. Spelt as
the six characters of its escape, each stays the id it was, printable, and what a user
finds by searching the log for it. An id given on the command line in bytes that are not
UTF-8 (Python hands them over as lone surrogates, ``\\xff`` as ``\\udcff``) is spelt the
same way, so it matches the log's escape of the same code point.
"""

from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def spell_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its ``\\uXXXX`` escape (lower case)."""
    return _LONE_SURROGATE.sub(_escape, text)
