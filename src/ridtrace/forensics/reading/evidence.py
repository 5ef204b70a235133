"""`analyze`'s read: only the lines a finding can use are parsed wide.

`parse_evidence` splits a chunk into lines with Arrow and keeps, by one regular
expression, the lines a finding can use (lifecycle events, fingerprints, deprecated
headers, unlinked errors, Dynamo's request messages): only those go through the wide
parse. The others (handler, access and engine lines) are still parsed, with three
fields, so that they are counted, their bad lines reported and their times known.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.forensics.reading.reader import ReadStats, _ChunkParser, _salvage_lines
from ridtrace.forensics.reading.schema import RIDTRACE_SCHEMA

__all__ = ["EVIDENCE_PATTERN", "NOISE_FIELDS", "EvidenceParser", "parse_evidence", "split_lines"]

# A line a finding can use: a lifecycle event (ridtrace/1), one of Dynamo's request
# messages, a fingerprint, a deprecated header or an Unlinked error. Everything else
# (handler, access, engine lines) only needs counting, checking and its time.
EVIDENCE_PATTERN = (
    r'"(?:event|message)"\s*:\s*"(?:request\.|worker\.|response\.|stream\.|deprecated_header'
    r"|request received|request completed|http response sent|engine generate call failed"
    r'|SPAN_CLOSED)|"deprecated_headers"|"fp_(?:in|out)"|"header"\s*:|"chunk_request_id"'
    r"|header is deprecated|Unlinked re"
)
# What the other lines are read with: enough to tell a valid line from a bad one.
NOISE_FIELDS = ("time", "schema", "target")



def split_lines(buf: bytes) -> pa.LargeBinaryArray:
    """The lines of `buf` as a zero-copy Arrow array, each with its newline."""
    data = pa.py_buffer(buf)
    whole = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), 1, [None, pa.py_buffer(np.array([0, len(buf)], dtype=np.int64)), data]
    )
    parts = pc.list_flatten(pc.split_pattern(whole, b"\n"))
    n = len(parts)
    if buf.endswith(b"\n"):
        n -= 1  # the empty piece after the last newline
    ends = np.frombuffer(parts.buffers()[1], dtype=np.int64)[: n + 1].copy()
    ends += np.arange(n + 1, dtype=np.int64)  # each separator the split removed
    ends[n] = min(int(ends[n]), len(buf))
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(ends), data]
    )


def _joined(lines: pa.LargeBinaryArray) -> bytes:
    """The selected lines as one newline-terminated buffer (one copy)."""
    if not len(lines):
        return b""
    _, offsets_buf, data = lines.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)
    lo, hi = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    buf: bytes = data.slice(lo, hi - lo).to_pybytes()
    return buf if buf.endswith(b"\n") else buf + b"\n"


def _parse_selected(
    parser: _ChunkParser,
    salvage_parser: _ChunkParser,
    lines: pa.LargeBinaryArray,
    numbers: np.ndarray,
    stats: ReadStats,
    name: str,
) -> list[tuple[pa.Table, np.ndarray]]:
    """Parse selected non-blank lines fast; on any bad line, salvage them one by one."""
    if not len(lines):
        return []
    table = parser.fast(_joined(lines))
    if table is not None and table.num_rows == len(numbers):
        stats.lines += len(numbers)
        return [(table, numbers)]
    texts = [text.rstrip(b"\n") for text in lines.to_pylist()]
    return [
        (tbl, np.asarray(nums, dtype=np.int64))
        for tbl, nums in _salvage_lines(salvage_parser, texts, numbers.tolist(), stats, name)
    ]


def _noise_times(
    pieces: list[tuple[pa.Table, np.ndarray]], stats: ReadStats, name: str
) -> np.ndarray:
    """Check the non-evidence lines as `normalize` would; epoch µs of the valid ones."""
    out = []
    for table, numbers in pieces:
        schema, target, time = table["schema"], table["target"], table["time"]
        is_rt = pc.fill_null(pc.equal(schema, RIDTRACE_SCHEMA), False)
        is_dyn = pc.and_(pc.is_null(schema), pc.is_valid(target))
        has_time = pc.is_valid(time)
        valid = np.asarray(
            pc.and_(pc.or_(is_rt, is_dyn), has_time).to_numpy(zero_copy_only=False), dtype=bool
        )
        if not valid.all():
            no_time = ~np.asarray(has_time.to_numpy(zero_copy_only=False), dtype=bool)
            for i in np.flatnonzero(~valid):
                stats.bad(name, int(numbers[i]), "missing time" if no_time[i] else "unknown format")
        micros = pc.fill_null(pc.cast(time, pa.int64()), 0).to_numpy()
        out.append(np.asarray(micros, dtype=np.int64)[valid])
    return np.concatenate(out) if out else np.empty(0, dtype=np.int64)


class EvidenceParser:
    """The parsers `parse_evidence` needs for one file: wide for evidence, narrow for the rest."""

    def __init__(self) -> None:
        self.evidence = _ChunkParser(lean=True)
        self.noise = _ChunkParser(lean=True, fields=NOISE_FIELDS)


def parse_evidence(
    parser: EvidenceParser, buf: bytes, first_line: int, stats: ReadStats, name: str
) -> tuple[list[tuple[pa.Table, np.ndarray]], np.ndarray]:
    """Like `parse_chunk`, but only evidence lines are parsed wide and returned.

    Returns the (table, line numbers) pieces of the evidence lines and the times (epoch
    µs) of the other valid lines. Every non-blank line is counted in `stats`, and bad
    lines are reported with the same reasons and numbers as `parse_chunk` gives, except
    that on a non-evidence line only the fields `NOISE_FIELDS` are type-checked.
    """
    lines = split_lines(buf)
    evidence = np.asarray(
        pc.match_substring_regex(lines, EVIDENCE_PATTERN).to_numpy(zero_copy_only=False),
        dtype=bool,
    )
    # Blank and odd lines (leading whitespace, garbage) are few: judged with the noise.
    odd = ~np.asarray(pc.starts_with(lines, b"{").to_numpy(zero_copy_only=False), dtype=bool)
    evidence &= ~odd
    rest = ~evidence
    if odd.any():
        for i in np.flatnonzero(odd):
            if not lines[int(i)].as_py().strip():
                rest[i] = False
    ev_rows = np.flatnonzero(evidence)
    rest_rows = np.flatnonzero(rest)
    pieces = _parse_selected(
        parser.evidence, parser.evidence, lines.filter(pa.array(evidence)),
        ev_rows + first_line, stats, name,
    )
    noise = _parse_selected(
        parser.noise, parser.evidence, lines.filter(pa.array(rest)),
        rest_rows + first_line, stats, name,
    )
    return pieces, _noise_times(noise, stats, name)
