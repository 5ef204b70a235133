"""Turning a run's logs into the proof: the analyze report, matched to what callers saw."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson
import pandas as pd

from ridtrace.contract import REQUEST_START
from ridtrace.demo.run import PolicyRun, written_whole
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.rules.report import analyze, report_json
from ridtrace.forensics.views.audit import audit, plot_usage, usage_series
from ridtrace.forensics.views.jaeger import jaeger_traces
from ridtrace.forensics.views.jaeger import write_jaeger as write_traces

__all__ = ["Detection", "analyze_run", "write_audit", "write_jaeger"]


@dataclass(frozen=True)
class Detection:
    """Crossed streams the callers saw versus those the logs report."""

    seen_by_callers: frozenset[str]
    reported: frozenset[str]
    # Callers that hung up on purpose never read their whole answer: the server may
    # have delivered someone else's stream to them, but they cannot confirm or deny it.
    hung_up: frozenset[str] = frozenset()

    @property
    def missed(self) -> frozenset[str]:
        return self.seen_by_callers - self.reported

    @property
    def invented(self) -> frozenset[str]:
        return self.reported - self.seen_by_callers - self.hung_up


def analyze_run(run: PolicyRun) -> pd.DataFrame:
    """Analyze the run's logs, keep the JSON report on the run, return the requests frame."""
    loaded = load_events([str(run.log_dir)])
    report = analyze(loaded)
    run.report = report_json(report)
    with written_whole(run.log_dir.parent / "report.json") as report_file:
        # Ended by a newline, as `analyze -o` writes it (a text file's last line ends so).
        report_file.write_bytes(orjson.dumps(run.report, option=orjson.OPT_INDENT_2) + b"\n")
    requests = report.requests
    known = requests["span_id"].notna() & requests["trace_id"].notna()
    spans = requests.loc[known, "span_id"].astype(str)
    run.trace_of_span = dict(zip(spans, requests.loc[known, "trace_id"].astype(str), strict=True))
    # Under OTEL_PROPAGATORS=none the stack reads no caller's traceparent: a span's trace
    # is then none of the calls', and every crossed stream went unmatched. The request_id
    # its request.start line carries (minted, whatever the id policy later logs) is the
    # one its call got back in x-server-request-id, and names the call instead.
    call_of_id = {r.server_request_id: r.call.trace_id for r in run.results
                  if r.server_request_id}
    planned = {r.call.trace_id for r in run.results}
    events = loaded.events
    starts = events[(events["event"] == REQUEST_START).to_numpy()]
    for span, request_id in zip(starts["span_id"], starts["request_id"], strict=True):
        if run.trace_of_span.get(str(span)) not in planned and request_id in call_of_id:
            run.trace_of_span[str(span)] = call_of_id[request_id]
    return requests


def crossed_detection(run: PolicyRun) -> Detection:
    """Match ``crossed_stream`` findings to calls through the caller-chosen trace ids."""
    seen = frozenset(r.call.trace_id for r in run.not_own_output if r.foreign_prompts)
    reported = frozenset(
        run.trace_of_span.get(str(f.get("span_id")), f"span:{f.get('span_id')}")
        for f in run.findings("crossed_stream")
    )
    hung_up = frozenset(r.call.trace_id for r in run.results if r.call.disconnect)
    return Detection(seen, reported, hung_up)


def write_jaeger(run: PolicyRun) -> Path:
    """The run as a Jaeger "JSON File" upload: what ``ridtrace export jaeger`` writes for
    its logs, each span with its log lines (built from the requests alone, the spans
    came without them)."""
    events = load_events([str(run.log_dir)]).events
    path = run.log_dir.parent / "traces.json"
    with written_whole(path) as partial, partial.open("w", encoding="utf-8") as out:
        write_traces(jaeger_traces(build_requests(events), events), out.write)
        out.write("\n")  # as `export jaeger -o` ends it
    return path


def write_audit(run: PolicyRun, requests: pd.DataFrame) -> tuple[pd.DataFrame, Path | None]:
    """Deprecated-header audit of the run, and its plot when matplotlib is installed."""
    table = audit(requests, by="header")
    path = run.log_dir.parent / "deprecated-headers.png"
    try:
        with written_whole(path) as partial:
            plot_usage(usage_series(requests), partial)
    except ImportError:
        return table, None
    return table, path
