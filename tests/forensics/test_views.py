"""Views that people read: the audit plot's axis and the Jaeger export's contents."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.views.audit import daily_series, pick_bucket, plot_usage, usage_series
from ridtrace.forensics.views.jaeger import to_jaeger
from tests.forensics.helpers import at, jaeger_spans, requests_frame, rt, ts


def _dep(*starts: float) -> pd.DataFrame:
    return requests_frame(*(
        {"start": t, "end": t + 0.5, "deprecated": "request-id", "client": "10.0.0.1:5"}
        for t in starts
    ))


@pytest.mark.parametrize(("span", "bucket"), [
    (pd.Timedelta(seconds=3), "second"), (pd.Timedelta(minutes=2), "second"),
    (pd.Timedelta(minutes=40), "minute"), (pd.Timedelta(hours=2), "minute"),
    (pd.Timedelta(hours=20), "hour"), (pd.Timedelta(days=3), "hour"),
    (pd.Timedelta(days=30), "day"), (pd.Timedelta(days=4 * 365), "day"),
    (pd.Timedelta(days=20 * 365), "month"), (pd.Timedelta(days=2025 * 365), "year"),
])
def test_bucket_follows_the_time_span(span: pd.Timedelta, bucket: str) -> None:
    assert pick_bucket(span) == bucket


def test_a_few_seconds_of_use_are_plotted_per_second_with_zeros(tmp_path: Path) -> None:
    series = usage_series(_dep(0, 0.2, 3))  # two uses in second 0, one in second 3
    assert series.index.name == "second"
    assert list(series["request-id"]) == [2, 0, 0, 1]


def test_a_few_minutes_of_use_are_plotted_per_minute_with_zeros(tmp_path: Path) -> None:
    series = usage_series(_dep(0, 10, 200))  # two uses in minute 0, one in minute 3
    assert series.index.name == "minute"
    assert list(series["request-id"]) == [2, 0, 0, 1]


def test_use_over_years_is_counted_per_month_from_the_first_of_each(tmp_path: Path) -> None:
    year = 365.25 * 86400
    series = usage_series(_dep(0, 86400, 20 * year))  # two in this month, one 20 years on
    assert series.index.name == "month"
    assert series.index[0] == "2026-11-01" and series.index[-1] == "2046-11-01"
    assert len(series) == 20 * 12 + 1 and series["request-id"].sum() == 3
    assert list(series["request-id"][:2]) == [2, 0]


def test_use_that_stopped_is_zero_to_the_logs_end() -> None:
    # Two days of use in twenty days of logs: the series ended at the last use, so the
    # plot and `daily` showed use to the end, never the run of zeros migration.md says
    # to wait for (and picked hours for a span the logs cover in days).
    day = 86400.0
    uses = _dep(*(h * 3600.0 for h in range(48)))
    quiet = requests_frame(*({"start": 2 * day + h * 3600.0, "end": 2 * day + h * 3600.0 + 1}
                             for h in range(18 * 24)))
    requests = pd.concat([uses, quiet], ignore_index=True)
    last_day = at(2 * day + (18 * 24 - 1) * 3600.0).strftime("%Y-%m-%d")
    for series in (usage_series(requests), daily_series(requests)):
        assert series.index.name == "day" and series.index[-1] == last_day
        # The helpers' T0 is 10:00: the 48 hours of use cover three calendar days.
        assert series["request-id"].sum() == 48 and list(series["request-id"][:3]) == [14, 24, 10]
        assert list(series["request-id"][3:]) == [0] * 18


def test_a_request_dated_decades_on_does_not_stretch_the_series() -> None:
    # One line of a clock set far ahead: the series runs to the last request before
    # it. Ending at the last use instead hid the zeros after it.
    late = requests_frame({"start": 40 * 365.25 * 86400.0, "end": 40 * 365.25 * 86400.0 + 1},
                          {"start": 300.0, "end": 301.0})
    series = usage_series(pd.concat([_dep(0, 10, 200), late], ignore_index=True))
    assert series.index.name == "minute" and list(series["request-id"]) == [2, 0, 0, 1, 0, 0]


@pytest.mark.extra("plot")
def test_plot_y_axis_starts_at_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import matplotlib.axes

    seen: list[tuple[float, float]] = []
    original = matplotlib.axes.Axes.get_ylim

    def spy_savefig(self: object, *args: object, **kwargs: object) -> None:
        seen.append(original(self.axes[0]))  # type: ignore[attr-defined]

    import matplotlib.figure

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy_savefig)
    plot_usage(usage_series(_dep(*[i * 60.0 for i in range(10)] * 50)), tmp_path / "p.png")
    assert seen and seen[0][0] == 0


@pytest.mark.extra("plot")
@pytest.mark.parametrize(("starts", "dates"), [
    ((0, 5, 100), "2026-11-29"),  # seconds: its ticks read 10:00:00, 10:00:05
    ((0, 3600, 7000), "2026-11-29"),  # minutes: its ticks read 10:00, 11:00
    ((0, 86400), "2026-11-29 to 2026-11-30"),  # hours: its ticks read 11-29 10:00, no year
])
def test_a_plot_by_time_of_day_names_the_dates_it_covers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, starts: tuple[float, ...], dates: str
) -> None:
    # Its ticks showed the time of day alone: an API owner could not tell which day (or,
    # per hour, which year) the use was on, nor that a plot ran past midnight.
    import matplotlib.figure

    labels: list[str] = []

    def spy_savefig(self: matplotlib.figure.Figure, *args: object, **kwargs: object) -> None:
        labels.append(self.axes[0].get_xlabel())

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy_savefig)
    plot_usage(usage_series(_dep(*starts)), tmp_path / "p.png")
    assert labels and labels[0].endswith(f", {dates}")


def test_jaeger_leaves_out_health_probes_unless_asked() -> None:
    frame = requests_frame(
        {"route": "/v1/chat/completions", "request_id": "r1"},
        {"route": "/health", "request_id": "h1"},
        {"route": "/readyz/", "request_id": "h2"},
    )
    routes = [s["tags"] for t in to_jaeger(frame)["data"] for s in t["spans"]]
    assert len(routes) == 1
    assert len([s for t in to_jaeger(frame, health=True)["data"] for s in t["spans"]]) == 3


def test_jaeger_references_only_spans_in_the_file() -> None:
    frame = requests_frame(
        {"trace_id": "t", "span_id": "caller", "parent_span_id": "client-side-span"},
        {"trace_id": "t", "span_id": "work", "parent_span_id": "caller", "side": "worker"},
    )
    spans = jaeger_spans(to_jaeger(frame))
    assert spans["work"]["references"] == [{
        "refType": "CHILD_OF", "traceID": spans["caller"]["traceID"],
        "spanID": spans["caller"]["spanID"],
    }]
    assert spans["caller"]["references"] == []
    assert {"key": "parent_span_id", "type": "string", "value": "client-side-span"} in (
        spans["caller"]["tags"]
    )


def test_jaeger_names_worker_spans_after_what_they_did() -> None:
    # Real worker logs carry no route: every worker span was "worker request".
    frame = requests_frame(
        {"trace_id": "t", "span_id": "caller", "route": "/v1/messages", "method": "POST"},
        {"trace_id": "t", "span_id": "work", "parent_span_id": "caller", "side": "worker"},
        {"trace_id": "u", "span_id": "orphan", "parent_span_id": "gone", "side": "worker"},
        {"trace_id": "v", "span_id": "own", "side": "worker", "route": "/worker/generate"},
    )
    names = {key: s["operationName"] for key, s in jaeger_spans(to_jaeger(frame)).items()}
    assert names == {"caller": "POST /v1/messages", "work": "worker /v1/messages",
                     "orphan": "worker request", "own": "worker /worker/generate"}


def test_jaeger_names_a_step_without_a_route_as_its_service_logged_it() -> None:
    # Dynamo's `generate` span (under its `http-request`, where a failed engine call logs
    # its error) was "request", whatever it was; Dynamo's own export names it `generate`.
    frame = requests_frame(
        {"trace_id": "t", "span_id": "http", "route": "/v1/messages", "method": "POST",
         "span_name": "http-request"},
        {"trace_id": "t", "span_id": "gen", "parent_span_id": "http", "span_name": "generate"},
        {"trace_id": "t", "span_id": "unnamed", "parent_span_id": "http"},
        {"trace_id": "t", "span_id": "work", "parent_span_id": "gen", "side": "worker",
         "span_name": "handle_payload"},
    )
    names = {key: s["operationName"] for key, s in jaeger_spans(to_jaeger(frame)).items()}
    assert names == {"http": "POST /v1/messages", "gen": "generate", "unnamed": "request",
                     "work": "worker /v1/messages"}


def test_jaeger_status_is_an_int64_tag() -> None:
    # An HTTP status is an integer in Jaeger's and OpenTelemetry's model; it was the
    # string "500". A status that is not a number (or beyond int64) stays a string.
    frame = requests_frame(
        {"span_id": "a", "status": "500", "outcome": "error"},
        {"span_id": "b", "status": "200"},
        {"span_id": "c", "status": "OK"},
        {"span_id": "d", "status": "9" * 20},  # beyond int64
    )
    tags = {key: {t["key"]: t for t in s["tags"]}
            for key, s in jaeger_spans(to_jaeger(frame)).items()}
    assert tags["a"]["status"] == {"key": "status", "type": "int64", "value": 500}
    assert tags["b"]["status"] == {"key": "status", "type": "int64", "value": 200}
    assert tags["c"]["status"] == {"key": "status", "type": "string", "value": "OK"}
    assert tags["d"]["status"]["type"] == "string"


def test_jaeger_leaves_out_dynamos_live_probe_and_health_subpaths() -> None:
    # Dynamo's frontend answers liveness on /live (DYN_HTTP_SVC_LIVE_PATH); Kubernetes
    # set-ups often probe /health/live and /health/ready: thousands of spans exported.
    frame = requests_frame(
        {"route": "/v1/chat/completions", "request_id": "r1"},
        {"route": "/live", "request_id": "h1"},
        {"route": "/health/ready", "request_id": "h2"},
        {"route": "/healthz/live", "request_id": "h3"},
        # ridtrace's own registry view, polled by tooling such as the demo.
        {"route": "/debug/inflight", "request_id": "h4"},
        {"route": "/v1/models/healthcare", "request_id": "r2"},  # a route, not a probe
    )
    kept = {t["value"] for trace in to_jaeger(frame)["data"] for s in trace["spans"]
            for t in s["tags"] if t["key"] == "request_id"}
    assert kept == {"r1", "r2"}


def test_jaeger_flags_a_5xx_answer_as_an_error_when_no_outcome_was_logged() -> None:
    # Dynamo at INFO level logs a request's HTTP status on "http response sent" and no
    # outcome (its "request completed" is DEBUG): a request answered 500, its Unlinked
    # error on the child span, was drawn as a success in Jaeger's trace list.
    frame = requests_frame(
        {"span_id": "dynamo-500", "status": "500", "route": "/v1/chat/completions"},
        {"span_id": "dynamo-200", "status": "200", "route": "/v1/chat/completions"},
        {"span_id": "rt-error", "status": "503", "outcome": "error"},
        {"span_id": "grpc-unavailable", "status": "14", "outcome": "error"},
        {"span_id": "cancelled-499", "status": "499", "outcome": "cancelled"},
    )
    spans = jaeger_spans(to_jaeger(frame))
    flagged = {span for span, s in spans.items()
               if {"key": "error", "type": "bool", "value": True} in s["tags"]}
    assert flagged == {"dynamo-500", "rt-error", "grpc-unavailable"}


def test_jaeger_span_lasts_until_its_answer_as_the_live_span_did(tmp_path: Path) -> None:
    # The legacy policy's detached pump logs its Unlinked response under the caller's ids
    # after the caller got its 500. The span exported live ended with the response (20 ms);
    # the file said 80 ms, so the same request looked four times longer uploaded than in
    # Jaeger (89 of the 240 frontend spans of a legacy demo run, by up to 97 ms).
    ctx = {"request_id": "r1", "trace_id": "a" * 32, "span_id": "a" * 16}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        rt("request.start", time=ts(0.0), **ctx, method="POST", path="/v1/chat/completions"),
        rt("request.end", time=ts(0.02), **ctx, status=500, outcome="error"),
        rt("response.unlinked", time=ts(0.08), **ctx),
    ]) + "\n")
    events = load_events([str(tmp_path)]).events
    span = jaeger_spans(to_jaeger(build_requests(events), events))["a" * 16]
    assert span["duration"] == 20_000
    # The later line is still the span's: a log of it, at its own time.
    logs = [(log["timestamp"] - span["startTime"], log["fields"][0]["value"]) for log in span["logs"]]
    assert logs == [(0, "request.start"), (20_000, "request.end"), (80_000, "response.unlinked")]
