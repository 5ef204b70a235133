"""Builders for small hand-made log lines and request frames."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ridtrace.forensics.live.follow import Follower, FollowSettings
from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.records.requests import REQUEST_COLUMNS, VIEW_COLUMNS

T0 = pd.Timestamp("2026-11-29T10:00:00Z")

# The field that names each kind of finding's subject, as generators' truths key them.
FINDING_KEY = {
    "crossed_stream": "span_id",
    "unlinked": "span_id",
    "deprecated_header": "span_id",
    "duplicate_in_flight": "request_id",
    "client_id_reuse": "x_request_id",
}


def at(seconds: float) -> pd.Timestamp:
    """T0 plus `seconds`."""
    return T0 + pd.Timedelta(seconds=seconds)


def requests_frame(*rows: dict[str, Any]) -> pd.DataFrame:
    """A requests frame; each row gives what matters, times as seconds after T0."""
    records = []
    for i, row in enumerate(rows):
        rec: dict[str, Any] = {col: None for col in (*REQUEST_COLUMNS, *VIEW_COLUMNS)}
        rec.update(
            trace_id=f"t{i}", span_id=f"s{i}", side="frontend", file="f.jsonl",
            first_line=10 * i + 1, last_line=10 * i + 2, lines=2,
        )
        rec.update(row)
        rec["start"] = at(rec["start"] or 0.0)
        rec["end"] = at(rec["end"] if rec["end"] is not None else 1.0)
        records.append(rec)
    frame = pd.DataFrame.from_records(records, columns=[*REQUEST_COLUMNS, *VIEW_COLUMNS])
    for col in ("unlinked_line", "foreign_line", "deprecated_line"):
        frame[col] = frame[col].astype("Int64")
    return frame


def rt(event: str | None = None, **fields: Any) -> str:
    """One ridtrace/1 JSON line."""
    line: dict[str, Any] = {
        "time": "2026-11-29T10:00:00.000000Z", "level": "INFO", "message": event or "hello",
        "logger": "test", "schema": "ridtrace/1", "service": "frontend", "pid": 1,
    }
    if event:
        line["event"] = event
    line.update(fields)
    return json.dumps(line)


def rt_at_us(us: int, event: str, service: str, **fields: Any) -> str:
    """One ridtrace/1 line of `service`, `us` microseconds after T0 (exact: no float)."""
    assert us < 60_000_000, "within T0's minute"
    time = f"2026-11-29T10:00:{us // 1_000_000:02d}.{us % 1_000_000:06d}Z"
    return rt(event, time=time, service=service, **fields)


def ts(seconds: float) -> str:
    """RFC 3339 time `seconds` after T0, as the logs write it."""
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rt_request(
    span: str, rid: str, start: float, end: float, *, trace: str | None = None,
    xrid: str | None = None, **end_fields: Any,
) -> list[str]:
    """request.start + request.end lines of one frontend request."""
    ctx: dict[str, Any] = {"request_id": rid, "trace_id": trace or f"{span:0>32}", "span_id": span}
    if xrid:
        ctx["x_request_id"] = xrid
    return [
        rt("request.start", time=ts(start), **ctx, method="POST", path="/v1/chat/completions",
           client="10.0.0.1:5000"),
        rt("request.end", time=ts(end), **ctx, status=200, outcome="ok", **end_fields),
    ]


def legacy_rotated(directory: Path, spans: tuple[str, str] = ("a1", "b2")) -> tuple[Path, Path]:
    """Two callers that held client id ``7`` at once, their log rotated mid-incident.

    Under the legacy id policy `request.start` logs a minted id and the later lines the
    client's, the id that collided. logrotate moved the starts to ``frontend.jsonl.1``;
    the ends are in the live ``frontend.jsonl``. Returns (rotated part, live file).
    """
    starts, ends = [], []
    for span, minted, start, end in ((spans[0], "1111aaaa-1111-4111-8111-111111111111", 0.0, 1.0),
                                     (spans[1], "2222bbbb-2222-4222-8222-222222222222", 0.2, 1.2)):
        ctx = {"trace_id": f"{span:0>32}", "span_id": span, "x_request_id": "7"}
        starts.append((start, rt("request.start", time=ts(start), request_id=minted,
                                 method="POST", path="/v1/chat/completions", **ctx)))
        ends.append((start + 0.1, rt("dispatch.attempt", time=ts(start + 0.1), request_id="7",
                                     **ctx)))
        ends.append((end, rt("request.end", time=ts(end), request_id="7", status=200,
                             outcome="ok", **ctx)))
    directory.mkdir(parents=True, exist_ok=True)
    rotated, live = directory / "frontend.jsonl.1", directory / "frontend.jsonl"
    rotated.write_text("".join(line + "\n" for _, line in sorted(starts)))
    live.write_text("".join(line + "\n" for _, line in sorted(ends)))
    return rotated, live


def jaeger_spans(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The spans of an `export jaeger` document by their id as logged (Jaeger's own id
    is hex of its width; the logged one is then its ``span_id`` tag)."""
    spans = {}
    for trace in doc["data"]:
        for span in trace["spans"]:
            tags = {t["key"]: t["value"] for t in span["tags"]}
            spans[str(tags.get("span_id", span["spanID"]))] = span
    return spans


