"""The second SQL stage of the read: events collapsed into one row per request span.

Keyed by (trace_id, span_id): the span id is unique per request even when request ids
collide, which is exactly the situation forensics has to untangle. The key is the ids
spelt one way (`hex_ids.hex_id`, as the lean pass `analyze` runs spells them): a span
whose lines spell its id otherwise (upper case on some, ``0x`` or other leading zeros)
is one span, as `analyze` counts it, not two with one "no end"; the row keeps the
spelling of its first line, which the views show and tag. Every column is
decomposable (first non-null by line, last request id, min/max time, counts), so spans
cut by a file or partition boundary combine exactly
(`ridtrace.forensics.records.partials`). The events come from `sql.normalized_select`.
"""

from __future__ import annotations

from ridtrace.contract import (
    DEPRECATED_HEADER,
    DYNAMO_HTTP_SPAN,
    DYNAMO_INNER_SPANS,
    FOREIGN_CHUNK,
    FRONTEND,
    REQUEST_END,
    RESPONSE_UNLINKED,
    WORKER,
    WORKER_END,
)
from ridtrace.forensics.reading.deprecated_sql import header_bits, with_every_header
from ridtrace.forensics.reading.hex_ids import hex_id
from ridtrace.forensics.reading.sql import (
    CLOSING_EVENTS,
    DISPATCH_EVENTS,
    answered_in,
    literal,
    literal_list,
    started,
)


def _first(col: str) -> str:
    if col == "error":
        # A dispatch line's error is an attempt's (a worker refused or down, then another
        # served): taken first, a request served on its retry had that error, and a
        # failed one the first attempt's, not its request.end's.
        return (f"arg_min(error, rn) FILTER (WHERE error IS NOT NULL "
                f"AND coalesce(event NOT IN {DISPATCH_EVENTS}, TRUE)) AS error")
    return f"arg_min({col}, rn) FILTER (WHERE {col} IS NOT NULL) AS {col}"


# Fields whose value is the first non-null one among a span's lines.
FIRST_FIELDS = (
    "parent_span_id", "x_request_id", "outcome", "status", "fp_in", "fp_out", "route",
    "client", "method", "service", "worker", "error",
)


# Display-only fields: no rule reads them, so the lean pass (`reading.lean`, what
# `analyze` runs) leaves them null and spends no aggregate on them.
DISPLAY_FIELDS = ("route", "client", "method", "service", "worker", "status", "error")

# Fields only the views' read has (first non-null, as `FIRST_FIELDS`): the lean pass has
# not even a null column of them, and its rows go without (`records.requests.VIEW_COLUMNS`).
VIEW_FIELDS = ("span_name",)


# What the id a span ends with is the last of: its lines by time, then by line.
LAST_ID_ORDER = "{'t': time, 'rn': rn}"


