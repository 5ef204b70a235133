"""JSON in and out of the frontend and its workers, lone surrogates included.

RFC 8259 lets a string hold any ``\\uXXXX`` escape, a lone surrogate too (``"\\udc80"``):
JavaScript's ``JSON.stringify`` writes one for a string cut in the middle of an emoji,
Python's ``json.dumps`` for text decoded with ``surrogateescape``. orjson refuses such a
string both ways, so a body holding one was a 400 (``invalid high surrogate in string``,
for a low one too) and a reply repeating one could not be written. These functions use
orjson and fall back to the standard library only for such text: the usual path costs
nothing more. What the fallback writes escapes every non-ASCII character, so it is
valid JSON in valid UTF-8 whatever the string holds.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["dumps", "loads"]

_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


def loads(data: bytes | str) -> Any:
    """``orjson.loads(data)``, or the standard library's reading where orjson refused a
    lone surrogate escape; raises ``orjson.JSONDecodeError`` as orjson does."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if "surrogate" not in str(exc):
            raise
        try:
            text = data if isinstance(data, str) else data.decode("utf-8")
        except UnicodeDecodeError:
            # Bytes that are not UTF-8 (orjson says "surrogates not allowed" for those
            # too): orjson's error stands, and callers tell where the byte is.
            raise exc from None
        return _stdlib_loads(text)


def _stdlib_loads(text: str) -> Any:
    # Read as orjson reads the rest: no NaN or Infinity (not JSON), a number too large
    # for a double refused, an integer past 64 bits a float.
    try:
        return json.loads(text, parse_constant=_not_json, parse_float=_finite,
                          parse_int=_orjson_int)
    except json.JSONDecodeError as exc:
        raise orjson.JSONDecodeError(exc.msg, exc.doc, exc.pos) from None
    except (ValueError, RecursionError) as exc:
        # ValueError: a number refused above, or an integer of over 4300 digits.
        reason = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
        raise orjson.JSONDecodeError(reason, text, 0) from None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError("number is infinity when parsed as double")
    return value


def _orjson_int(literal: str) -> int | float:
    value = int(literal)
    if _INT64_MIN <= value <= _UINT64_MAX:
        return value
    # Past 308 digits float() gives infinity where orjson refuses the number: read on,
    # it reached a schema's integer bound (math.ceil) and answered a 500.
    return _finite(literal)


def dumps(value: Any, *, newline: bool = False) -> bytes:
    """``orjson.dumps(value)`` (with a trailing newline when asked), or the standard
    library's ASCII-only writing when a string in ``value`` holds a lone surrogate."""
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE if newline else None)
    except TypeError as exc:
        if "surrogates" not in str(exc):
            raise
    data = json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return data + b"\n" if newline else data
