"""The Dask engine reports exactly what the pandas engine reports, on the same inputs.

One in-process `LocalCluster` with 2 workers serves the module (threads, no process
start-up). Small blocks split the test files into many parts, each read through the
same stages as a whole file.
"""

# ruff: noqa: E402  (the imports after require_extra need the extra)
from __future__ import annotations

import gzip
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.support.extras import require_extra

require_extra("dask")  # before the imports below, which need it

from ridtrace.forensics.dask_engine.blocks import LogFile, plan_blocks, read_block
from ridtrace.forensics.dask_engine.engine import (
    analyze_dask,
    load_requests,
)
from ridtrace.forensics.dask_engine.urls import expand_urls
from ridtrace.forensics.reading.events import load_events
from ridtrace.forensics.reading.inputs import expand_inputs
from ridtrace.forensics.records.finished import finish_requests
from ridtrace.forensics.records.partials import (
    combine_requests,
    partial_requests,
)
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.records.spans import build_requests
from ridtrace.forensics.rules.report import analyze_read, report_json
from ridtrace.forensics.views.audit import audit, daily_series
from ridtrace.forensics.views.jaeger import to_jaeger
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.forensics.helpers import jaeger_spans, legacy_rotated, rt

DATA = Path(__file__).parent / "data"
BLOCK = 128 << 10  # small enough to split the test files into many blocks


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Synthetic logs with every fault kind, bad lines, a .gz and a non-log file."""
    out = tmp_path_factory.mktemp("faulty")
    write_logs(out, SynthSpec(requests=400, seed=3, workers=3, crossed=2, collisions=2,
                              duplicates=2, client_reuse=2, deprecated_every=25))
    front = out / "frontend.jsonl"
    lines = front.read_text().splitlines(keepends=True)
    # Bad lines of every kind, spread over many blocks, more than the samples kept.
    for i, bad in enumerate(["garbage\n", '{"time": 5}\n', '{"truncated": \n',
                             '{"schema":"ridtrace/1","level":"INFO"}\n', "\x00\x01\n"] * 3):
        lines.insert(100 + i * 97, bad)
    front.write_text("".join(lines))
    worker = out / "worker-8103.jsonl"
    (out / "worker-8103.jsonl.gz").write_bytes(gzip.compress(worker.read_bytes()))
    worker.unlink()
    (out / "README.md").write_text("not a log\n")
    return out


def _docs(client: Any, paths: list[str], **window: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    want = report_json(analyze_read(read_partials(expand_inputs(paths), **window), **window))
    got = report_json(analyze_dask(client, paths, block_bytes=BLOCK, **window))
    return want, got


def test_synthetic_faults_same_report(client: Any, faulty: Path) -> None:
    want, got = _docs(client, [str(faulty)])
    assert got == want
    summary = want["summary"]
    assert summary["bad_lines"] == 15 and len(summary["bad_line_samples"]) == 10
    assert [n["file"] for n in summary["ignored_files"]] == [str(faulty / "README.md")]
    assert summary["errors"] > 0 and summary["files"] == 4
    assert len(plan_blocks(_files(faulty), BLOCK)) >= 8  # really split


def test_bad_line_numbers_exact_across_blocks(faulty: Path) -> None:
    front = faulty / "frontend.jsonl"
    text = front.read_bytes().split(b"\n")
    want = {i + 1 for i, line in enumerate(text) if line.startswith((b"garbage", b"\x00"))}
    files = [LogFile(str(front), str(front), front.stat().st_size)]
    names = [str(front)]
    seen: set[int] = set()
    offset = 0
    for block in plan_blocks(files, BLOCK):
        result = read_block(block, names, lean=True)
        seen |= {s.line + offset for s in result.stats.samples
                 if s.reason in ("not JSON", "binary data")}
        offset += result.lines
    assert seen == want and offset == len(text) - 1


def test_window_same_report(client: Any, faulty: Path) -> None:
    since, until = pd.Timestamp("2026-11-29T10:00:00.5Z"), pd.Timestamp("2026-11-29T10:00:01.5Z")
    want, got = _docs(client, [str(faulty)], since=since, until=until)
    assert got == want and want["summary"]["lines"] > 0


def test_requests_and_audit_same_frames(client: Any, faulty: Path) -> None:
    want = build_requests(load_events([str(faulty)]).events)
    got = load_requests(client, [str(faulty)], block_bytes=BLOCK).requests
    pd.testing.assert_frame_equal(got, want, check_categorical=False)
    for by in ("header", "client", "route", "day"):
        pd.testing.assert_frame_equal(audit(got, by), audit(want, by), check_categorical=False)
    pd.testing.assert_frame_equal(daily_series(got), daily_series(want))


def test_dynamo_span_names_same_frames_and_jaeger_names(client: Any, tmp_path: Path) -> None:
    # `export jaeger` names Dynamo's route-less `generate` step by its logged name, which
    # only the views' read carries (`records.requests.VIEW_COLUMNS`): the Dask engine's
    # full read, spans cut between blocks, must carry the same.
    write_dynamo_logs(tmp_path, DynamoSpec(requests=120, duplicates=2, cancelled=2))
    want = build_requests(load_events([str(tmp_path)]).events)
    got = load_requests(client, [str(tmp_path)], block_bytes=32 << 10).requests
    pd.testing.assert_frame_equal(got, want, check_categorical=False)
    assert len(plan_blocks(_files(tmp_path), 32 << 10)) > len(list(tmp_path.iterdir()))

    def names(requests: pd.DataFrame) -> dict[str, str]:
        return {key: span["operationName"] for key, span in jaeger_spans(to_jaeger(requests)).items()}

    assert names(got) == names(want)
    assert {"generate", "POST /v1/chat/completions"} <= set(names(want).values())


def _sample(tmp_path: Path) -> Path:
    src = DATA / "dynamo-jsonl-sample.jsonl"
    shared = Path(__file__).parents[2].parent / "shared" / "samples" / src.name
    if not src.exists() and shared.exists():
        src = shared
    if not src.exists():
        pytest.skip("Dynamo sample not available")
    return Path(shutil.copy(src, tmp_path / src.name))


def test_dynamo_sample_same_report(client: Any, tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    want, got = _docs(client, [str(sample)])
    assert got == want and want["summary"]["unlinked"] == 1


def test_real_legacy_demo_run_same_report(client: Any, demo_output: Path) -> None:
    logs = demo_output / "legacy" / "logs"
    if not logs.is_dir():
        pytest.skip("the demo did not run")
    want, got = _docs(client, [str(logs)])
    assert got == want
    assert want["summary"]["errors"] > 0  # the legacy policy's collisions are there


def test_file_and_memory_urls(client: Any, faulty: Path, tmp_path: Path) -> None:
    import fsspec

    sample = _sample(tmp_path)
    want = report_json(analyze_read(read_partials(expand_inputs([str(sample)]))))
    got = report_json(analyze_dask(client, [sample.as_uri()]))
    assert _files_named(got, sample.name) == _files_named(want, sample.name)
    assert got["findings"][0]["evidence"][0]["file"] == sample.as_uri()
    mem = fsspec.filesystem("memory")
    mem.pipe("/ridtrace-test/logs/dynamo.jsonl", sample.read_bytes())
    try:
        got = report_json(analyze_dask(client, ["memory://ridtrace-test/logs/"]))
    finally:
        mem.rm("/ridtrace-test", recursive=True)
    assert got["findings"][0]["evidence"][0]["file"].startswith("memory://")
    assert _files_named(got, sample.name) == _files_named(want, sample.name)


def test_one_partition_combine_is_build_requests(faulty: Path) -> None:
    logs = load_events([str(faulty)])
    names = logs.files
    want = build_requests(logs.events)
    one = combine_requests(partial_requests(want, 0))
    pd.testing.assert_frame_equal(finish_requests(one, names), want, check_categorical=False)


def test_events_and_partials_give_the_same_requests(faulty: Path) -> None:
    # Views build requests from exported events, analyze from per-file partials.
    paths = [str(faulty)]
    read = read_partials(expand_inputs(paths))
    a = analyze_read(read)
    from ridtrace.forensics.rules.report import analyze

    b = analyze(load_events(paths, lean=True))
    assert report_json(a)["findings"] == report_json(b)["findings"]


def _files(folder: Path) -> list[LogFile]:
    from ridtrace.forensics.dask_engine.urls import expand_urls

    return expand_urls([str(folder)])


def _files_named(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """The document with every evidence file called `name` (URLs and paths differ)."""
    out: dict[str, Any] = json.loads(json.dumps(doc))
    for finding in out["findings"]:
        for item in finding["evidence"]:
            item["file"] = name
    return out


def test_rotated_logs_same_report(client: Any, tmp_path: Path) -> None:
    """Spans cut by a rotation, each part cut again into blocks: one report, the files
    of every evidence line included, whatever order the parts are named in."""
    # 200 requests: each half of the frontend's log is still more than a block.
    write_logs(tmp_path, SynthSpec(requests=200, seed=3, crossed=2, collisions=2))
    live = tmp_path / "frontend.jsonl"
    lines = live.read_text().splitlines(keepends=True)
    cut = len(lines) // 2
    (tmp_path / "frontend.jsonl.1").write_text("".join(lines[:cut]))
    live.write_text("".join(lines[cut:]))
    assert min(live.stat().st_size, (tmp_path / "frontend.jsonl.1").stat().st_size) > BLOCK
    rotated, legacy_live = legacy_rotated(tmp_path / "legacy")
    # Parts named in no rotation scheme, the newer one first by name: picks go by time.
    copies = legacy_rotated(tmp_path / "copies", spans=("c3", "d4"))
    for part, name in zip(copies, ("b.jsonl", "a.jsonl"), strict=True):
        part.rename(part.with_name(name))
    want, got = _docs(client, [str(tmp_path)])
    assert got == want
    held_7 = [f["detail"] for f in want["findings"]
              if f["kind"] == "duplicate_in_flight" and f["request_id"] == "7"]
    assert len(held_7) == 1 and held_7[0].startswith("4 requests held request_id 7")
    cited = {e["file"] for f in want["findings"] for e in f["evidence"]}
    assert {str(tmp_path / "frontend.jsonl.1"), str(live), str(rotated), str(legacy_live)} <= cited
    paths = [str(legacy_live), str(live), str(rotated), str(tmp_path / "frontend.jsonl.1")]
    assert _docs(client, paths) == _docs(client, paths[::-1])


def test_a_block_cut_between_a_warn_and_the_request_list_counts_the_list(
    client: Any, tmp_path: Path,
) -> None:
    # The middleware's WARN names one header, then request.start lists both; a block
    # boundary right after the WARN must not make the Dask engine count one.
    both = "x-dynamo-request-id,request-id"
    ctx = {"request_id": "r1", "trace_id": "1" * 32, "span_id": "1" * 16}
    warn = rt("deprecated_header", header="request-id", **ctx) + "\n"
    log = tmp_path / "frontend.jsonl"
    log.write_text(warn + rt("request.start", deprecated_headers=both, **ctx) + "\n"
                   + rt("request.end", deprecated_headers=both, outcome="ok", **ctx) + "\n")
    block = len(warn.encode())
    assert len(plan_blocks(expand_urls([str(log)]), block)) > 1
    want = report_json(analyze_read(read_partials(expand_inputs([str(log)]))))
    got = report_json(analyze_dask(client, [str(log)], block_bytes=block))
    assert got == want
    headers = {f["detail"] for f in want["findings"] if f["kind"] == "deprecated_header"}
    assert any("x-dynamo-request-id" in d for d in headers), headers


def test_a_file_truncated_after_its_blocks_were_planned_is_noted_by_its_blocks(
    faulty: Path, tmp_path: Path,
) -> None:
    # copytruncate between planning and reading: the blocks read what is left, and the
    # report must not call it complete (the local engine notes it the same way).
    log = tmp_path / "frontend.jsonl"
    shutil.copy(faulty / "frontend.jsonl", log)
    blocks = plan_blocks(expand_urls([str(log)]), BLOCK)
    assert len(blocks) > 2
    size = log.stat().st_size
    with open(log, "r+b") as fh:
        fh.truncate(size // 2)
    notes = {n for b in blocks for n in read_block(b, [str(log)], lean=True).stats
             .unreadable_files}
    assert {(n.file, n.reason) for n in notes} == {(str(log), (
        f"truncated while being read (from {size} bytes; a copy-and-truncate rotation?): "
        "read it again"))}


@pytest.mark.timeout(60)
def test_file_url_directory_reads_linked_logs_and_folders_as_a_walk_does(
    client: Any, tmp_path: Path
) -> None:
    """A file:// directory follows links as the local walk does: fsspec's walk took a
    linked log, or a linked folder of logs (a node's /var/log/containers is all links),
    for no file and "ignored" it, and a folder holding an incident's log behind a link
    reported clean (exit 0). Its files come in the local walk's order too (a folder's
    own before its subfolders'), which picks the same bad-line samples."""
    import os

    logs, volume = tmp_path / "logs", tmp_path / "volume"
    write_logs(volume / "pod", SynthSpec(requests=30, seed=7, duplicates=2))
    write_logs(logs / "a", SynthSpec(requests=10, seed=8))
    write_logs(logs, SynthSpec(requests=10, seed=9))
    for folder in (logs, logs / "a"):
        with (folder / "app.jsonl").open("w") as out:
            out.write("banner, not JSON\n" * 3)
    os.symlink(volume / "pod", logs / "pod")
    os.symlink(volume / "pod" / "frontend.jsonl", logs / "linked-frontend.jsonl")
    want = report_json(analyze_read(read_partials(expand_inputs([str(logs)]))))
    got = report_json(analyze_dask(client, [logs.as_uri()], block_bytes=BLOCK))
    assert json.loads(json.dumps(got).replace("file://", "")) == want
    assert want["summary"]["duplicate_in_flight"] > 0 and want["summary"]["ignored_files"] == []


@pytest.mark.timeout(60)
def test_file_url_directory_lists_pipes_and_broken_links_as_a_walk_does(
    client: Any, tmp_path: Path
) -> None:
    """A file:// directory is walked as the local path is: a broken link named like a
    log is unreadable (exit 3), a pipe is ignored and never opened (a worker opening it
    would wait for a writer forever), as a glob matching them lists them too; the
    reports agree."""
    import os

    write_logs(tmp_path, SynthSpec(requests=20, seed=5))
    os.symlink(tmp_path / "gone.jsonl", tmp_path / "broken.jsonl")
    os.symlink(tmp_path / "gone", tmp_path / "broken-notes")
    os.mkfifo(tmp_path / "pipe.jsonl")
    want = report_json(analyze_read(read_partials(expand_inputs([str(tmp_path)]))))
    got = report_json(analyze_dask(client, [tmp_path.as_uri()], block_bytes=BLOCK))
    assert json.loads(json.dumps(got).replace("file://", "")) == want
    summary = want["summary"]
    assert [n["file"] for n in summary["unreadable_files"]] == [str(tmp_path / "broken.jsonl")]
    assert {n["file"] for n in summary["ignored_files"]} == {
        str(tmp_path / "broken-notes"), str(tmp_path / "pipe.jsonl")}
    globbed = report_json(analyze_dask(client, [tmp_path.as_uri() + "/*.jsonl"]))
    assert [n["file"] for n in globbed["summary"]["unreadable_files"]] == [
        (tmp_path / "broken.jsonl").as_uri()]
    assert [n["file"] for n in globbed["summary"]["ignored_files"]] == [
        (tmp_path / "pipe.jsonl").as_uri()]
    assert globbed["summary"]["files"] == summary["files"]


def test_wrapped_and_utf16_files_bigger_than_a_block_are_read_whole(
    client: Any, tmp_path: Path
) -> None:
    # A record's CRI parts may straddle a block's edge, and a UTF-16 file's newline is
    # two bytes: such files are one block each, read as the local engine reads them.
    plain = tmp_path / "plain"
    write_logs(plain, SynthSpec(requests=400, seed=5))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    stamp = b"2026-11-29T10:00:00.000000001Z stdout "
    for n, path in enumerate(sorted(plain.iterdir())):
        data = path.read_bytes()
        if n == 0:
            data = b"".join(stamp + b"P " + line[:50] + b"\n" + stamp + b"F " + line[50:]
                            + b"\n" for line in data.splitlines())
        else:
            data = data.decode().encode("utf-16")
        assert len(data) > BLOCK
        (mixed / path.name).write_bytes(data)
    want = report_json(analyze_read(read_partials(expand_inputs([str(plain)]))))
    got = report_json(analyze_dask(client, [str(mixed)], block_bytes=BLOCK))
    assert got["summary"]["bad_lines"] == 0
    assert got["summary"]["requests"] == want["summary"]["requests"]
    assert [(f["kind"], f["span_id"]) for f in got["findings"]] == [
        (f["kind"], f["span_id"]) for f in want["findings"]
    ]



def _span_line(k: int) -> bytes:
    return json.dumps({
        "time": f"2026-11-29T10:00:00.{k:06d}Z", "schema": "ridtrace/1",
        "event": "response.unlinked", "request_id": f"r{k}", "span_id": f"u{k}",
        "trace_id": f"{k:0>32}",
    }).encode() + b"\n"


def _log_with_hole_at(path: Path, start: int) -> Path:
    """One-line spans, the line starting at byte `start` opened by a 4 KiB NUL hole."""
    head = b"".join(_span_line(k) for k in range(start // 200))
    if start:  # a filler record pads the head to end exactly at `start`
        filler = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1",
                             "pad": ""}).encode() + b"\n"
        filler = filler.replace(b'""', b'"' + b"x" * (start - len(head) - len(filler)) + b'"')
        head += filler
    assert len(head) == start
    tail = b"".join(_span_line(k) for k in range(1000, 1400))
    path.write_bytes(head + b"\0" * 4096 + tail)
    return path


@pytest.mark.parametrize("at_block_start", [False, True])
def test_a_hole_is_copytruncate_only_at_the_file_start_in_both_engines(
    client: Any, tmp_path: Path, at_block_start: bool
) -> None:
    # At the file's first byte a NUL hole is copy-and-truncate's (the lines it stands
    # for are in the rotated copy): the record after it is read, nothing is lost. At the
    # first line of a later Dask block it is still a crash's hole mid-file, as the local
    # engine judges it: the block numbers its lines from 1, and took it for a file start.
    log = _log_with_hole_at(tmp_path / "frontend.jsonl", BLOCK if at_block_start else 0)
    want, got = _docs(client, [str(log)])
    assert got == want
    summary = want["summary"]
    assert summary["requests"] == (BLOCK // 200 if at_block_start else 0) + 400  # all read
    # Its one-line spans are also named as requests logged at one instant; not the hole.
    holes = [r for r in summary["incomplete_reasons"] if "one instant" not in r]
    if at_block_start:
        assert summary["bad_lines"] == 1 and holes
    else:
        assert summary["bad_lines"] == 0 and holes == []


def test_a_newest_first_log_cut_into_blocks_ends_each_request_in_time(
    client: Any, tmp_path: Path
) -> None:
    """Loki's ``logcli query`` prints newest first. Two legacy callers held client id
    ``7`` for 100 s; their ends head the file, their minted-id starts close it, blocks
    apart. Each partial's id is its latest line's, and the span's is the latest
    partial's in time, not the last block's in the file (its start's minted id)."""
    from tests.forensics.helpers import ts

    lines: list[tuple[float, str]] = []
    for span, minted, start in (("a1", "11111111-1111-4111-8111-111111111111", 0.0),
                                ("b2", "22222222-2222-4222-8222-222222222222", 0.2)):
        ctx = {"trace_id": f"{span:0>32}", "span_id": span, "x_request_id": "7"}
        lines += [
            (start, rt("request.start", time=ts(start), request_id=minted, **ctx)),
            (start + 0.1, rt("dispatch.attempt", time=ts(start + 0.1), request_id="7", **ctx)),
            (start + 100, rt("request.end", time=ts(start + 100), request_id="7", status=200,
                             outcome="ok", **ctx)),
        ]
    for i in range(1200):  # other callers, one after another, between the two ends
        ctx = {"trace_id": f"{i:032x}", "span_id": f"{i + 1:016x}", "request_id": f"r-{i}"}
        lines += [(1 + i / 20, rt("request.start", time=ts(1 + i / 20), **ctx)),
                  (1.01 + i / 20, rt("request.end", time=ts(1.01 + i / 20), status=200,
                                     outcome="ok", **ctx))]
    path = tmp_path / "frontend.jsonl"
    path.write_text("".join(line + "\n" for _, line in sorted(lines, reverse=True)))
    assert path.stat().st_size > 2 * BLOCK
    want, got = _docs(client, [str(path)])
    held = [(f["kind"], f["request_id"]) for f in want["findings"]]
    assert held == [("duplicate_in_flight", "7")]
    assert got == want


def test_a_generate_span_logged_without_its_parent_is_nested_as_locally(
    client: Any, tmp_path: Path
) -> None:
    """Blocks of two lines: the ``generate`` span and its ``http-request`` span are read
    by different blocks, and nested only once combined (`finished.nest_inner_spans`)."""
    from tests.forensics.test_unparented_generate import _request

    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(_request("b6" * 16, "a1" * 8, "5c" * 8, 1)) + "\n")
    want = report_json(analyze_read(read_partials(expand_inputs([str(log)]))))
    got = report_json(analyze_dask(client, [str(log)], block_bytes=300))
    assert got == want
    assert [f["kind"] for f in got["findings"]] == ["unlinked"]


def test_a_storage_that_fails_a_read_mid_file_leaves_the_file_read_in_part(
    client: Any, tmp_path: Path
) -> None:
    # An http:// store answering 503 past some byte (a throttled backend): fsspec's
    # error came out of a block's read as a traceback and "internal error (exit 4)".
    import http.server
    import re
    import threading

    logs = tmp_path / "logs"
    write_logs(logs, SynthSpec(requests=3000, seed=5, workers=1))
    front = logs / "frontend.jsonl"
    size = front.stat().st_size
    data = front.read_bytes()
    assert size > 3 * BLOCK

    class Ranges(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()

        def do_GET(self) -> None:
            found = re.match(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
            start = int(found.group(1)) if found else 0
            if start >= 2 * BLOCK:
                self.send_error(503, "backend unavailable")
                return
            end = min(int(found.group(2)) if found and found.group(2) else size - 1, size - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.send_header("Content-Length", str(end - start + 1))
            self.end_headers()
            self.wfile.write(data[start:end + 1])

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ranges)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/frontend.jsonl"
        got = report_json(analyze_dask(client, [url], block_bytes=BLOCK))
    finally:
        server.shutdown()
        server.server_close()
    notes = got["summary"]["unreadable_files"]
    assert notes and all("read failed" in n["reason"] and "503" in n["reason"] for n in notes)
    assert got["summary"]["incomplete"] is True and got["summary"]["requests"] > 0


def test_an_entry_not_read_named_by_a_folder_and_a_glob_is_listed_once(tmp_path: Path) -> None:
    # A walk named a broken link by its path, a file:// glob by its URL: listed twice
    # under one name, the run ended in a traceback ("Categorical categories must be
    # unique", exit 4) after the whole cluster read.
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "app.jsonl").write_text(rt("hello") + "\n")
    (folder / "old.jsonl").symlink_to(tmp_path / "gone")
    url = f"file://{folder}"
    for inputs in ([f"{url}/**"], [url, f"{url}/*"], [str(folder), f"{url}/*"]):
        files = expand_urls(inputs)
        names = [f.name for f in files]
        assert len(names) == len(set(names)) == 2, (inputs, names)


def test_a_worker_whose_staging_disk_is_full_names_the_file_read_in_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small emptyDir under the worker's TMPDIR: staging a block raised ENOSPC, a
    # traceback and "internal error (exit 4)"; a staged .gz already said "read failed".
    import errno

    from ridtrace.forensics.dask_engine import blocks as blocks_module

    log = tmp_path / "app.jsonl"
    log.write_text(rt("hello") + "\n")

    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(blocks_module, "stage", full)
    (block,) = plan_blocks(expand_urls([str(log)]), 1 << 20)
    result = blocks_module.read_block(block, [str(log)], lean=True)
    (note,) = result.stats.unreadable_files
    assert note.reason.startswith("read failed:") and "No space left" in note.reason


def test_a_bad_dask_setting_on_the_local_cluster_is_named(tmp_path: Path) -> None:
    # With --scheduler it was a clear exit 2; the local cluster's KeyError was exit 4.
    import os
    import subprocess
    import sys

    from tests.support.servers import child_pythonpath

    (tmp_path / "app.jsonl").write_text(rt("hello") + "\n")
    env = {**os.environ, "PYTHONPATH": child_pythonpath(),
           "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "abc"}
    done = subprocess.run([sys.executable, "-m", "ridtrace", "analyze", str(tmp_path),
                           "--engine", "dask", "-q"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "distributed.comm.timeouts.connect is 'abc'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_batched_senders_notice_at_a_local_clusters_close_is_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An in-process cluster's close made distributed's batched sender log "Batched Comm
    # Closed" with a CommClosedError traceback on stderr, in 2 runs of 8 of
    # docs/scale-out.md's library example: a right report under a traceback. It came
    # once the cluster had put its own log levels back; here it comes then every time.
    import distributed

    from ridtrace.forensics.dask_engine.engine import dask_client

    closing = distributed.LocalCluster.__exit__

    def close_then_notice(self: Any, *exc: Any) -> Any:
        closed = closing(self, *exc)
        logging.getLogger("distributed.batched").info(
            "Batched Comm Closed", exc_info=ConnectionError("closed"))
        return closed

    monkeypatch.setattr(distributed.LocalCluster, "__exit__", close_then_notice)
    written: list[logging.LogRecord] = []
    seen = logging.Handler()
    seen.emit = written.append  # type: ignore[method-assign]
    batched = logging.getLogger("distributed.batched")
    batched.addHandler(seen)
    try:
        with dask_client(n_workers=1, threads_per_worker=1, processes=False) as client:
            assert client.submit(sum, [1, 2]).result() == 3
    finally:
        batched.removeHandler(seen)
    assert [r.getMessage() for r in written] == []