def span_aggregates() -> str:
    """The per-span aggregate columns over normalised events with ``rn``.

    Lines are row numbers (``*_rn``): the caller turns them into file lines.
    The id a request *ends* with is the one it held in flight: under the legacy id
    policy the middleware logs a minted id at request.start, then the handler re-keys
    the request by the client's id, and that is the id that collides. Ends with in
    time, then in line order (`LAST_ID_ORDER`): Loki's ``logcli query`` prints newest
    first, so by line order alone a request ended with its minted id. Its deprecated
    headers are those its own lines list (``deprecated_headers``), else the first a
    ``deprecated_header`` WARN names: the middleware writes the WARN first, naming one
    header, so the request's other headers went uncounted. ``deprecated_listed`` says
    which, so partials of a span cut between the two combine to the same pick.
    """
    first = ",\n    ".join(_first(c) for c in (*FIRST_FIELDS, *VIEW_FIELDS) if c != "route")
    # The route its end line names (the template it matched, `/users/{id}`) over the
    # path its start line logs (`/users/alice`): by the first line's, the audit's `--by
    # route` and Jaeger's operations had a row per URL. ``route_ended`` says which, so
    # partials of a span cut between the two combine to the same pick.
    ended = f"route IS NOT NULL AND event = {literal(REQUEST_END)}"
    route = (f"coalesce(arg_min(route, rn) FILTER (WHERE {ended}), "
             "arg_min(route, rn) FILTER (WHERE route IS NOT NULL)) AS route, "
             f"bool_or({ended}) IS TRUE AS route_ended")
    unlinked = f"event = {literal(RESPONSE_UNLINKED)}"
    foreign = f"event = {literal(FOREIGN_CHUNK)}"
    # A request's own line lists every deprecated header it sent; the WARN before it
    # names one, and only for the first request of the process to send that one.
    # (Only ridtrace's: a Dynamo line naming x_dynamo_request_id is no such list.)
    listed = (f"deprecated IS NOT NULL AND event IS DISTINCT FROM {literal(DEPRECATED_HEADER)}"
              " AND format = 'ridtrace'")
    opened = started("format = 'ridtrace'")
    picked = (f"coalesce(arg_min(deprecated, rn) FILTER (WHERE {listed}), "
              "arg_min(deprecated, rn) FILTER (WHERE deprecated IS NOT NULL))")
    deprecated = with_every_header(picked, f"bit_or({header_bits('deprecated')})")
    return f"""arg_max(request_id, {LAST_ID_ORDER}) FILTER (WHERE request_id IS NOT NULL)
        AS request_id,
    {first},
    {route},
    CASE WHEN bool_or(side = {literal(WORKER)}) THEN {literal(WORKER)}
         ELSE {literal(FRONTEND)} END AS side,
    CASE WHEN bool_or({opened}) THEN min(time) ELSE min(began) END AS start,
    max(time) AS "end", min(time) AS first_time,
    min({answered_in("format = 'ridtrace'")}) AS answer_us,
    min(rn) AS first_rn, max(rn) AS last_rn, count(*) AS lines,
    arg_min(coalesce(error, message), {LAST_ID_ORDER}) FILTER (WHERE {unlinked}) AS unlinked,
    arg_min(rn, {LAST_ID_ORDER}) FILTER (WHERE {unlinked}) AS unlinked_rn,
    arg_min(coalesce(chunk_request_id, ''), rn) FILTER (WHERE {foreign}) AS "foreign",
    min(rn) FILTER (WHERE {foreign}) AS foreign_rn,
    {deprecated} AS deprecated,
    coalesce(min(rn) FILTER (WHERE {listed}),
             min(rn) FILTER (WHERE deprecated IS NOT NULL)) AS deprecated_rn,
    count(*) FILTER (WHERE {listed}) > 0 AS deprecated_listed,
    bool_or(event IN {literal_list(CLOSING_EVENTS)}) IS TRUE AS closing,
    bool_or(event = {literal(REQUEST_END)}) IS TRUE AS request_end,
    bool_or(event = {literal(WORKER_END)}) IS TRUE AS worker_end,
    bool_or({opened}) IS TRUE AS started,
    bool_or(format IS DISTINCT FROM 'ridtrace'
            AND span_name IN {literal_list(DYNAMO_INNER_SPANS)}) IS TRUE AS inner,
    bool_or(format IS DISTINCT FROM 'ridtrace'
            AND span_name = {literal(DYNAMO_HTTP_SPAN)}) IS TRUE AS outer"""


def spans_select(events: str, *, by_file: bool = False) -> str:
    """One row per span of `events` (normalised, with ``rn``), in first-seen order;
    `by_file`: per span of each ``file`` (its first column), by file."""
    file = "file, " if by_file else ""
    # Grouped by the ids spelt one way (the lean pass's key); shown as the first line
    # spelt them. Events a lean read normalised already are their own spelling. Made
    # and timed by the lines `analyze` reads (`evidence`): every line of any kind made
    # `trace` and `audit` find requests `analyze` did not (an application's own spans)
    # and end them later (a line logged after the request's end), a duplicate in
    # flight that `analyze` found none of.
    keyed = (f"SELECT *, {hex_id('trace_id', trace=True)} AS _trace_key, "
             f"{hex_id('span_id')} AS _span_key FROM {events} "
             "WHERE span_id IS NOT NULL AND evidence")
    return f"""
SELECT {file}arg_min(trace_id, rn) AS trace_id, arg_min(span_id, rn) AS span_id,
    hash(_trace_key, _span_key) AS span_key,
    {span_aggregates()}
FROM ({keyed})
GROUP BY {file}_trace_key, _span_key
ORDER BY {file}first_rn
"""
