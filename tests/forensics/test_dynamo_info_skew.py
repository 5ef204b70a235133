"""Clock skew on Dynamo logs written at the frontend's default INFO level.

At INFO a Dynamo `http-request` span logs `http response sent` and `SPAN_CLOSED`, with no
outcome (its DEBUG `request completed` states one). Such callers bounded their workers'
offsets from below only, as failed ones do: a worker 2 s ahead was never corrected
(zero fits every bound from below), so a real duplicate on it was missed ("No
findings", exit 0) and a sequential reuse reported as one. And the parts of one rotated
worker log were placed apart: a live part whose one span worked for a caller whose log
was lost kept its raw clock while its rotated part was corrected.
"""

from __future__ import annotations

import gzip
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.rules.report import analyze, report_json

_BASE = datetime(2026, 10, 2, 15, 0, 0, tzinfo=UTC)


class _Logs:
    """Dynamo lines at INFO (span events on), each file on its own clock."""

    def __init__(self, skew_ms: dict[str, int]) -> None:
        self.skew_ms = skew_ms
        self.rows: dict[str, list[tuple[float, str]]] = {name: [] for name in skew_ms}
        self._rng = random.Random(5)

    def _hex(self, n: int) -> str:
        return "".join(self._rng.choice("0123456789abcdef") for _ in range(n))

    def _emit(self, file: str, ms: float, message: str, fields: dict[str, Any]) -> None:
        time = _BASE + timedelta(milliseconds=ms + self.skew_ms[file])
        line = {"time": time.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "level": "INFO",
                "target": "request_span", "message": message, **fields}
        self.rows[file].append((ms, json.dumps(line)))

    def request(self, start: float, end: float, rid: str, worker: str, *,
                front: bool = True, frontend: str = "fe") -> None:
        trace, span = self._hex(32), self._hex(16)
        ctx = {"method": "POST", "span_id": span, "span_name": "http-request",
               "trace_id": trace, "uri": "/v1/chat/completions", "x_dynamo_request_id": rid}
        if front:
            self._emit(frontend, start, "SPAN_FIRST_ENTRY", ctx)
            self._emit(frontend, end - 0.1, "http response sent",
                       {**ctx, "latency_ms": str(int(end - start)), "status": "200"})
            self._emit(frontend, end, "SPAN_CLOSED",
                       {**ctx, "time.duration_us": int((end - start) * 1000)})
        work = {"parent_id": span, "request_id": rid, "span_id": self._hex(16),
                "span_name": "handle_payload", "trace_id": trace}
        self._emit(worker, start + 20, "SPAN_FIRST_ENTRY", work)
        self._emit(worker, end - 20, "SPAN_CLOSED",
                   {**work, "time.duration_us": int((end - start - 40) * 1000)})

    def write(self, folder: Path, rotated: dict[str, int] | None = None) -> None:
        """Each file; `rotated`: for a file, how many of its first lines go to its
        rotated part (``NAME.1.gz``)."""
        for name, rows in self.rows.items():
            lines = [text + "\n" for _, text in sorted(rows)]
            cut = (rotated or {}).get(name, 0)
            if cut:
                with gzip.open(folder / f"{name}.jsonl.1.gz", "wt") as part:
                    part.writelines(lines[:cut])
            (folder / f"{name}.jsonl").write_text("".join(lines[cut:]))


def _errors(folder: Path) -> tuple[list[str], dict[str, float]]:
    doc = report_json(analyze(load_events([str(folder)], lean=True)))
    kinds = [f["kind"] for f in doc["findings"] if f["severity"] == "error"]
    return kinds, doc["summary"]["clock_offsets_ms"]


@pytest.mark.parametrize("overlap", [True, False])
def test_a_worker_ahead_of_info_level_callers_is_corrected(tmp_path: Path, overlap: bool) -> None:
    logs = _Logs({"fe": 0, "worker-1": 2000, "worker-2": 0})
    for i in range(40):
        logs.request(100 + i * 600, 600 + i * 600, f"rid-{i}", "worker-1")
    logs.request(30_000, 31_000, "dup-A", "worker-2")
    # Another frontend's caller of the same id, its log lost, served by worker-1: in
    # flight with A, or done 1.5 s before A began (on worker-1's clock, over A both).
    start = 30_500 if overlap else 28_500
    logs.request(start, start + 1000, "dup-A", "worker-1", front=False)
    logs.write(tmp_path)
    kinds, offsets = _errors(tmp_path)
    assert offsets == {str(tmp_path / "worker-1.jsonl"): pytest.approx(-2000, abs=1)}
    assert kinds == (["duplicate_in_flight"] if overlap else [])


def test_the_parts_of_one_rotated_worker_log_share_its_clock(tmp_path: Path) -> None:
    logs = _Logs({"fe": 0, "worker-1": 0, "worker-2": 2000})
    for i in range(20):
        logs.request(100 + i * 600, 600 + i * 600, f"rid-{i}", "worker-2")
    # Its only span in the live part: a caller whose frontend log was lost, done 1.3 s
    # before a caller of the same id began (served by another worker).
    logs.request(20_000, 21_000, "dup-R", "worker-2", front=False)
    logs.request(22_300, 23_000, "dup-R", "worker-1")
    logs.write(tmp_path, rotated={"worker-2": 40})
    kinds, offsets = _errors(tmp_path)
    assert offsets == {str(tmp_path / "worker-2.jsonl.1.gz"): pytest.approx(-2000, abs=1),
                       str(tmp_path / "worker-2.jsonl"): pytest.approx(-2000, abs=1)}
    assert kinds == []


def test_audit_dates_use_on_the_corrected_clock(tmp_path: Path) -> None:
    # A replica 2 s ahead: its request (the first to send the header, in true time) was
    # dated 2 s late by audit's first_seen, where analyze and trace correct it.
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    logs = _Logs({"fe": 0, "fe-b": 2000, "worker-1": 0})
    for i in range(10):
        logs.request(100 + i * 600, 600 + i * 600, f"rid-{i}", "worker-1")
    for i in range(3):
        logs.request(50 + i * 600, 400 + i * 600, f"b-{i}", "worker-1", frontend="fe-b")
    logs.write(tmp_path)
    done = CliRunner().invoke(main, ["audit", str(tmp_path), "--format", "json", "-q"])
    (row,) = json.loads(done.stdout)["rows"]
    assert row["header"] == "x-dynamo-request-id" and row["requests"] == 13
    first = datetime.fromisoformat(row["first_seen"])
    assert abs(first - (_BASE + timedelta(milliseconds=50))) < timedelta(milliseconds=1), first
