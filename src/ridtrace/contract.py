"""The log contract's names, owned here and imported by every writer and reader.

docs/log-schema.md describes the contract; this module is its single spelling in code.
Writers (`ridtrace.tracing`, `ridtrace.frontend_plugin`) and readers
(`ridtrace.forensics`, `ridtrace.testing`) import these names instead of retyping them,
so a rename is one edit and a drift is an import error, not a silent miss.

Pure constants: importing it costs nothing on the hot path.
"""

from __future__ import annotations

from typing import Final

LOG_SCHEMA: Final = "ridtrace/1"

# Lifecycle and incident events (the ``event`` field).
REQUEST_START: Final = "request.start"
REQUEST_END: Final = "request.end"
# How long a request took, on its `request.end` (`worker.end`: the work): the one line that
# says when a request whose `request.start` is not in the logs began.
DURATION_MS: Final = "duration_ms"
WORKER_START: Final = "worker.start"
WORKER_END: Final = "worker.end"
WORKER_ERROR: Final = "worker.error"
WORKER_REFUSED: Final = "worker.refused"
DISPATCH_EVENT_PREFIX: Final = "dispatch."
DISPATCH_ATTEMPT: Final = "dispatch.attempt"
DISPATCH_RETRY: Final = "dispatch.retry"
DISPATCH_OVERLOADED: Final = "dispatch.overloaded"
RESPONSE_UNLINKED: Final = "response.unlinked"
RESPONSE_SENT: Final = "response.sent"
FOREIGN_CHUNK: Final = "stream.foreign_chunk"
DEPRECATED_HEADER: Final = "deprecated_header"
# The request-id headers a server ignores, with one WARN naming each (DESIGN.md).
DEPRECATED_ID_HEADERS: Final[tuple[str, ...]] = ("x-dynamo-request-id", "request-id")
SPAN_CLOSED: Final = "span.closed"
SHUTDOWN_DRAIN: Final = "shutdown.drain"
SHUTDOWN_STOP: Final = "shutdown.stop"

# The events of a worker's work (its span is a worker's).
WORKER_EVENTS: Final[tuple[str, ...]] = (WORKER_START, WORKER_END, WORKER_ERROR, WORKER_REFUSED)
# Every event ridtrace writes: an application's own `event` field on a line written
# before it was kept apart (`_event`) is none of them, even named like one
# ("worker.cache" made a frontend request a worker's and hid its crossed stream).
RIDTRACE_EVENTS: Final[tuple[str, ...]] = (
    REQUEST_START, REQUEST_END, *WORKER_EVENTS, DISPATCH_ATTEMPT, DISPATCH_RETRY,
    DISPATCH_OVERLOADED, RESPONSE_UNLINKED, RESPONSE_SENT, FOREIGN_CHUNK, DEPRECATED_HEADER,
    SPAN_CLOSED, SHUTDOWN_DRAIN, SHUTDOWN_STOP,
)

# Fields of a lifecycle line that forensics reads on any ridtrace/1 line, whatever its
# ``event``: an application's own field of one of these names (``logger.info("hook",
# event=body["type"])``) is written with a leading ``_``, or a client could make a line
# of the application's pass for an Unlinked failure or a deprecated header.
LIFECYCLE_FIELDS: Final[frozenset[str]] = frozenset({
    "event", "outcome", "fp_in", "fp_out", "deprecated_headers", "chunk_request_id",
})

# Keys a ridtrace/1 line's formatter owns: an application's field of one of these names,
# or of a lifecycle field's on its own line, is written with a leading ``_``
# (`APPLICATION_RESERVED`), and a reader of loguru's own JSON keeps it apart the same way.
LINE_KEYS: Final[frozenset[str]] = frozenset({
    "time", "level", "message", "logger", "schema", "service", "pid", "exception", "traceback",
})
APPLICATION_RESERVED: Final[frozenset[str]] = LINE_KEYS | LIFECYCLE_FIELDS

# Outcomes (the ``outcome`` field of ``request.end`` / ``worker.end``).
OUTCOME_OK: Final = "ok"
OUTCOME_ERROR: Final = "error"
OUTCOME_CANCELLED: Final = "cancelled"
OUTCOME_CONFLICT: Final = "conflict"
OUTCOME_UNLINKED: Final = "unlinked"
OUTCOME_UNAUTHORIZED: Final = "unauthorized"  # refused for a missing or wrong key / token
OUTCOME_INVALID: Final = "invalid"  # a worker refused a malformed work envelope (4xx)

