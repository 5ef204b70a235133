"""Deprecated-header audit: who still sends ``x-dynamo-request-id`` / ``request-id``, and when.

An API owner reads this to decide when support can go: per header, how many requests
and distinct clients, first and last seen, and use per day. "None seen" is that
decision's trigger, so the audit says how much of the input it could read
(`audit_summary`): an empty table over logs it did not understand is no evidence.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, Final, cast

import pandas as pd

from ridtrace.contract import AUDIT_BY, AUDIT_COLUMNS, FRONTEND, WORKER, audit_keys
from ridtrace.forensics.printable import csv_escaped
from ridtrace.forensics.reading.stats import ReadStats, completeness, read_notes
from ridtrace.forensics.rules.overlap import caller_of
from ridtrace.forensics.rules.report import count_requests
from ridtrace.forensics.views.trace_spellings import one_spelling

_UNKNOWN = "(unknown)"


def deprecated_usage(requests: pd.DataFrame) -> pd.DataFrame:
    """One row per (request, deprecated header it sent): header, time, day, client, route."""
    # A worker's work called directly (no caller of its own) is a request too, as the
    # `deprecated_header` rule counts it; a frontend never sends the headers on.
    side = requests["side"]
    caller = caller_of(requests)
    unlogged = ~caller.isin(requests["span_id"]) | (caller == requests["span_id"]).fillna(False)
    own = (side == WORKER) & unlogged
    named = ((side == FRONTEND) | own) & requests["deprecated"].notna()
    dep = requests[named]
    # A frontend span nested in another (Dynamo's `generate` in its `http-request`) is
    # that request's: its use is the request's, once, at the request's route and time.
    request = caller.where(side == FRONTEND, requests["span_id"])[named]
    if (request != dep["span_id"]).fillna(False).any():
        dep = _as_their_requests(requests[side == FRONTEND], dep, request)
    if dep.empty:
        columns = {c: pd.Series(dtype="object") for c in ("header", "client", "route", "span_id")}
        columns["time"] = pd.Series(dtype="datetime64[us, UTC]")
        columns["day"] = pd.Series(dtype="object")
        return pd.DataFrame(columns)
    headers = dep["deprecated"].astype(str).str.split(",")
    # Client ports change per connection; the host is what identifies a client.
    client = dep["client"].astype("object").where(dep["client"].notna(), None)
    host = client.map(lambda c: c.rsplit(":", 1)[0] if isinstance(c, str) else _UNKNOWN)
    route = dep["route"].astype("object").where(dep["route"].notna(), _UNKNOWN)
    frame = pd.DataFrame(
        {
            "header": headers.to_numpy(),
            "time": dep["start"].to_numpy(),
            "client": host.to_numpy(),
            "route": route.to_numpy(),
            "span_id": dep["span_id"].astype("object").to_numpy(),
            # One request: its trace and span (a span id alone is no request's key).
            "request": (dep["trace_id"].astype("object").fillna("").astype(str) + "\x00"
                        + dep["span_id"].astype("object").fillna("").astype(str)).to_numpy(),
        }
    ).explode("header")
    # A header's name in any case, each once a request: "request-id,request-id" counted
    # the request twice, "X-Dynamo-Request-Id" was a row of its own, "" a header.
    frame["header"] = frame["header"].str.strip().str.lower()
    frame = frame[frame["header"] != ""].drop_duplicates(["request", "header"])
    frame = frame.drop(columns="request")
    frame["time"] = pd.to_datetime(frame["time"], utc=True)
    frame["day"] = frame["time"].dt.strftime("%Y-%m-%d")
    return frame.reset_index(drop=True)


def _as_their_requests(
    fronts: pd.DataFrame, dep: pd.DataFrame, request: pd.Series
) -> pd.DataFrame:
    """`dep` with each nested span's row given its request's span, route, client and
    start (`request`: the span id of each row's request, in its trace)."""
    keys = ["trace_id", "span_id"]
    hosts = fronts.drop_duplicates(keys).set_index(keys)
    in_trace = pd.MultiIndex.from_arrays([dep["trace_id"], request])
    nested = (request != dep["span_id"]).fillna(False).to_numpy() & in_trace.isin(hosts.index)
    if not nested.any():
        return dep
    dep = dep.copy()
    request_row = hosts.loc[in_trace[nested]]
    for column in ("start", "client", "route"):
        dep.loc[nested, column] = request_row[column].to_numpy()
    dep.loc[nested, "span_id"] = request_row.index.get_level_values("span_id").to_numpy()
    return dep


def audit_summary(requests: pd.DataFrame, stats: ReadStats) -> dict[str, Any]:
    """What the audit read, as `ridtrace analyze`'s summary counts it, and whether the
    input was incomplete (then use of the headers may be missing from the rows)."""
    return {
        "files": stats.files, "lines": stats.lines, "bad_lines": stats.bad_lines,
        # Callers linked to their workers by ids spelt one way, as analyze counts them.
        "requests": count_requests(one_spelling(requests)),
        **read_notes(stats),
        **completeness(stats, requests=len(requests)),
    }


def audit(requests: pd.DataFrame, by: str = "header") -> pd.DataFrame:
    """Aggregate deprecated-header use by ``header``, ``client``, ``route`` or ``day``."""
    if by not in AUDIT_BY:
        raise ValueError(f"by must be one of {AUDIT_BY}, not {by!r}")
    usage = deprecated_usage(requests)
    keys = list(audit_keys(by))
    cols = list(AUDIT_COLUMNS)
    if usage.empty:
        return pd.DataFrame(columns=keys + cols)
    # Distinct known clients per group by pandas' own nunique: a Python function per
    # group cost ~200 µs each, 22 s for 100k client hosts `--by client`.
    known = usage["client"].where(usage["client"] != _UNKNOWN)
    grouped = usage.assign(_known_client=known).groupby(keys, sort=True)
    out = grouped.agg(
        requests=("span_id", "size"),
        clients=("_known_client", "nunique"),
        first_seen=("time", "min"),
        last_seen=("time", "max"),
    ).reset_index()
    if by == "day":
        return out
    order = [False] + [True] * len(keys)
    ranked = out.sort_values(["requests", *keys], ascending=order, ignore_index=True)
    return ranked


# Days `daily_series` zero-fills at most: one line logged with a clock that was never set
# (Go's zero time, year 1) zero-filled 739,000 days, 60 MB of JSON from a 9-line log.
MAX_FILLED_DAYS: Final = 3660


def daily_series(requests: pd.DataFrame) -> pd.DataFrame:
    """Requests per day (rows) and header (columns); days without use are zero while the
    use spans at most `MAX_FILLED_DAYS` days, and left out beyond that."""
    return usage_series(requests, bucket="day", max_filled=MAX_FILLED_DAYS)


# Buckets a plot can use, the longest time span each suits, and pandas' frequency (a
# month or a year has no fixed length: those buckets start at calendar periods).
BUCKETS: Final = (
    ("second", pd.Timedelta(minutes=3), "s"), ("minute", pd.Timedelta(hours=3), "min"),
    ("hour", pd.Timedelta(days=4), "h"), ("day", pd.Timedelta(days=5 * 366), "D"),
    ("month", pd.Timedelta(days=100 * 366), "MS"), ("year", None, "YS"),
)
_PERIODS: Final = {"MS": "M", "YS": "Y"}


def pick_bucket(span: pd.Timedelta) -> str:
    """The bucket that shows a time span of `span` in tens to a few hundred points."""
    for name, longest, _ in BUCKETS:
        if longest is None or span <= longest:
            return name
    return "year"


def _bucket_starts(times: pd.Series, freq: str) -> pd.Series:
    utc = times.dt.tz_convert("UTC")
    if freq not in _PERIODS:
        return cast(pd.Series, utc.dt.floor(freq))
    starts = utc.dt.tz_localize(None).dt.to_period(_PERIODS[freq]).dt.start_time
    return cast(pd.Series, starts.dt.tz_localize("UTC"))


def usage_series(
    requests: pd.DataFrame, *, bucket: str | None = None, max_filled: int | None = None
) -> pd.DataFrame:
    """Requests per bucket (rows: bucket starts) and header (columns); empty buckets are 0.

    `bucket` is ``second`` … ``day``, ``month`` or ``year``; by default the one that suits
    the time span from the first use to the logs' last request (`pick_bucket`). With
    `max_filled`, a span of more buckets than that keeps only the buckets with use.

    The series runs on to the last request read, not the last use: use that stopped is
    a run of zeros to the logs' end, the sign support can go. It ended at the last use,
    whose bucket is never zero, and a header no longer sent looked in use to the end.
    """
    usage = deprecated_usage(requests)
    if usage.empty:
        return pd.DataFrame()
    times = usage["time"]
    last = _logs_end(requests, times)
    name = bucket or pick_bucket(last - times.min())
    freq = {n: f for n, _, f in BUCKETS}[name]
    usage = usage.assign(bucket=_bucket_starts(times, freq))
    table = usage.pivot_table(index="bucket", columns="header", values="span_id", aggfunc="size")
    ends = _bucket_starts(pd.Series([last], dtype=times.dtype), freq)
    full = pd.date_range(table.index.min(), max(table.index.max(), ends.iloc[0]), freq=freq,
                         unit="us")
    if max_filled is None or len(full) <= max_filled:
        table = table.reindex(full, fill_value=0)
    table = table.fillna(0).astype(int)
    table.index.name = name
    if name in ("day", "month", "year"):
        table.index = [_date_text(stamp) for stamp in table.index]
        table.index.name = name
    return table


def _date_text(stamp: pd.Timestamp) -> str:
    # strftime writes year 1 as '1' on some platforms; a report keeps four digits.
    return f"{stamp.year:04d}-{stamp.month:02d}-{stamp.day:02d}"


_TICKS: Final = {"second": "%H:%M:%S", "minute": "%H:%M", "hour": "%m-%d %H:00",
                  "month": "%Y-%m", "year": "%Y"}


def _dates_covered(bucket: str, x: pd.DatetimeIndex) -> str:
    """``, 2026-11-29`` (or ``, 2026-11-29 to 2026-11-30``) for a plot whose ticks show
    the time of day (and, per hour, no year): without it the figure named no date."""
    if bucket not in ("second", "minute", "hour"):
        return ""
    first, last = _date_text(x.min()), _date_text(x.max())
    return f", {first}" if first == last else f", {first} to {last}"


# How much of the first reason the image's caveat shows (file names are anyone's text).
_CAVEAT_CHARS = 130


def _legend_text(header: str, width: int = 60) -> str:
    # A control as its \uXXXX escape, as JSON and CSV output write it: every font has
    # those characters, where DejaVu Sans has no control pictures (a box in the legend,
    # and matplotlib's "Glyph missing" warning on stderr under -q).
    shown = csv_escaped(header)
    return shown if len(shown) <= width else shown[: width - 1] + "…"


class PlotFormatError(ValueError):
    """A plot file named for no format matplotlib writes (``use.txt``)."""


def plot_format(path: Path) -> str:
    """The image format `path` names, checked before any log is read (the CLI asks
    first): `PlotFormatError` for a name no matplotlib format has, `ImportError` without
    the ``plot`` extra.

    The format is the name's, given to savefig: left to infer it, matplotlib appended
    ".png" to a name without an extension (--plot /dev/full made /dev/full.png, exit 0)
    and raised ValueError for one no image has (exit 4).
    """
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError as exc:  # named as the CLI, the Dask engine and the gRPC package do
        raise ImportError("plot_usage needs the plot extra: pip install 'ridtrace[plot]'") from exc
    fmt = path.suffix[1:].lower() or "png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if fmt not in formats:
        raise PlotFormatError(f"'.{fmt}' is no image format; name the file .png, or "
                              f"one of .{', .'.join(sorted(formats))}")
    if fmt == "pgf":
        import matplotlib

        tex = matplotlib.rcParams["pgf.texsystem"]
        if shutil.which(tex) is None:
            # matplotlib's pgf backend sets the text through a TeX system it runs: without
            # one, savefig raised RuntimeError (a traceback, exit 4: "ridtrace failed").
            raise PlotFormatError(f"'.pgf' is typeset by {tex}, which is not installed; "
                                  "name the file .pdf or .svg for a vector image")
    return fmt


def _logs_end(requests: pd.DataFrame, used: pd.Series) -> pd.Timestamp:
    """The last request read, where the use series ends, or the last use when that is
    later. Requests more than `MAX_FILLED_DAYS` after the first use are passed over: a
    clock set years ahead on one line would stretch the series over them, and ending at
    the last use instead hid the zeros after it."""
    last_use = pd.Timestamp(used.max())
    starts = pd.to_datetime(requests["start"], utc=True)
    read = pd.Timestamp(starts[starts <= used.min() + pd.Timedelta(days=MAX_FILLED_DAYS)].max())
    return last_use if pd.isna(read) or read <= last_use else read


def plot_usage(
    series: pd.DataFrame, path: Path, *, into: BinaryIO | None = None,
    incomplete: Sequence[str] = (),
) -> None:
    """Write a PNG of use per bucket per header (matplotlib, imported only here).

    The y axis starts at zero, so a drop to few requests looks like one. The format is
    `path`'s; `into`, when given, is the handle the image is written to instead (the
    CLI's file written whole). `incomplete`: the reasons part of the input was not read
    (the summary's), which the image says: it travels without the report, and "no
    deprecated headers seen" on logs not read is the audit's false all-clear.
    """
    try:
        import matplotlib
    except ImportError as exc:  # named as the CLI, the Dask engine and the gRPC package do
        raise ImportError("plot_usage needs the plot extra: pip install 'ridtrace[plot]'") from exc

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bucket = str(series.index.name or "day")
    # Header names come from the logs: matplotlib read "$...$" in one as math (a name
    # it could not parse stopped the audit, exit 4) and left out of the legend a name
    # starting with "_"; each is drawn as its text, controls shown, long ones cut.
    with plt.rc_context({"text.parse_math": False}):
        _draw(series, path, bucket, into, incomplete)


def _draw(series: pd.DataFrame, path: Path, bucket: str, into: BinaryIO | None,
          incomplete: Sequence[str]) -> None:
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(8, 4))
    try:
        fmt = plot_format(path)
        dates = ""
        if series.empty:
            seen = "in what could be read" if incomplete else "seen"
            ax.text(0.5, 0.5, f"no deprecated headers {seen}", ha="center", va="center")
        else:
            x = pd.to_datetime(series.index, format="ISO8601")
            dates = _dates_covered(bucket, x)
            lines = [ax.plot(x, series[header], marker="o" if len(x) <= 60 else None)[0]
                     for header in series.columns]
            ax.legend(lines, [_legend_text(str(header)) for header in series.columns])
            # No padding beyond the data: a time logged at year 1 (Go's zero time) padded
            # below it is outside the dates matplotlib can draw.
            ax.margins(x=0)
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # requests are counts
            ticks = mdates.DateFormatter(_TICKS.get(bucket, "%Y-%m-%d"))  # type: ignore[no-untyped-call]
            ax.xaxis.set_major_formatter(ticks)
            if len(x) <= 12:  # one tick per bucket: no label repeated within a bucket
                ax.set_xticks(mdates.date2num(x.to_pydatetime()))  # type: ignore[no-untyped-call]
            if len(x) == 1:  # one bucket: frame it instead of a zero-width axis
                steps = {"second": pd.Timedelta(seconds=1), "minute": pd.Timedelta(minutes=1),
                         "hour": pd.Timedelta(hours=1)}
                step = steps.get(bucket, pd.Timedelta(days=1))
                ax.set_xlim(x[0] - step, x[0] + step)  # type: ignore[arg-type]  # matplotlib takes Timestamps
        ax.set_title(f"Deprecated request-id headers: requests per {bucket}")
        ax.set_ylabel("requests")
        ax.set_xlabel(f"time (UTC), per {bucket}{dates}")
        fig.autofmt_xdate()
        if incomplete:
            many = f" (and {len(incomplete) - 1} more)" if len(incomplete) > 1 else ""
            fig.text(0.01, 0.01, _legend_text(f"INPUT INCOMPLETE, use may be missing: "
                                              f"{incomplete[0]}{many}", _CAVEAT_CHARS),
                     color="tab:red", fontsize=8, ha="left", va="bottom")
        fig.tight_layout(rect=(0, 0.04, 1, 1) if incomplete else None)
        fig.savefig(path if into is None else into, format=fmt)
    finally:
        plt.close(fig)
