"""Every deprecated header a request sent, in SQL, where the span rows are grouped.

A span row keeps one pick of its deprecated headers (`lean`, `span_sql`): the list its
own line gives (ridtrace's ``deprecated_headers``), else the first WARN's header. A
request with a WARN for each header it sent (Dynamo logs one per header a request
sent; a ridtrace request whose lifecycle lines are off) or a list on one line and a
longer one on the next was counted under the first alone: the audit under-counted the
other header by every client that sent both. Each line sets a bit per known header it
names (`contract.DEPRECATED_ID_HEADERS`), and the span's pick is given the headers its
bits add: an integer a line, folded in an aggregate the pass computes anyway.
"""

from __future__ import annotations

from ridtrace.contract import DEPRECATED_ID_HEADERS
from ridtrace.forensics.reading.sql import literal


def _names(column: str) -> str:
    # As HTTP has them, without case (and a list's spaces): a WARN spelling a header
    # `X-Dynamo-Request-Id` left it uncounted when another header's WARN came first.
    return f"string_split(replace(lower({column}), ' ', ''), ',')"


def header_bits(column: str, *, shift: int = 0) -> str:
    """Per line: a bit (from ``1 << shift``) for each known header `column` names (a
    header or a comma list); 0 when it names none."""
    terms = " + ".join(
        f"CASE WHEN list_contains({_names(column)}, {literal(name)}) THEN {1 << (shift + i)} "
        "ELSE 0 END" for i, name in enumerate(DEPRECATED_ID_HEADERS))
    return f"(CASE WHEN {column} IS NULL THEN 0 ELSE {terms} END)"


def with_every_header(pick: str, bits: str) -> str:
    """`pick` (a header or a comma list, in lower case) with each known header `bits`
    (from bit 0: the span's lines' `header_bits`, shifted down) says a line named and
    `pick` does not."""
    pick = f"lower({pick})"
    added = ", ".join(
        f"CASE WHEN ({bits}) & {1 << i} <> 0 AND NOT list_contains({_names(pick)}, "
        f"{literal(name)}) THEN {literal(name)} END"
        for i, name in enumerate(DEPRECATED_ID_HEADERS))
    return f"(CASE WHEN ({bits}) = 0 THEN {pick} ELSE concat_ws(',', {pick}, {added}) END)"
