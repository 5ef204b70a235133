"""Log forensics: join frontend and worker logs, find who received whose output.

The stages, one subpackage each: ``reading`` (inputs → numbered lines → typed,
normalised columns, by DuckDB), ``records`` (one row per request span), ``rules``
(the findings, clock skew, the report), ``views`` (audit, Jaeger export, the trace
view) and ``dask_engine`` (the same stages on a Dask cluster). Pure functions over
Arrow tables and pandas DataFrames; the ``ridtrace`` CLI is a thin layer over them.
Its public names are imported on first use (PEP 562): a stage imports only what it
needs, so the live follower (``ridtrace analyze --follow``) never loads pandas. Using
any of them imports pandas, pyarrow and duckdb, which is why ``ridtrace.tracing``
never imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ridtrace.lazy_names import lazy_names

if TYPE_CHECKING:
    from ridtrace.forensics.reading.events import LoadedLogs, load_events, read_sources
    from ridtrace.forensics.reading.inputs import ForensicsInputError, expand_inputs
    from ridtrace.forensics.records.read import LoadedRequests, read_partials
    from ridtrace.forensics.records.spans import build_requests, requests_from_partials
    from ridtrace.forensics.rules.deprecated import deprecated_header
    from ridtrace.forensics.rules.overlap import client_id_reuse, duplicate_in_flight
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

# Where each public name lives.
_HOME = {
    "ForensicsInputError": "ridtrace.forensics.reading.inputs",
    "LoadedLogs": "ridtrace.forensics.reading.events",
    "LoadedRequests": "ridtrace.forensics.records.read",
    "Report": "ridtrace.forensics.rules.report",
    "analyze": "ridtrace.forensics.rules.report",
    "analyze_read": "ridtrace.forensics.rules.report",
    "audit": "ridtrace.forensics.views.audit",
    "build_requests": "ridtrace.forensics.records.spans",
    "build_trace": "ridtrace.forensics.views.trace_model",
    "client_id_reuse": "ridtrace.forensics.rules.overlap",
    "clock_offsets": "ridtrace.forensics.rules.skew",
    "correct_skew": "ridtrace.forensics.rules.skew",
    "crossed_stream": "ridtrace.forensics.rules.streams",
    "daily_series": "ridtrace.forensics.views.audit",
    "deprecated_header": "ridtrace.forensics.rules.deprecated",
    "deprecated_usage": "ridtrace.forensics.views.audit",
    "duplicate_in_flight": "ridtrace.forensics.rules.overlap",
    "expand_inputs": "ridtrace.forensics.reading.inputs",
    "load_events": "ridtrace.forensics.reading.events",
    "plot_usage": "ridtrace.forensics.views.audit",
    "read_partials": "ridtrace.forensics.records.read",
    "read_sources": "ridtrace.forensics.reading.events",
    "report_csv": "ridtrace.forensics.rules.report",
    "report_json": "ridtrace.forensics.rules.report",
    "requests_from_partials": "ridtrace.forensics.records.spans",
    "to_jaeger": "ridtrace.forensics.views.jaeger",
    "unlinked": "ridtrace.forensics.rules.streams",
    "usage_series": "ridtrace.forensics.views.audit",
}


# Hidden from type checkers: a module `__getattr__` makes every name, a misspelt one
# too, type as Any; they read the real names from the TYPE_CHECKING imports above.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(globals(), _HOME)
