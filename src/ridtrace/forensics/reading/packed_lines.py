"""Lines that hold more than one record: a JSON array of them, objects `cat` joined back
to back, or a stretch of records ended by lone carriage returns. `judge` reads the first
two as their records, each cited at the line; the third makes its file incomplete.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

__all__ = [
    "BAD_RECORD_KEY", "BOM", "CR_SEPARATED", "CR_SEPARATED_FILE", "DECODE", "NESTED_MARK",
    "TEXT_DECODE",
    "array_of_objects", "back_to_back", "brackets_pair_up", "cr_separated",
    "first_of_each_key", "nested_too_deeply",
]


# A record a shipper's batch carried that could not be read (cut short, nested too
# deeply): an object of this one key, its value the reason, read back to back with the
# batch's other records, which are read all the same (`judge`).
BAD_RECORD_KEY = "ridtrace.unreadable_record"


def first_of_each_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, a key given twice keeping its first value, as
    DuckDB's reader keeps it: the same line means the same thing whichever parser reads
    it (an ``object_pairs_hook``)."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        obj.setdefault(key, value)
    return obj


def _int_or_text(digits: str) -> int | str:
    """An integer, or its text past the interpreter's limit on the digits it converts
    (4,300 by default): RFC 8259 sets no limit, so such a line is valid JSON, a record."""
    limit = sys.get_int_max_str_digits()
    return int(digits) if not limit or len(digits.lstrip("-")) <= limit else digits


class _Decoder(json.JSONDecoder):
    """The standard library's decoder (`options` as its own), a key given twice keeping
    its first value, and an integer of more digits than the interpreter converts kept
    as its text: such a line ("not JSON" to the plain decoder) is a record. The retry
    costs only those."""

    def __init__(self, **options: Any) -> None:
        super().__init__(object_pairs_hook=first_of_each_key, **options)
        self._long_ints = json.JSONDecoder(object_pairs_hook=first_of_each_key,
                                           parse_int=_int_or_text, **options)

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        try:
            return super().raw_decode(s, idx)
        except ValueError as exc:
            if "integer string conversion" not in str(exc):
                raise
            return self._long_ints.raw_decode(s, idx)


DECODE = _Decoder()
# Every float and constant kept as its text (`unwrap_parts.json_value`): 1e400 written
# back as Infinity is no JSON, and the reader takes every field as text anyway.
TEXT_DECODE = _Decoder(parse_float=str, parse_constant=str)
# Where an unwrapper left a shipper's line whose JSON nests deeper than the parser
# follows (RFC 8259 lets a parser limit nesting): no JSON, judged so (`judge`), and its
# file read only in part. Left as it was, the reader took the wrapper for a record with
# no time, and the record it carried, an Unlinked error, was one bad line under the 1 %.
NESTED_MARK = b"\x1eridtrace: JSON nested too deeply"


def nested_too_deeply(line: bytes) -> bool:
    """Whether a JSON line (an object or an array) is valid JSON nested deeper than the
    parser follows: it raises RecursionError, and its brackets pair up (a torn line of
    many '[' is no JSON however deep)."""
    if line.lstrip()[:1] not in (b"{", b"["):
        return False
    try:
        json.loads(line)
    except RecursionError:
        return brackets_pair_up(line.decode("utf-8", "replace"))
    except ValueError:
        return False
    return False


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_CLOSES = {"]": "[", "}": "{"}


def brackets_pair_up(text: str) -> bool:
    """Whether the brackets of `text`, outside its strings, open and close in pairs."""
    stack: list[str] = []
    for bracket in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        if bracket in _CLOSES:
            if not stack or stack.pop() != _CLOSES[bracket]:
                return False
        else:
            stack.append(bracket)
    return not stack


# A byte order mark opens each file written by some Windows tools; in the middle of a
# file it is where `cat` joined two of them. It is no part of the line's JSON.
BOM = "\ufeff"


def array_of_objects(text: bytes) -> list[dict[str, Any]] | None:
    """The line's JSON objects when it is an array of them, None otherwise.

    A batch of records written as one JSON array (Fluent Bit's ``http`` output posts
    its records so, and a receiver that writes what it is posted keeps them so) was one
    bad line however many records it held, under the 1 % of bad lines a read may have:
    an Unlinked error in it was dropped and the run said clean.
    """
    try:
        value = DECODE.decode(text.lstrip(b"\0").decode("utf-8").strip().removeprefix(BOM))
    except (ValueError, RecursionError):
        return None
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        return value
    return None


CR_SEPARATED = "JSON records separated by carriage returns alone, not newlines"
# Why a file with such a line is read only in part: the line is one bad line however
# many records it holds, far under the 1 % of bad lines a read may have.
CR_SEPARATED_FILE = (
    "records separated by carriage returns alone (old Mac line ends) are not read (see "
    "its bad lines): convert them to newlines, tr '\\r' '\\n' < FILE"
)


def cr_separated(text: bytes) -> str | None:
    """`CR_SEPARATED` with the count, when the line holds JSON records a lone CR ends
    each of (a stretch of a log written with classic Mac line ends); None otherwise."""
    if b"\r" not in text.strip():
        return None
    records = 0
    for part in text.split(b"\r"):
        try:
            records += isinstance(json.loads(part), dict)
        except (ValueError, RecursionError):  # a torn or text part among them
            continue
    return f"{records} {CR_SEPARATED}" if records > 1 else None


def back_to_back(text: str) -> list[Any] | None:
    """The JSON objects `text` is made of, one after the other, or None."""
    objects: list[Any] = []
    at = 0
    try:
        while at < len(text):
            if text[at] != "{":
                return None
            obj, at = DECODE.raw_decode(text, at)
            objects.append(obj)
            # Not a carriage return: a CR-only file is one line of many records whose
            # lines cannot be cited; it stays a bad line, the read incomplete.
            while at < len(text) and text[at] in " \t\ufeff":
                at += 1
    except (ValueError, RecursionError):
        return None
    return objects if len(objects) > 1 else None
