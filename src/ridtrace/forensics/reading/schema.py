"""Column names and types shared by the forensics modules.

The read schema pins every field the CLI uses to a string (or a UTC timestamp for
``time``): Arrow's JSON reader infers types per block, and an id that is a number on
one line and a string on the next would otherwise break the whole block.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

RIDTRACE_SCHEMA: Final = "ridtrace/1"

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
    "chunk_request_id",
)

# Arrow's JSON reader spends time per column it builds, so each format is first read
# with only the fields it has, and `analyze` ("lean") skips the display-only ones.
_RIDTRACE_LEAN: Final = (
    "time", "schema", "event", "message", "request_id", "x_request_id", "trace_id", "span_id",
    "parent_span_id", "outcome", "fp_in", "fp_out", "deprecated_headers", "header",
    "chunk_request_id",
)
_RIDTRACE_FULL: Final = (
    *_RIDTRACE_LEAN, "level", "service", "status", "route", "path", "method", "client", "worker",
    "error",
)
_DYNAMO_LEAN: Final = (
    "time", "target", "message", "span_name", "request_id", "x_request_id", "trace_id",
    "span_id", "parent_id", "status", "error", "header",
)
_DYNAMO_FULL: Final = (*_DYNAMO_LEAN, "level", "uri", "method")
FIELD_SETS: Final[dict[tuple[str, bool], tuple[str, ...]]] = {
    ("ridtrace", True): _RIDTRACE_LEAN,
    ("ridtrace", False): _RIDTRACE_FULL,
    ("dynamo", True): _DYNAMO_LEAN,
    ("dynamo", False): _DYNAMO_FULL,
    ("any", True): READ_FIELDS,
    ("any", False): READ_FIELDS,
}

TIME_TYPE: Final = pa.timestamp("us", tz="UTC")


def read_schema(
    fields: tuple[str, ...] = READ_FIELDS, *, time_as_string: bool = False, int_status: bool = False
) -> pa.Schema:
    """The explicit schema handed to ``pyarrow.json``.

    ``time`` is a string on the slow path (parsed leniently in Python); ``status`` is
    an integer in ridtrace's format and a string in Dynamo's.
    """
    out = []
    for name in fields:
        typ: pa.DataType = pa.string()
        if name == "time" and not time_as_string:
            typ = TIME_TYPE
        elif name == "status" and int_status:
            typ = pa.int64()
        out.append(pa.field(name, typ))
    return pa.schema(out)


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
    "chunk_request_id",
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
)
EVENT_COLUMNS: Final[tuple[str, ...]] = (
    "file",
    "line",
    "time",
    *EVENT_CATEGORY_COLUMNS,
    *EVENT_STRING_COLUMNS,
)

FRONTEND: Final = "frontend"
WORKER: Final = "worker"

# Finding kinds and their severities: the JSON contract of `ridtrace analyze`.
SEVERITY: Final[dict[str, str]] = {
    "crossed_stream": "error",
    "duplicate_in_flight": "error",
    "unlinked": "error",
    "client_id_reuse": "info",
    "deprecated_header": "info",
}
FINDING_KINDS: Final[tuple[str, ...]] = tuple(SEVERITY)
FINDING_COLUMNS: Final[tuple[str, ...]] = (
    "kind",
    "severity",
    "request_id",
    "x_request_id",
    "span_id",
    "time",
    "detail",
    "evidence",
)

UNLINKED_RESPONSE: Final = "Unlinked response; response task was dropped or cancelled"
UNLINKED_REQUEST: Final = "Unlinked request; initiating request task was dropped or cancelled"
