"""Trace and span ids spelt one way, in SQL, where the rules' read takes them.

Other systems spell one hex id their own way: upper case, a 64-bit trace id (B3,
Jaeger) in a 128-bit field as 32 digits whose high 16 are zeros, or as a number is
printed, without its leading zeros and perhaps with ``0x`` (Python's
``hex(span_context.span_id)``, Go's ``%#x``). The rules key spans by (trace_id, span_id)
and find a worker's caller by its parent_span_id, so a worker that logged its caller's
ids in a spelling other than the caller's log was nobody's child: a second holder of the
request id, a false duplicate_in_flight. The rules' read spells each id as `export
jaeger` does (`views.jaeger_ids`, which reads ``0x`` and leading zeros as `ridtrace
trace ID` does): lower case, no ``0x``, zero-padded to 16 digits (a trace id to 16 or
32: a zero high half dropped). Jaeger and Zipkin read a short id so, as the number it
is. A hex id of a few digits without ``0x`` (``a1``, a name more than a number: a random
id that lost its leading zeros has 13 digits or more but once in 4,096) is only lower
cased, so reports and tests that name spans so see them as written. Ids that are no hex
keep their case, and so do hex ids longer than those widths. The read is benchmarked: a
line costs a length, a lower() and a prefix test; the pattern runs only on the rare id
of another width, case or prefix.
"""

from __future__ import annotations

_HEX = "'[0-9a-f]+'"
_ZERO_HIGH_HALF = "'" + "0" * 16 + "'"
# Fewer digits than this, and no 0x: a short name, not a number that lost its zeros.
SHORTEST_NUMBER = 9


def _padded(column: str, widths: tuple[int, ...]) -> str:
    """`column`, a hex number whatever its case, ``0x`` or leading zeros, zero-padded to
    the first of `widths` its digits fit; lower case without ``0x`` when they fit none,
    or when it is a short name (`SHORTEST_NUMBER`); as it is when it is no hex."""
    digits = (f"(CASE WHEN starts_with(lower({column}), '0x') THEN substr(lower({column}), 3) "
              f"ELSE lower({column}) END)")
    significant = f"ltrim({digits}, '0')"
    fits = " ".join(f"WHEN length({significant}) <= {w} THEN lpad({significant}, {w}, '0')"
                    for w in widths)
    number = f"(starts_with(lower({column}), '0x') OR length({digits}) >= {SHORTEST_NUMBER})"
    return (f"(CASE WHEN regexp_full_match({digits}, {_HEX}) THEN (CASE WHEN {number} THEN "
            f"(CASE {fits} ELSE {digits} END) ELSE {digits} END) ELSE {column} END)")


def hex_id(column: str, *, trace: bool = False) -> str:
    """SQL spelling the id in `column` one way (`trace`: a trace id, else a span id)."""
    column = f"({column})"
    # The common spellings, already the one way: its width, lower case, no 0x.
    usual = f"{column} = lower({column}) AND NOT starts_with({column}, '0x')"
    if not trace:
        return f"""(CASE WHEN length({column}) = 16 AND {usual} THEN {column}
        ELSE {_padded(column, (16,))} END)"""
    return f"""(CASE WHEN length({column}) = 32 AND {usual}
        AND NOT starts_with({column}, {_ZERO_HIGH_HALF}) THEN {column}
        WHEN length({column}) = 16 AND {usual} THEN {column}
        ELSE {_padded(column, (16, 32))} END)"""


def names_a_span(column: str) -> str:
    """SQL: the span id in `column` names a span, neither absent nor OpenTelemetry's
    invalid all-zero id (``0000000000000000``, ``0x0``), which a service whose tracer is
    a no-op logs for every request: keyed by it, every such request was one span, four
    requests were one, and two holding one id at once were no duplicate ("No findings").
    Nor is an empty one (``"span_id": ""``, a logger's placeholder): three requests so
    logged were one span, two of them lost, and the read complete (exit 0).
    Only an id that starts with ``0`` is looked at further."""
    column = f"({column})"
    # A CASE, not AND: DuckDB computes both sides of an AND in a projection, and the
    # trims on every line cost the read 5 % of its CPU.
    return (f"(CASE WHEN {column} IS NULL THEN FALSE WHEN NOT starts_with({column}, '0') "
            f"THEN {column} <> '' ELSE NOT (ltrim({column}, '0') = '' OR "
            f"(lower(substr({column}, 1, 2)) = '0x' AND ltrim(substr({column}, 3), '0') = '')) "
            "END)")


def span_or_null(column: str) -> str:
    """SQL: the span id in `column`, NULL where it names no span (`names_a_span`): every
    read then takes OpenTelemetry's all-zero id as it takes a missing one (a caller, a
    span, an event's span), and says the same of it."""
    return f"(CASE WHEN {names_a_span(column)} THEN {column} END)"


# The columns `hex_id` spells one way, in the events frame (`normalized_select`).
HEX_IDS = {"trace_id": True, "span_id": False, "parent_span_id": False}