def follow_as_written(folder: Path, lines: list[tuple[float, str, str]]) -> list[dict[str, Any]]:
    """The findings of a follower of `folder` while `lines` ((time, file name, line)) are
    appended in the order given, a poll after each, then its finish."""
    for name in {name for _, name, _ in lines}:
        (folder / name).touch()
    follower = Follower([str(folder)], FollowSettings(settle_s=0))
    follower.start()
    found: list[dict[str, Any]] = []
    try:
        for _, name, line in lines:
            with (folder / name).open("a") as handle:
                handle.write(line + "\n")
            found += follower.poll()[0]
        found += follower.finish()
    finally:
        follower.close()
    return found


def followed_summary(folder: Path, **settings: Any) -> dict[str, Any]:
    """The summary of ``analyze --follow --from-start FOLDER`` stopped once it has read
    what is written: one pass of a real `Follower` (`settings` as `FollowSettings`
    takes them), closed whatever happens."""
    follower = Follower([str(folder)], FollowSettings(from_start=True, **settings))
    follower.start()
    try:
        follower.run(lambda f: True, stop=lambda: True)
        return follower.summary()
    finally:
        follower.close()


def watched_lines(watch: Watch) -> list[tuple[str, int, bytes]]:
    """(file name, line, text) of every whole line `watch` hands out this poll."""
    watch.discover()
    chunks, _ = watch.read(1 << 20)
    return [
        (Path(chunk.name).name, chunk.first_line + k, text)
        for chunk in chunks for k, text in enumerate(chunk.data.tobytes().splitlines())
    ]


def watched_numbers(watch: Watch) -> list[int]:
    """The line numbers of every whole line `watch` hands out this poll."""
    return [line for _, line, _ in watched_lines(watch)]

def engine_report(request: Any, engine: str, directory: Path) -> dict[str, Any]:
    """The JSON report of `directory` by `engine` (``dask``: the module's in-process
    ``client`` fixture, small blocks; else the local engine)."""
    from ridtrace.forensics.reading.inputs import expand_inputs
    from ridtrace.forensics.records.read import read_partials
    from ridtrace.forensics.rules.report import analyze_read, report_json

    if engine == "dask":
        from ridtrace.forensics.dask_engine.engine import analyze_dask

        return report_json(analyze_dask(request.getfixturevalue("client"), [str(directory)],
                                        block_bytes=1 << 20))
    return report_json(analyze_read(read_partials(expand_inputs([str(directory)]))))
