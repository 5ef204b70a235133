"""Small files read in batches give the report a one-by-one read gives (issue 13).

A directory of pod logs is hundreds of small files; planning the per-span query per
file cost ~10 ms each. Batches of them are parsed by one query; every file must still
come out as if read alone: its lines numbered from 1, its bad lines, spans cut across
files combined, and the odd file (gzip, a BOM, blank only) read its own way.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import ridtrace.forensics.reading.small_files as small_files
from ridtrace.forensics.reading.inputs import Source, expand_inputs
from ridtrace.forensics.records.read import read_partials
from ridtrace.forensics.rules.report import analyze_read, parse_time, report_json
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs
from ridtrace.testing.synth import SynthSpec, write_logs
from tests.forensics.helpers import rt, rt_request


def _pod_logs(out: Path) -> Path:
    """Both formats' logs cut into small files of a few dozen lines, with the odd ones."""
    whole = out / "whole"
    write_logs(whole / "rt", SynthSpec(requests=150, deprecated_every=10, engine_noise=True))
    write_dynamo_logs(whole / "dyn", DynamoSpec(requests=120, duplicates=4))
    pods = out / "pods"
    pods.mkdir()
    for log in sorted(whole.rglob("*.jsonl")):
        lines = log.read_bytes().splitlines(keepends=True)
        for at in range(0, len(lines), 37):
            name = f"{log.parent.name}-{log.stem}-{at // 37:04d}.jsonl"
            (pods / name).write_bytes(b"".join(lines[at:at + 37]))
    piece = sorted(pods.iterdir())
    # A banner, a torn line and blank lines inside a batch: lines after them keep their numbers.
    first = piece[3].read_bytes()
    piece[3].write_bytes(b"pod: starting\n\n  \n" + first + b'{"time": "2026-1\n')
    # Valid JSON DuckDB rejects (a lone surrogate): judged and rescued in Python.
    lone = json.loads(piece[5].read_bytes().splitlines()[0])
    lone["model"] = "\udc80"
    piece[5].write_bytes(piece[5].read_bytes() + json.dumps(lone).encode() + b"\n")
    # No newline at the end of a file: its last line is still a line, and the next file's
    # first line is line 1 of that file.
    piece[7].write_bytes(piece[7].read_bytes().rstrip(b"\n"))
    (pods / "rt-empty.jsonl").write_bytes(b"")
    (pods / "rt-blank.jsonl").write_bytes(b"\n \n")
    # Read their own way inside a run of small files: decoded copies, not in place.
    (pods / "rt-zipped.jsonl.gz").write_bytes(gzip.compress(piece[9].read_bytes()))
    piece[11].write_bytes(b"\xef\xbb\xbf" + piece[11].read_bytes())
    (pods / "rt-unlinked.jsonl").write_text(rt(
        "response.unlinked", request_id="u1", span_id="ab" * 8, trace_id="cd" * 16,
        error="Unlinked response") + "\n")
    return pods


def _report(sources: list[Source], **window: Any) -> dict[str, Any]:
    bounds = {k: parse_time(v, bound=k) for k, v in window.items()}
    return report_json(analyze_read(read_partials(sources, **bounds), **bounds))


