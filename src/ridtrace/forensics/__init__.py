"""Log forensics: join frontend and worker logs, find who received whose output.

Pure functions over pandas DataFrames (Arrow-backed); the ``ridtrace`` CLI is a thin
layer over them. Importing this package imports pandas and pyarrow, which is why
``ridtrace.tracing`` never imports it.
"""

from ridtrace.forensics.reading.events import LoadedLogs, load_events, read_sources
from ridtrace.forensics.reading.inputs import ForensicsInputError, expand_inputs
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.rules.overlap import client_id_reuse, deprecated_header, duplicate_in_flight
from ridtrace.forensics.rules.report import Report, analyze, report_csv, report_json
from ridtrace.forensics.rules.streams import crossed_stream, unlinked
from ridtrace.forensics.views.audit import audit, daily_series, deprecated_usage, plot_usage
from ridtrace.forensics.views.jaeger import to_jaeger
from ridtrace.forensics.views.timeline import match_requests, timeline

__all__ = [
    "ForensicsInputError",
    "LoadedLogs",
    "Report",
    "analyze",
    "audit",
    "build_requests",
    "client_id_reuse",
    "crossed_stream",
    "daily_series",
    "deprecated_header",
    "deprecated_usage",
    "duplicate_in_flight",
    "expand_inputs",
    "load_events",
    "match_requests",
    "plot_usage",
    "read_sources",
    "report_csv",
    "report_json",
    "timeline",
    "to_jaeger",
    "unlinked",
]
