"""Trace and span ids spelt one way for `ridtrace trace` and `audit`, as `analyze` spells them.

The full read keeps ids as logged (the trace view's JSON and CSV show them so, and
`export jaeger` tags them). A frontend logging its ids upper case, or a 64-bit trace id
as 32 digits with a zero high half, or as a number without its leading zeros (``0x…``),
and a worker logging them otherwise linked no worker
to its caller here: `trace` listed a false duplicate_in_flight that `analyze` (whose read
spells ids one way, `reading.hex_ids`) did not, and `audit` counted the worker span as a
request of its own. The views link spans by the ids spelt as `hex_ids` spells them, and
keep each span's logged spelling to show.
"""

from __future__ import annotations

import pandas as pd

from ridtrace.forensics.reading.hex_ids import SHORTEST_NUMBER

# The logged trace id of each request, which the trace view shows.
LOGGED_TRACE_ID = "logged_trace_id"
_HEX = r"[0-9a-f]+"
_ZERO_HIGH_HALF = "0" * 16


def _spelling(ids: pd.Series, widths: tuple[int, ...]) -> pd.Series:
    """Hex ids as `hex_ids._padded` spells them (lower case, no ``0x``, zero-padded to
    the first of `widths` they fit); others, and missing ones, as they are."""
    values = ids.astype(object)
    text = values.astype("string")
    usual = (text == text.str.lower()) & ~text.str.startswith("0x")
    if len(widths) > 1:
        usual &= ((text.str.len() == 32) & ~text.str.startswith(_ZERO_HIGH_HALF)) | (
            text.str.len() == 16)
    else:
        usual &= text.str.len() == 16
    other = ~usual.fillna(True).to_numpy(dtype=bool) & text.notna().to_numpy(dtype=bool)
    if not other.any():
        return values
    rare = text[other]
    digits = rare.str.lower().str.removeprefix("0x")
    hexy = digits.str.fullmatch(_HEX).fillna(False)
    significant = digits.str.lstrip("0")
    spelt = rare.astype(object).copy()
    # A short name (`hex_ids.SHORTEST_NUMBER`) is only lower cased, as is a longer id.
    number = (rare.str.lower().str.startswith("0x") | (digits.str.len() >= SHORTEST_NUMBER)
              ).fillna(False)
    fitted = pd.Series(False, index=rare.index)
    for width in widths:
        fits = hexy & number & ~fitted & (significant.str.len() <= width)
        spelt[fits] = significant[fits].str.zfill(width).astype(object)
        fitted |= fits
    rest = hexy & ~fitted
    spelt[rest] = digits[rest].astype(object)
    out = values.copy()
    out[other] = spelt.to_numpy(dtype=object)
    return out


def _span_spelling(ids: pd.Series) -> pd.Series:
    """A span id spelt one way (`hex_ids.hex_id`)."""
    return _spelling(ids, (16,))


def _trace_spelling(ids: pd.Series) -> pd.Series:
    """A trace id spelt one way (`hex_ids.hex_id`): 16 or 32 digits."""
    return _spelling(ids, (16, 32))


def one_spelling(requests: pd.DataFrame) -> pd.DataFrame:
    """`requests` with trace_id, span_id and parent_span_id spelt one way."""
    return requests.assign(trace_id=_trace_spelling(requests["trace_id"]),
                           span_id=_span_spelling(requests["span_id"]),
                           parent_span_id=_span_spelling(requests["parent_span_id"]))


def spelt_one_way(
    requests: pd.DataFrame, events: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """`requests` (with each one's logged trace id in `LOGGED_TRACE_ID`) and `events`
    with their ids spelt one way, and each span id spelt otherwise than logged -> the
    spelling its span logged."""
    spelt = one_spelling(requests).assign(**{LOGGED_TRACE_ID: requests["trace_id"]})
    events = events.assign(trace_id=_trace_spelling(events["trace_id"]),
                           span_id=_span_spelling(events["span_id"]))
    logged = requests["span_id"].astype(object)
    differs = (spelt["span_id"] != logged).fillna(False).to_numpy(dtype=bool)
    return spelt, events, {str(k): str(v) for k, v in zip(
        spelt["span_id"][differs], logged[differs], strict=True)}
