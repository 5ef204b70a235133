"""The suspect lines of one read judged in Python: rows rescued, bad lines with reasons.

DuckDB flags the few lines it gave no row or no time for (`reading.scan`); each is
judged whole (`reading.rescue`, `reading.judge`), or by the record its valid JSON
carries. A crash's hole or a journal's left-out record names the file in the stats.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.forensics.reading import lean
from ridtrace.forensics.reading.crash_holes import CRASH_HOLE, crash_hole
from ridtrace.forensics.reading.judge import (
    HEADLESS_FILE,
    HEADLESS_RECORD,
    JOURNAL_DROPPED,
    JOURNAL_DROPPED_FILE,
    JOURNAL_LEFT_OUT,
    JOURNAL_LEFT_OUT_FILE,
    LIMIT_CUT_BYTES,
    LIMIT_CUT_FILE,
    LIMIT_CUT_RECORD,
    NESTED_FILE,
    NESTED_TOO_DEEPLY,
    PAGE_ONLY,
    PAGE_ONLY_FILE,
    TRUNCATED_JSON,
)
from ridtrace.forensics.reading.lean import (
    SUSPECT_EMPTY,
    SUSPECT_PACK,
    SUSPECT_TIMED,
    SUSPECT_UNTIMED,
)
from ridtrace.forensics.reading.packed_lines import CR_SEPARATED, CR_SEPARATED_FILE
from ridtrace.forensics.reading.rescue import judge_unwrapped, records_inside
from ridtrace.forensics.reading.stats import FileNote, ReadStats


def judge_suspects(
    lines: np.ndarray, rn: np.ndarray, empty: np.ndarray, timed: np.ndarray,
    untimed: np.ndarray, fetch: Callable[[Iterable[int]], dict[int, bytes]], *,
    fields: Sequence[str], starts_file: bool, stats: ReadStats, name: str,
) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """Valid JSON that DuckDB rejected, as rows; and the bad lines with their reasons.

    `lines` are the file lines of reader rows `rn`; `starts_file`: whether line 1 is the
    file's own first line (not a later Dask block's).
    """
    # DuckDB gave no row, or took no time Python's ISO parser may take: judge it whole.
    whole = empty | (untimed & timed)
    texts = fetch(int(x) for x in lines[whole])
    inside = records_inside(lines[~whole].tolist(), fetch)
    rescued: list[dict[str, Any]] = []
    bad: list[tuple[int, str]] = []
    holed = left_out = dropped = cr_separated = cut = deep = headless = False
    for i, line in enumerate(lines.tolist()):
        if not whole[i] and line not in inside:
            bad.append((line, "missing time" if untimed[i] else "unknown format"))
            continue
        text = texts.get(line, b"") if whole[i] else inside[line]
        first_line = starts_file and line == 1
        rows, reason, records = judge_unwrapped(text, fields, first_line=first_line)
        if reason is not None:  # with rows too: a crash's hole before a record
            bad.append((line, reason))
        if records > 1:  # a batch on one line (a collector's, an array): its records count
            stats.count_records(name, records, bad=0 if reason is None else records - len(rows))
        if reason == JOURNAL_LEFT_OUT and not left_out:
            left_out = True  # a record is gone, however few the bad lines
            stats.unreadable_files.append(FileNote(name, JOURNAL_LEFT_OUT_FILE))
        if reason is not None and reason.startswith(JOURNAL_DROPPED) and not dropped:
            dropped = True  # lines are gone, however few the bad lines
            stats.unreadable_files.append(FileNote(name, JOURNAL_DROPPED_FILE))
        if reason is not None and reason.startswith(PAGE_ONLY):
            stats.unreadable_files.append(FileNote(name, PAGE_ONLY_FILE))  # once: its end
        if reason is not None and reason.endswith(CR_SEPARATED) and not cr_separated:
            cr_separated = True  # records are unread, however few the bad lines
            stats.unreadable_files.append(FileNote(name, CR_SEPARATED_FILE))
        # The record's own length: the NULs a copy-and-truncate left before a torn line are
        # none of it (a 30-byte tail after a 9 MB hole was "a record of 4 KiB or more").
        long_cut = (reason == TRUNCATED_JSON and len(text) >= LIMIT_CUT_BYTES
                    and len(text.lstrip(b"\0")) >= LIMIT_CUT_BYTES)
        # A batch's record (`judge._each_read` names it after the line's count).
        if (long_cut or (reason is not None and reason.endswith(LIMIT_CUT_RECORD))) and not cut:
            cut = True  # records are lost, however few the bad lines
            stats.unreadable_files.append(FileNote(name, LIMIT_CUT_FILE))
        if reason == HEADLESS_RECORD and not headless:
            headless = True  # a record is lost, however few the bad lines
            stats.unreadable_files.append(FileNote(name, HEADLESS_FILE))
        if reason is not None and reason.endswith(NESTED_TOO_DEEPLY) and not deep:
            # Valid JSON the parser gives up on (DuckDB refused it for a lone surrogate,
            # say): an Unlinked error in it was one bad line under the 1 %, exit 0.
            deep = True
            stats.unreadable_files.append(FileNote(name, NESTED_FILE))
        if not holed and crash_hole(text, first_line=first_line):
            holed = True  # lines of this log are gone, however few bad lines
            # No line number: a Dask block numbers its lines from 1.
            stats.unreadable_files.append(FileNote(name, CRASH_HOLE))
        for row in rows:  # several only when objects were joined on one line
            row["rn"] = int(rn[i])
            row["_t"] = row.pop("time")
            rescued.append(row)
    return rescued, bad


# Suspect lines judged per slice: their texts and reasons, not the file's, in memory.
JUDGED_AT_ONCE = 1 << 16


def suspect_lines(rows: pa.Table) -> tuple[np.ndarray, ...]:
    """The suspect rows' lines in file order: row numbers and the empty, timed and untimed
    flags. The lean pass lists them in one row (`lean.SUSPECT_PACK`); the full pass gives
    each line a row of its own."""
    if "_suspects" not in rows.column_names:
        return (rows["first_rn"].to_numpy(), *(
            rows[c].to_numpy(zero_copy_only=False) for c in ("_empty", "_timed", "_untimed")))
    packed = np.sort(pc.list_flatten(rows["_suspects"]).to_numpy())
    bits = packed % SUSPECT_PACK
    return (packed // SUSPECT_PACK, (bits & SUSPECT_EMPTY) != 0, (bits & SUSPECT_TIMED) != 0,
            (bits & SUSPECT_UNTIMED) != 0)

def count_unjudged(rows: pa.Table, stats: ReadStats, name: str) -> None:
    """The suspect lines the lean pass left unlisted (past `lean.SUSPECTS_JUDGED` in one
    file), counted as bad lines, and the file named: records among them are not read."""
    if "_suspects" not in rows.column_names:
        return
    listed = pc.sum(pc.list_value_length(rows["_suspects"])).as_py() or 0
    unjudged = (pc.sum(rows["lines"]).as_py() or 0) - listed
    if unjudged > 0:
        stats.bad_unsampled(name, unjudged)
        stats.unreadable_files.append(FileNote(name, (
            f"{unjudged} more lines that are no log record were not judged, past the first "
            f"{lean.SUSPECTS_JUDGED:,} of this file: counted as bad lines; a record among "
            "them (valid JSON DuckDB could not read), if any, was not read")))


Judge = Callable[..., tuple[list[dict[str, Any]], list[tuple[int, str]]]]


def judge_in_slices(lines: tuple[np.ndarray, ...], judge: Judge,
                    count: Callable[..., None]) -> list[dict[str, Any]]:
    """`judge` (`LogTable._judge`) over suspect `lines` (`suspect_lines`), a slice at a
    time, each slice's bad lines handed to `count` with the last of them (``through``);
    the rows rescued. A log of plain text is all suspect lines: each slice's texts and
    reasons are let go before the next is fetched."""
    rn, empty, timed, untimed = lines
    rescued: list[dict[str, Any]] = []
    for lo in range(0, len(rn), JUDGED_AT_ONCE):
        at = slice(lo, lo + JUDGED_AT_ONCE)
        more, judged = judge(rn[at], empty[at], timed[at], untimed[at])
        rescued.extend(more)
        if judged:
            count(judged, through=judged[-1][0])
    return rescued
