"""Trace and span ids spelt one way, in SQL, where the rules' read takes them.

Other systems spell one hex id their own way: upper case, or a 64-bit trace id (B3,
Jaeger) in a 128-bit field as 32 digits whose high 16 are zeros. The rules key spans by
(trace_id, span_id) and find a worker's caller by its parent_span_id, so a worker that
logged its caller's ids in a spelling other than the caller's log was nobody's child: a
second holder of the request id, a false duplicate_in_flight. The rules' read spells
each id as `export jaeger` does (`views.jaeger_ids`, for 16 and 32 hex digits): lower
case, a zero high half dropped. Ids that are no hex keep their case. The read is
benchmarked: a line costs a lower() and a prefix test, and the pattern runs only on the
rare id with an upper-case letter or 16 leading zeros.
"""

from __future__ import annotations

_HEX = "'[0-9A-Fa-f]+'"
_ZERO_HIGH_HALF = "'" + "0" * 16 + "'"


def _lowered(column: str) -> str:
    return (f"CASE WHEN {column} <> lower({column}) AND regexp_full_match({column}, {_HEX}) "
            f"THEN lower({column}) ELSE {column} END")


def hex_id(column: str, *, trace: bool = False) -> str:
    """SQL spelling the id in `column` one way (`trace`: a trace id, else a span id)."""
    column = f"({column})"
    if not trace:
        return f"({_lowered(column)})"
    low_half = f"substr({column}, 17)"
    return f"""(CASE WHEN length({column}) = 32 AND starts_with({column}, {_ZERO_HIGH_HALF})
        AND regexp_full_match({low_half}, {_HEX}) THEN {_lowered(low_half)}
        ELSE {_lowered(column)} END)"""


# The columns `hex_id` spells one way, in the events frame (`normalized_select`).
HEX_IDS = {"trace_id": True, "span_id": False, "parent_span_id": False}
