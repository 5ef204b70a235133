"""Log forensics: join frontend and worker logs, find who received whose output.

The stages, one subpackage each: ``reading`` (inputs → numbered lines → typed,
normalised columns, by DuckDB), ``records`` (one row per request span), ``rules``
(the findings, clock skew, the report), ``views`` (audit, Jaeger export, the trace
view) and ``dask_engine`` (the same stages on a Dask cluster). Pure functions over
Arrow tables and pandas DataFrames; the ``ridtrace`` CLI is a thin layer over them.
Importing this package imports pandas, pyarrow and duckdb, which is why
``ridtrace.tracing`` never imports it.
"""

from ridtrace.forensics.reading.events import LoadedLogs, load_events, read_sources
from ridtrace.forensics.reading.inputs import ForensicsInputError, expand_inputs
from ridtrace.forensics.records.read import LoadedRequests, read_partials
from ridtrace.forensics.records.spans import build_requests, requests_from_partials
from ridtrace.forensics.rules.overlap import client_id_reuse, deprecated_header, duplicate_in_flight
from ridtrace.forensics.rules.report import (
    Report,
    analyze,
    analyze_read,
    report_csv,
    report_json,
)
from ridtrace.forensics.rules.skew import clock_offsets, correct_skew
from ridtrace.forensics.rules.streams import crossed_stream, unlinked
from ridtrace.forensics.views.audit import (
    audit,
    daily_series,
    deprecated_usage,
    plot_usage,
    usage_series,
)
from ridtrace.forensics.views.jaeger import to_jaeger
from ridtrace.forensics.views.trace_model import build_trace

__all__ = [
    "ForensicsInputError",
    "LoadedLogs",
    "LoadedRequests",
    "Report",
    "analyze",
    "analyze_read",
    "audit",
    "build_requests",
    "build_trace",
    "client_id_reuse",
    "clock_offsets",
    "correct_skew",
    "crossed_stream",
    "daily_series",
    "deprecated_header",
    "deprecated_usage",
    "duplicate_in_flight",
    "expand_inputs",
    "load_events",
    "plot_usage",
    "read_partials",
    "read_sources",
    "report_csv",
    "report_json",
    "requests_from_partials",
    "to_jaeger",
    "unlinked",
    "usage_series",
]