# The pod logs and their batched report, built once for the module: the tests below only
# read the logs (each patch they make is undone before the next test), and each compares
# a fallback's report with the same batched one.
@pytest.fixture(scope="module")
def pods(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _pod_logs(tmp_path_factory.mktemp("small-files"))


@pytest.fixture(scope="module")
def pod_sources(pods: Path) -> list[Source]:
    return expand_inputs([str(pods)])


@pytest.fixture(scope="module")
def batched_report(pod_sources: list[Source]) -> dict[str, Any]:
    """The report of the pod logs read as `analyze` reads them, nothing patched."""
    return _report(pod_sources)


@pytest.fixture
def counted_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of files of each batch query run and split without a mismatch."""
    sizes: list[int] = []
    real = small_files.batch_spans

    def counting(con: Any, batch: Any, window: Any, **prepared: Any) -> Any:
        got = real(con, batch, window, **prepared)  # a BatchMismatch fails: no fallback
        sizes.append(len(batch.files))
        return got

    monkeypatch.setattr(small_files, "batch_spans", counting)
    return sizes


@pytest.mark.parametrize("window", [{}, {"since": "2026-11-29T10:00:00.2Z"}])
def test_a_directory_of_small_files_reports_as_a_file_by_file_read(
    pods: Path, pod_sources: list[Source], monkeypatch: pytest.MonkeyPatch,
    counted_batches: list[int], window: dict[str, str],
) -> None:
    batched = _report(pod_sources, **window)
    planned = [r for r in small_files.plan_reads(pod_sources, batch=True) if len(r) > 1]
    assert len(counted_batches) == len(planned)  # each one query, none read again
    assert sum(counted_batches) >= len(pod_sources) - 3  # all but the gzip, BOM and one-off
    assert len(planned) >= 2 and min(counted_batches) > 1
    monkeypatch.setattr(small_files, "SMALL_FILE_BYTES", -1)
    one_by_one = _report(pod_sources, **window)
    assert batched == one_by_one
    summary = batched["summary"]
    assert summary["bad_lines"] >= 2 and summary["unlinked"] >= 1
    assert summary["deprecated_header"] >= 1
    assert summary["duplicate_in_flight"] >= (1 if window else 4)
    assert {s["file"] for s in summary["bad_line_samples"]} >= {
        str(pods / "dyn-frontend-0003.jsonl")}


def test_a_batch_numbered_out_of_line_is_read_file_by_file(
    pod_sources: list[Source], batched_report: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Should DuckDB ever number a batch's rows other than file after file, line numbers
    # would point into the wrong file: the batch is read again one file at a time.
    monkeypatch.setattr(small_files, "batch_spans", _mismatched)
    assert _report(pod_sources) == batched_report


def _mismatched(con: Any, batch: Any, window: Any, **prepared: Any) -> Any:
    raise small_files.BatchMismatch(batch.files[0])


def test_a_small_file_truncated_while_its_batch_is_read_makes_it_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pods = tmp_path / "pods"
    pods.mkdir()
    for i in range(3):
        (pods / f"pod-{i}.jsonl").write_text("\n".join(
            line for j in range(20)
            for line in rt_request(f"{i:08x}{j:08x}", f"r{i}-{j}", j, j + 0.5)) + "\n")
    victim = pods / "pod-1.jsonl"
    real = small_files.batch_spans

    def after_a_rotation(con: Any, batch: Any, window: Any, **prepared: Any) -> Any:
        with open(victim, "r+b") as fh:  # logrotate's copytruncate, mid-read
            fh.truncate(100)
        return real(con, batch, window, **prepared)

    monkeypatch.setattr(small_files, "batch_spans", after_a_rotation)
    summary = _report(expand_inputs([str(pods)]))["summary"]
    (note,) = summary["unreadable_files"]
    assert note["file"] == str(victim) and "truncated while being read" in note["reason"]
    assert summary["incomplete"] is True


def test_each_file_numbered_from_its_own_first_line(tmp_path: Path) -> None:
    from ridtrace.forensics.reading.connection import connect

    paths = [tmp_path / f"{name}.jsonl" for name in "abc"]
    paths[0].write_text(rt("request.start", span_id="1" * 16, trace_id="2" * 32) + "\n")
    paths[1].write_text("")  # no row at all: nothing to number
    paths[2].write_text("\n".join(
        rt(e, span_id="3" * 16, trace_id="4" * 32) for e in ("request.start", "request.end")
    ) + "\n")
    con = connect()
    try:
        tables = small_files.batch_spans(con, _copied(tmp_path, paths), None)
    finally:
        con.close()
    spans = [t.filter(t["span_id"].is_valid()) for t in tables]
    assert [t["first_rn"].to_pylist() for t in spans] == [[1], [], [1]]
    assert spans[2]["last_rn"].to_pylist() == [2]


def _copied(tmp_path: Path, paths: list[Path]) -> small_files.BatchCopy:
    batch = small_files.BatchCopy(tmp_path / "batch-copy.jsonl")
    for path in paths:
        batch.add(path)
    batch.close()
    return batch


def test_a_batch_is_one_file_of_its_files_end_to_end(tmp_path: Path) -> None:
    # DuckDB's reader given 64 small files as a list took ~1 ms per file: the batch is
    # one copy of them, each file's rows ending where its map says.
    paths = [tmp_path / f"{name}.jsonl" for name in "abcd"]
    paths[0].write_bytes(b'{"a": 1}\n\n{"a": 2}')  # a blank line, no newline at the end
    paths[1].write_bytes(b"")
    paths[2].write_bytes(b" \n")  # blank only
    paths[3].write_bytes(b'{"a": 3}\nnot json\n')
    batch = _copied(tmp_path, paths)
    assert batch.path is not None and not batch.broken
    assert batch.path.read_bytes() == b'{"a": 1}\n\n{"a": 2}\n \n{"a": 3}\nnot json\n'
    assert batch.files == [str(p) for p in paths] and batch.ends == [2, 2, 2, 4]


def test_rows_other_than_the_maps_count_make_a_mismatch(tmp_path: Path) -> None:
    from ridtrace.forensics.reading.connection import connect

    paths = [tmp_path / f"{name}.jsonl" for name in "ab"]
    for path in paths:
        path.write_text(rt("request.start", span_id="1" * 16, trace_id="2" * 32) + "\n")
    batch = _copied(tmp_path, paths)
    batch.ends[-1] += 1  # a row the reader did not yield: each file's numbers would be off
    con = connect()
    try:
        with pytest.raises(small_files.BatchMismatch):
            small_files.batch_spans(con, batch, None)
        with pytest.raises(small_files.BatchMismatch):
            small_files.batch_events(con, batch, None)
    finally:
        con.close()


def test_a_reading_thread_plans_its_batch_query_once(tmp_path: Path) -> None:
    # Planning the batch's query was ~40 % of its read: each batch after a thread's first
    # runs the query it prepared, its copy's path and its files' ends as parameters.
    from ridtrace.forensics.reading.connection import PreparedReads, connect

    def batch(at: int, rows: int) -> small_files.BatchCopy:
        paths = []
        for i in range(3):
            path = tmp_path / f"b{at}-{i}.jsonl"
            path.write_text("\n".join(line for j in range(rows + i) for line in rt_request(
                f"{at:04x}{i:04x}{j:08x}", f"r{j}", j, j + 0.5)) + "\n")
            paths.append(path)
        copy = small_files.BatchCopy(tmp_path / f"batch-{at}.jsonl")
        for path in paths:
            copy.add(path)
        copy.close()
        return copy

    con = connect()
    try:
        prepared = PreparedReads(con.cursor())
        batches = [batch(0, 2), batch(1, 5)]
        got = [small_files.batch_spans(con, b, None, prepared=prepared) for b in batches]
        assert len(prepared._names) == 1
        assert got == [small_files.batch_spans(con, b, None) for b in batches]
        assert [len(t) for t in got[1]] == [5, 6, 7]
    finally:
        con.close()


def test_no_room_for_the_batch_copy_reads_each_file_alone(
    tmp_path: Path, pod_sources: list[Source], batched_report: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_room(prefix: str) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(small_files, "make_dir", no_room)
    assert _report(pod_sources) == batched_report
    full = small_files.BatchCopy(tmp_path / "no-such-dir" / "batch.jsonl")
    assert full.broken


def test_a_copy_that_cannot_be_written_is_broken(tmp_path: Path) -> None:
    class NoRoom:
        def write(self, data: bytes) -> int:
            raise OSError(28, "No space left on device")

        def close(self) -> None:
            pass

    log = tmp_path / "a.jsonl"
    log.write_text(rt("request.start", span_id="1" * 16, trace_id="2" * 32) + "\n")
    batch = small_files.BatchCopy(tmp_path / "batch.jsonl")
    batch._out = NoRoom()  # type: ignore[assignment]  # the disk fills up mid-copy
    assert batch.add(log).lines == 1  # the file is still mapped, to be read alone
    assert batch.broken
    batch.add(log)
    batch.close()
    assert batch.broken and batch.path is not None and batch.path.read_bytes() == b""


def test_a_small_file_grown_past_the_copy_is_read_alone(
    pod_sources: list[Source], batched_report: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(small_files, "_COPY_LIMIT", 3000)  # as if most had grown since
    assert _report(pod_sources) == batched_report


def test_rows_of_a_file_not_in_one_run_are_refused() -> None:
    import pyarrow as pa

    # File 0's groups hold 3 rows but lie across rows 1..5: another file's rows came
    # between them, so numbering from its first row would name wrong lines.
    got = pa.table({
        "_file": pa.array([0, 1, 0], pa.int32()), "first_rn": [1, 3, 4],
        "last_rn": [2, 3, 5], "lines": [2, 1, 1], "unlinked_rn": pa.nulls(3, pa.int64()),
        "foreign_rn": pa.nulls(3, pa.int64()), "deprecated_rn": pa.nulls(3, pa.int64()),
    })
    with pytest.raises(small_files.BatchMismatch):
        small_files.split_by_file(got, ["a", "b"])
    # Each file's rows are distinct row numbers: as many as its run is long, they fill it,
    # and two files' runs cannot overlap. File after file, the split numbers each from 1.
    ordered = got.set_column(0, "_file", pa.array([0, 0, 1], pa.int32()))
    ordered = ordered.set_column(3, "lines", pa.array([2, 1, 2]))
    assert [t["first_rn"].to_pylist() for t in small_files.split_by_file(
        ordered, ["a", "b"])] == [[1, 3], [1]]


def test_plan_keeps_big_files_and_streams_alone_and_batches_runs_of_small_ones(
    tmp_path: Path,
) -> None:
    def src(name: str, size: int, path: bool = True) -> Source:
        return Source(name, tmp_path / name if path else None, size)

    big = small_files.SMALL_FILE_BYTES + 1
    sources = [src("a", 10), src("b", 10), src("big", big), src("c", 10), src("-", 0, False),
               src("d", 10)]
    assert small_files.plan_reads(sources, batch=True) == [[0, 1], [2], [3], [4], [5]]
    assert small_files.plan_reads(sources, batch=False) == [[i] for i in range(6)]
    many = [src(f"p{i}", 10) for i in range(small_files.BATCH_FILES + 1)]
    assert [len(r) for r in small_files.plan_reads(many, batch=True)] == [
        small_files.BATCH_FILES, 1]


def test_a_file_s_rows_come_out_of_its_batch_in_first_seen_order() -> None:
    import pyarrow as pa

    # Each file's rows in order of their first line, so its span rows are a slice.
    got = pa.table({
        "_file": pa.array([1, 0, 1, 0], pa.int32()), "first_rn": [9, 4, 6, 1],
        "last_rn": [9, 5, 8, 3], "lines": [1, 2, 3, 3], "unlinked_rn": pa.nulls(4, pa.int64()),
        "foreign_rn": pa.nulls(4, pa.int64()), "deprecated_rn": pa.nulls(4, pa.int64()),
    })
    tables = small_files.split_by_file(got, ["a", "b"])
    assert [t["first_rn"].to_pylist() for t in tables] == [[1, 4], [1, 4]]
    assert [t["last_rn"].to_pylist() for t in tables] == [[3, 5], [3, 4]]


@pytest.mark.parametrize("rows", [[], [0], [2, 3, 4], [3, 1], [0, 2], [4, 3, 2]])
def test_take_rows_is_a_take_whether_or_not_it_slices(rows: list[int]) -> None:
    import numpy as np
    import pyarrow as pa

    from ridtrace.forensics.reading.table import take_rows

    table = pa.table({"n": list(range(5)), "s": [f"r{i}" for i in range(5)]})
    index = np.asarray(rows, dtype=np.int64)
    assert take_rows(table, index).equals(table.take(pa.array(index)))


def test_a_batchs_empty_files_leave_no_piece_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each file's piece held Arrow objects of its own (~27 KB), kept until the read was
    # over: a folder of 100,000 empty logs (rotation's `create`, pods that never wrote)
    # took 4 GB. Only pieces with spans are kept, or one, for the frame's columns.
    import ridtrace.forensics.records.read as read_module

    kept: list[int] = []
    as_read = read_module._as_read

    def counting(pieces: list[Any]) -> list[Any]:
        out = as_read(pieces)
        kept.append(len(out))
        return out

    monkeypatch.setattr(read_module, "_as_read", counting)
    logs = tmp_path / "logs"
    write_logs(logs, SynthSpec(requests=20))
    for i in range(40):
        (logs / f"empty-{i:02d}.jsonl").write_bytes(b"")
    (tmp_path / "only-empty").mkdir()
    for i in range(3):
        (tmp_path / "only-empty" / f"e{i}.jsonl").write_bytes(b"\n\n")
    want = report_json(analyze_read(read_partials(expand_inputs([str(logs / "frontend.jsonl")]))))
    with_empties = read_partials(expand_inputs([str(logs)]))
    files = len(list(logs.iterdir()))
    assert sum(kept) == files - 40  # the logs with spans, in their batch
    got = report_json(analyze_read(with_empties))
    assert got["summary"]["requests"] == want["summary"]["requests"]
    kept.clear()
    none = read_partials(expand_inputs([str(tmp_path / "only-empty")]))
    assert kept == [1] and len(none.partials) == 1 and none.partials[0].empty


def test_small_compressed_and_wrapped_files_are_read_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each was read alone, a query of its own: kubelet's rotated pod logs (small .gz
    # files) took 15-20x the time of the same files uncompressed. Now each is staged
    # and joins its batch; the report is the plain files' one.
    logs = tmp_path / "plain"
    write_logs(logs, SynthSpec(requests=60))
    packed = tmp_path / "packed"
    packed.mkdir()
    for path in sorted(logs.iterdir()):
        lines = path.read_bytes().splitlines(keepends=True)
        for k in range(0, len(lines), 40):
            part = b"".join(lines[k:k + 40])
            name = f"{path.stem}-{k:04d}.jsonl"
            if k % 80:  # every other part a container runtime's wrapped log
                cri = b"".join(b"2026-11-29T10:00:00.000000000Z stdout F " + line
                               for line in part.splitlines(keepends=True))
                (packed / f"{name}.cri.log").write_bytes(cri)
            else:
                (packed / f"{name}.gz").write_bytes(gzip.compress(part))
    alone: list[str] = []
    read_source = small_files.read_source

    def counting(con: Any, src: Source, *args: Any, **kwargs: Any) -> Any:
        alone.append(src.name)
        return read_source(con, src, *args, **kwargs)

    monkeypatch.setattr(small_files, "read_source", counting)
    want = report_json(analyze_read(read_partials(expand_inputs([str(logs)]))))
    got = report_json(analyze_read(read_partials(expand_inputs([str(packed)]))))
    assert alone == []
    assert got["summary"]["requests"] == want["summary"]["requests"] > 0
    assert got["summary"]["bad_lines"] == 0 and not got["summary"]["incomplete"]
    assert [(f["kind"], f.get("span_id")) for f in got["findings"]] == [
        (f["kind"], f.get("span_id")) for f in want["findings"]]


def test_a_small_file_decoding_to_much_is_read_alone_without_decoding_it_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its batch copy was decoded in full before its size was checked, then again alone:
    # a 512 KB gzip of 512 MiB took twice as long. And a batch's decoded bytes are held
    # to the batch's 16 MiB, its files' sizes on disk being no measure of them.
    record = json.dumps({"time": "2026-11-29T10:00:00Z", "schema": "ridtrace/1",
                         "message": "m" * 200}).encode() + b"\n"
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "bomb.jsonl.gz").write_bytes(gzip.compress(record * (200 << 10), 1))  # ~45 MiB
    for i in range(12):  # 1.5 MiB each once decoded
        (logs / f"part-{i:02d}.jsonl.gz").write_bytes(
            gzip.compress(record * ((3 << 19) // len(record)), 1))
    offered: list[int] = []
    write = small_files._Capped.write

    def counting(self: Any, data: bytes) -> int:
        offered.append(len(data))
        return write(self, data)

    alone: list[str] = []
    read_source = small_files.read_source

    def reading_alone(con: Any, src: Source, *args: Any, **kwargs: Any) -> Any:
        alone.append(Path(src.name).name)
        return read_source(con, src, *args, **kwargs)

    monkeypatch.setattr(small_files._Capped, "write", counting)
    monkeypatch.setattr(small_files, "read_source", reading_alone)
    read = read_partials(expand_inputs([str(logs)]))
    assert read.stats.lines == (200 << 10) + 12 * ((3 << 19) // len(record))
    assert "bomb.jsonl.gz" in alone
    assert sum(offered) < 2 * 16 * (1 << 20) + 13 * (2 << 20)  # not the bomb's 45 MiB
    assert any(name.startswith("part-") for name in alone)  # past the batch's 16 MiB


def test_no_copy_is_made_once_the_run_is_ending(tmp_path: Path) -> None:
    # A reading thread staging a batch's files went on making copies after an interrupt
    # removed those in flight: Ctrl-C left ridtrace-small-* folders behind.
    from ridtrace.forensics.reading import staging

    try:
        staging.remove_all()
        with pytest.raises(OSError, match="the run is ending"):
            staging.make_dir("ridtrace-small-")
        # A read of its own afterwards (a library caller's, in a process that went on).
        (tmp_path / "app.jsonl.gz").write_bytes(gzip.compress(b'{"time": "2026-11-29T10:00:00Z"}\n'))
        read = read_partials(expand_inputs([str(tmp_path)]))
        assert read.stats.unreadable_files == [] and read.stats.lines == 1
    finally:
        staging._CLOSED.clear()