# The two errors the seed's frontend raised when its in-flight table lost a request.
UNLINKED_RESPONSE: Final = "Unlinked response; response task was dropped or cancelled"
UNLINKED_REQUEST: Final = "Unlinked request; initiating request task was dropped or cancelled"

# The error of a request the server ended because it was stopping (SIGTERM / SIGINT
# and the graceful-shutdown period nearly over).
SHUTTING_DOWN: Final = "server shutting down"

# Sides of a request span.
FRONTEND: Final = "frontend"
WORKER: Final = "worker"

# Dynamo's JSONL spells its lifecycle in messages and span names.
DYNAMO_RECEIVED: Final = "request received"
DYNAMO_COMPLETED: Final = "request completed"
DYNAMO_RESPONSE_SENT: Final = "http response sent"
DYNAMO_GENERATE_FAILED: Final = "engine generate call failed"
DYNAMO_SPAN_CLOSED: Final = "SPAN_CLOSED"
# With DYN_LOGGING_SPAN_EVENTS=1, at INFO level: a span's first line, where it began.
DYNAMO_SPAN_CREATED: Final = "SPAN_CREATED"
# The same line in newer Dynamo releases, written when the span is first entered.
DYNAMO_SPAN_FIRST_ENTRY: Final = "SPAN_FIRST_ENTRY"
DYNAMO_WORKER_SPANS: Final[tuple[str, ...]] = ("handle_payload",)
DYNAMO_FRONTEND_SPANS: Final[tuple[str, ...]] = ("http-request", "generate")
# Frontend spans Dynamo opens inside its http-request span, whose lines do not always
# name that parent (`parent_id`): the shared sample's Unlinked failure does not.
DYNAMO_INNER_SPANS: Final[tuple[str, ...]] = ("generate",)
# How long the span a line closes lasted: "http response sent" says it in milliseconds,
# a SPAN_CLOSED line (DYN_LOGGING_SPAN_EVENTS=1) in microseconds since the span opened.
DYNAMO_LATENCY_MS: Final = "latency_ms"
DYNAMO_SPAN_DURATION_US: Final = "time.duration_us"
# "x-dynamo-request-id header is deprecated (DEP #7812); ..." in older Dynamo releases.
DYNAMO_DEPRECATED_PATTERN: Final = r"^(?P<header>[A-Za-z0-9-]+) header is deprecated"
# Dynamo releases before the fix log no WARN for the header: they took a client's
# x-dynamo-request-id (a UUID) as the request's id and record it on the request's
# http-request span, so each of its lines names it in this field.
DYNAMO_SENT_ID_FIELD: Final = "x_dynamo_request_id"
DYNAMO_SENT_ID_HEADER: Final = "x-dynamo-request-id"
DYNAMO_HTTP_SPAN: Final = "http-request"

# Finding kinds and their severities: the JSON contract of `ridtrace analyze`.
SEVERITY: Final[dict[str, str]] = {
    "crossed_stream": "error",
    "duplicate_in_flight": "error",
    "unlinked": "error",
    "client_id_reuse": "info",
    "deprecated_header": "info",
}
FINDING_KINDS: Final[tuple[str, ...]] = tuple(SEVERITY)

# The columns of the reports' CSV: `analyze`'s findings, `trace`'s events, `audit`'s
# rows after their keys (a walk tells a report saved beside the logs by them).
FINDING_COLUMNS: Final[tuple[str, ...]] = (
    "kind", "severity", "request_id", "x_request_id", "span_id", "time", "detail", "evidence",
)
TRACE_CSV_COLUMNS: Final[tuple[str, ...]] = (
    "request_span_id", "request_id", "x_request_id", "verdict", "got_output_of_span_id",
    "ms", "side", "span_id", "event", "outcome", "level", "file", "line", "detail",
)
AUDIT_BY: Final[tuple[str, ...]] = ("header", "client", "route", "day")
AUDIT_COLUMNS: Final[tuple[str, ...]] = ("requests", "clients", "first_seen", "last_seen")


def audit_keys(by: str) -> tuple[str, ...]:
    """The key columns of `audit --by BY`'s rows, before `AUDIT_COLUMNS`."""
    return ("header",) if by == "header" else ("day", "header") if by == "day" else ("header", by)

# The numeric gRPC status codes OpenTelemetry's rpc conventions make a server span an
# error for, as 5xx are over HTTP: UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL,
# UNAVAILABLE, DATA_LOSS. The interceptor marks its spans by them, `export jaeger` the
# spans it builds from the lines' numeric `status`.
GRPC_SERVER_FAULT_CODES: Final[frozenset[int]] = frozenset({2, 4, 12, 13, 14, 15})
