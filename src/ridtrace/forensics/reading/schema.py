"""Column names and types shared by the forensics stages.

Every field the CLI reads is a string (or a UTC timestamp for ``time``), whatever its
JSON type on a given line: an id logged as a number on one line and a string on the
next stays one column. The log contract's own names live in `ridtrace.contract`.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

from ridtrace.contract import (
    DURATION_MS,
    DYNAMO_LATENCY_MS,
    DYNAMO_SENT_ID_FIELD,
    DYNAMO_SPAN_DURATION_US,
)

# Fields read from either format. Everything else on a line is ignored by the reader,
# so wide Dynamo lines cost tokenising only, not memory.
READ_FIELDS: Final[tuple[str, ...]] = (
    "time",
    "level",
    "message",
    "schema",
    "target",
    "service",
    "event",
    "request_id",
    "x_request_id",
    "trace_id",
    "span_id",
    "parent_span_id",
    "parent_id",
    "span_name",
    "status",
    "outcome",
    "fp_in",
    "fp_out",
    "deprecated_headers",
    "header",
    "route",
    "path",
    "uri",
    "method",
    "client",
    "error",
    "worker",
    # A dispatch.retry's (`ridtrace trace` shows why an attempt was given up).
    "reason",
    "marked_down",
    "chunk_request_id",
    DYNAMO_SENT_ID_FIELD,
    DYNAMO_LATENCY_MS,
    DYNAMO_SPAN_DURATION_US,
    DURATION_MS,
    # structlog's time (`scan.STRUCTLOG`).
    "timestamp",
)

TIME_TYPE: Final = pa.timestamp("us", tz="UTC")


# Columns of the normalised events frame, in order. Low-cardinality columns are
# dictionary-encoded (pandas categoricals); ids are Arrow-backed strings.
EVENT_STRING_COLUMNS: Final[tuple[str, ...]] = (
    "request_id",
    "x_request_id",
    "trace_id",
    "span_id",
    "parent_span_id",
    "fp_in",
    "fp_out",
    "deprecated",
    "client",
    "error",
    # A dispatch line's worker and, for a retry, why (`sql.DISPATCH_DETAIL`).
    "dispatch",
    "chunk_request_id",
    # What a ridtrace line states its request lasted (`ridtrace trace`: a request whose
    # start is not in the logs).
    DURATION_MS,
)
EVENT_CATEGORY_COLUMNS: Final[tuple[str, ...]] = (
    "format",
    "level",
    "event",
    "side",
    "status",
    "outcome",
    "route",
    "method",
    "service",
    "worker",
    "message",
    "span_name",
)
EVENT_COLUMNS: Final[tuple[str, ...]] = (
    "file",
    "line",
    "time",
    # When the line's span began, where the line says (`sql.BEGAN`); else its time.
    "began",
    *EVENT_CATEGORY_COLUMNS,
    *EVENT_STRING_COLUMNS,
    # Whether the line is one a request is made and timed by (`scan.LEAN_EVIDENCE`, what
    # `analyze` reads): an application's own line under its ids is shown, never either.
    "evidence",
)

