"""Ids as Jaeger wants them: lower-case hex, 16 digits for a span, 16 or 32 for a trace.

Logs from other systems spell ids their own way (upper case, ``0x1f``, short or with
extra leading zeros, or not hex at all, such as ``trace two``). Jaeger's UI links,
searches and compares traces by these ids, so each is written in Jaeger's form; the id
as logged goes beside it as a tag (`logged_id_tags`) so that a search for it still
finds the span.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np
import pandas as pd

SPAN_WIDTH = 16
TRACE_WIDTHS = (16, 32)  # a 64-bit or a 128-bit trace id
_HEX = re.compile(r"[0-9a-f]+")


def significant_digits(text: str) -> str | None:
    """`text` read as Jaeger reads an id, a hex number whatever its case, ``0x`` or
    leading zeros: its digits without those zeros (``""`` for zero), or None when it is
    no hex number."""
    text = text.lower().removeprefix("0x")
    return text.lstrip("0") if _HEX.fullmatch(text) else None


def _jaeger_id(logged: str, widths: tuple[int, ...]) -> str:
    # Jaeger parses an id as a number (128 bits for a trace: high and low 64) and
    # prints it back: lower case, 16 digits when the high half is zero, else 32. So
    # "00ABC", "abc" and a 32-digit id whose first 16 are zeros are one id, as they are
    # one trace in Jaeger; written as spelt they became two traces in one file.
    digits = significant_digits(logged)
    if digits is not None and len(digits) <= widths[-1]:
        return digits.zfill(next(w for w in widths if len(digits) <= w))
    # Not hex, or longer than Jaeger's ids: a stable stand-in of the widest width.
    digest = hashlib.sha256(logged.encode("utf-8", "surrogatepass")).hexdigest()
    return digest[: widths[-1]]


def span_id(logged: str) -> str:
    """`logged` as a Jaeger span id: 16 lower-case hex digits."""
    return _jaeger_id(logged, (SPAN_WIDTH,))


def trace_id(logged: str) -> str:
    """`logged` as a Jaeger trace id: 16 or 32 lower-case hex digits."""
    return _jaeger_id(logged, TRACE_WIDTHS)


def in_jaeger_form(ids: pd.Series, *, trace: bool) -> np.ndarray:
    """Which of `ids` (text) are in their Jaeger form already, tested all at once: what
    `trace_id` (`trace`) or `span_id` gives back unchanged for a hex id of Jaeger's width.
    A 32-digit trace id whose high half is zeros is a 64-bit one (16 digits) to Jaeger."""
    if not trace:
        return ids.str.fullmatch(f"[0-9a-f]{{{SPAN_WIDTH}}}").to_numpy(dtype=bool)
    short, long = TRACE_WIDTHS
    usual = ids.str.fullmatch(f"[0-9a-f]{{{short}}}|[0-9a-f]{{{long}}}").to_numpy(dtype=bool)
    zero_high = ((ids.str.len() == long) & ids.str.startswith("0" * short)).to_numpy(dtype=bool)
    return usual & ~zero_high


def logged_id_tags(trace: str, span: str) -> list[dict[str, Any]]:
    """``trace_id`` / ``span_id`` string tags for the ids whose Jaeger form differs."""
    tags = []
    if trace_id(trace) != trace:
        tags.append({"key": "trace_id", "type": "string", "value": trace})
    if span_id(span) != span:
        tags.append({"key": "span_id", "type": "string", "value": span})
    return tags
