"""Requests with no end line that share their request_id with a later caller.

A span ends at its last line read, so two requests holding one id at the moment the
logs were read (both in flight, only their ``request.start`` logged) overlapped
nothing: batch ``analyze`` said "No findings.", exit 0, over what may be a duplicate
in flight. The logs cannot tell a request still running from one whose process died,
so the read is named incomplete (exit 3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt, rt_request, ts


def _request(start: float, end: float | None, request_id: str, span: str) -> str:
    """A frontend request's lines; with no `end`, only its request.start."""
    lines = rt_request(span, request_id, start, start if end is None else end)
    return "\n".join(lines if end is not None else lines[:1]) + "\n"


def _analyze(log: Path, text: str) -> tuple[int, dict]:
    log.write_text(text)
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q"])
    return result.exit_code, json.loads(result.stdout)


def _open_reasons(summary: dict) -> list[str]:
    return [r for r in summary["incomplete_reasons"] if "no end line" in r]


@pytest.mark.parametrize("second_ends", [False, True])
def test_a_request_with_no_end_whose_id_a_later_caller_took_makes_the_read_incomplete(
    tmp_path: Path, second_ends: bool,
) -> None:
    text = (_request(10.0, 10.1, "before", "a0a0a0a0a0a0a0a0")
            + _request(11.0, None, "shared", "b1b1b1b1b1b1b1b1")
            + _request(12.0, 12.5 if second_ends else None, "shared",
                       "c2c2c2c2c2c2c2c2")
            + _request(13.0, 13.1, "after", "d3d3d3d3d3d3d3d3"))
    code, doc = _analyze(tmp_path / "frontend.jsonl", text)
    summary = doc["summary"]
    assert summary["duplicate_in_flight"] == 0 and summary["incomplete"]
    (reason,) = _open_reasons(summary)
    assert reason.startswith("1 request_id(s) held by a request with no end line")
    assert code == 3


def test_ended_requests_reusing_an_id_one_after_another_are_complete(tmp_path: Path) -> None:
    text = (_request(11.0, 11.5, "shared", "b1b1b1b1b1b1b1b1")
            + _request(12.0, 12.5, "shared", "c2c2c2c2c2c2c2c2"))
    code, doc = _analyze(tmp_path / "frontend.jsonl", text)
    assert (code, doc["summary"]["incomplete"], doc["summary"]["duplicate_in_flight"]) == (
        0, False, 0)


def test_an_open_request_alone_with_its_id_is_complete(tmp_path: Path) -> None:
    text = (_request(11.0, None, "mine", "b1b1b1b1b1b1b1b1")
            + _request(12.0, 12.5, "other", "c2c2c2c2c2c2c2c2"))
    code, doc = _analyze(tmp_path / "frontend.jsonl", text)
    assert (code, doc["summary"]["incomplete"]) == (0, False)


def test_an_open_request_already_found_as_a_duplicate_adds_no_reason(tmp_path: Path) -> None:
    # The later caller started before the open one's last line: seen overlapping already.
    ctx = {"request_id": "shared", "trace_id": f"{'b1' * 8:0>32}", "span_id": "b1" * 8}
    text = (_request(11.0, None, "shared", "b1b1b1b1b1b1b1b1")
            + _request(11.2, 11.3, "shared", "c2c2c2c2c2c2c2c2")
            + rt("request.progress", time=ts(11.4), **ctx) + "\n")
    code, doc = _analyze(tmp_path / "frontend.jsonl", text)
    assert doc["summary"]["duplicate_in_flight"] == 1 and code == 1
    assert _open_reasons(doc["summary"]) == []


@pytest.mark.extra("dask")
def test_the_dask_engine_names_the_same_incomplete_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ridtrace.forensics.dask_engine import engine as dask_engine

    monkeypatch.setitem(dask_engine.LOCAL_CLUSTER_OPTIONS, "processes", False)
    log = tmp_path / "frontend.jsonl"
    code, local = _analyze(log, _request(11.0, None, "shared", "b1b1b1b1b1b1b1b1")
                           + _request(12.0, None, "shared", "c2c2c2c2c2c2c2c2"))
    result = CliRunner().invoke(main, ["analyze", str(log), "--format", "json", "-q",
                                       "--engine", "dask"])
    assert (result.exit_code, json.loads(result.stdout)) == (code, local) and code == 3
