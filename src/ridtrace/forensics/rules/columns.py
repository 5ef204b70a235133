"""The requests frame as plain arrays, converted once for every rule.

The rules compare ids, fingerprints and times across ~10⁵–10⁶ spans. On pandas
columns of Arrow strings each ``isin``, ``duplicated`` or ``merge`` hashes the strings
again and builds new frames; here every id column is hashed once into integer codes
(`SpanColumns`), and the rules join and group on those codes with numpy lookups. Text
is only taken back, with Arrow's ``take``, for the rows that become findings.

Columns that are compared with each other share one code space: span and parent ids,
and the input and output fingerprints. Codes number values in order of first
appearance; where an order by text matters (clusters are listed by id, as pandas'
``sort_values`` listed them), only the few codes involved are ranked (`ranked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.contract import (
    FRONTEND,
    OUTCOME_CANCELLED,
    OUTCOME_CONFLICT,
    OUTCOME_ERROR,
    OUTCOME_OK,
    WORKER,
)
from ridtrace.forensics.records.requests import LINE_FILES
from ridtrace.forensics.rules import CALLER_JUMP_ROUNDS
from ridtrace.forensics.rules.codes import Arrow, shared_codes
from ridtrace.forensics.rules.frame_arrays import arrow_column, arrow_text, epoch_us, line_numbers

# The string columns the rules hash, look up or quote in a finding.
_TEXT = ("trace_id", "span_id", "parent_span_id", "request_id", "x_request_id", "fp_in",
         "fp_out", "unlinked", "foreign", "deprecated")


@dataclass(frozen=True)
class LinesAt:
    """Evidence lines of some rows: line numbers (-1: none) and the files they are in."""

    lines: np.ndarray
    files: np.ndarray  # names, as objects

    def or_else(self, other: LinesAt) -> LinesAt:
        """These lines, and `other`'s where these are missing."""
        have = self.lines >= 0
        return LinesAt(np.where(have, self.lines, other.lines),
                       np.where(have, self.files, other.files))


@dataclass(frozen=True)
class SpanColumns:
    """One requests frame as arrays of one length: codes (-1 for missing) and flags."""

    front: np.ndarray
    worker: np.ndarray
    ok: np.ndarray
    cancelled: np.ndarray
    failed: np.ndarray  # outcome error
    refused: np.ndarray  # outcome conflict: a worker refused an id it already held
    ended: np.ndarray  # an outcome is logged: the span's end line is in the logs
    # A closing line read, no outcome stated nor Unlinked error logged: a span that ended
    # with no word of failing (Dynamo's `http-request` at INFO: `http response sent` and
    # `SPAN_CLOSED` name no outcome, its DEBUG `request completed` does).
    closed_quietly: np.ndarray
    unstarted: np.ndarray  # one closing line at one instant: its start line not read
    span: np.ndarray
    parent: np.ndarray
    span_codes: int
    request_id: np.ndarray
    x_request_id: np.ndarray
    dictionary: dict[str, Arrow]
    fp_in: np.ndarray
    fp_out: np.ndarray
    fp_codes: int
    start: np.ndarray
    end: np.ndarray
    # How long each request took to answer, as its request.end states (µs; -1 where
    # none does): its client had the answer then, whatever the span logged after.
    answer_us: np.ndarray
    file: np.ndarray
    file_names: list[str]
    lines: dict[str, np.ndarray]
    # Per line column, the file that line is in (`records.requests.LINE_FILES`).
    line_files: dict[str, Arrow]
    text: dict[str, Arrow]

    def __len__(self) -> int:
        return len(self.front)

    def texts(self, column: str, rows: np.ndarray) -> list[str | None]:
        """The text of `column` at `rows`, None where missing."""
        at = pa.array(rows, type=pa.int64())
        picked: list[str | None] = self.text[column].take(at).to_pylist()
        return picked

    def files(self, rows: np.ndarray) -> list[str]:
        """File names at `rows` ("" where unknown)."""
        names = np.array([*self.file_names, ""], dtype=object)  # code -1: the last, ""
        picked: list[str] = names[self.file[rows]].tolist()
        return picked

    def lines_at(self, column: str, rows: np.ndarray) -> LinesAt:
        """The lines of evidence column `column` at `rows`, each with the file it is in.

        A frame that does not say which file a line is in (built by hand) means the
        span's ``file``.
        """
        at = pa.array(rows, type=pa.int64())
        files = np.asarray(self.line_files[column].take(at).to_numpy(zero_copy_only=False),
                           dtype=object)
        unnamed = pd.isna(files)
        if unnamed.any():
            files[unnamed] = np.asarray(self.files(rows[unnamed]), dtype=object)
        return LinesAt(self.lines[column][rows], files)

    def front_parents(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The row of the frontend span each of `rows` (every row when None) names as
        its parent; -1 where its parent is no frontend span."""
        front_row = first_rows(self.span, self.span_codes, np.flatnonzero(self.front))
        parent = self.parent if rows is None else self.parent[rows]
        return np.where(parent >= 0, front_row[np.maximum(parent, 0)], -1)

    def trace_in_front(self, rows: np.ndarray) -> np.ndarray:
        """Whether the trace of each of `rows` has a frontend span (its frontend logs are here).

        Most rows asked about are worker spans whose parent is a frontend span of the
        same trace: that is answered by span codes and one text comparison per row.
        Only the rest are hashed.
        """
        out = np.zeros(len(rows), dtype=bool)
        if not len(rows):
            return out
        traces = self.text["trace_id"]
        caller = self.front_parents(rows)
        linked = np.flatnonzero(caller >= 0)
        if len(linked):
            same = pc.equal(traces.take(pa.array(rows[linked])),
                            traces.take(pa.array(caller[linked])))
            # A trace id missing on either side (work sent without trace context) does
            # not say the parent is another trace's span: the caller it names is here.
            out[linked] = pc.fill_null(same, True).to_numpy(zero_copy_only=False)
        rest = np.flatnonzero(~out)
        if len(rest):
            out[rest] = self._traces_hashed_in_front(rows[rest])
        return out

    def _traces_hashed_in_front(self, rows: np.ndarray) -> np.ndarray:
        traces = self.text["trace_id"]
        fronts = _one_array(traces.filter(pa.array(self.front)))
        asked = _one_array(traces.take(pa.array(rows, type=pa.int64())))
        # A missing trace id matches nothing: that some unrelated frontend span lacks
        # one too says nothing of this span's caller.
        if len(asked) < len(fronts) // 4:
            # Hash the few traces asked about and probe the frontend's against them,
            # rather than hash every frontend trace for a handful of questions.
            seen = fronts.filter(pc.is_in(fronts, value_set=asked, skip_nulls=True))
            found = pc.is_in(asked, value_set=seen, skip_nulls=True)
        else:
            found = pc.is_in(asked, value_set=fronts, skip_nulls=True)
        return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)

    def caller(self) -> np.ndarray:
        """Span code of the caller each span works for (see `rules.overlap.caller_of`)."""
        is_front_span = lookup(self.span_codes, self.span[self.front])
        has_parent = self.parent >= 0
        nested = self.front & has_parent & is_front_span[np.maximum(self.parent, 0)]
        up = (self.worker | nested) & has_parent
        caller = np.where(up, self.parent, self.span)
        # A span working for a span that works for another (a Dynamo processor's worker,
        # a decode worker's prefill worker) works for that one's caller: one request, not
        # two holding its id. Usually one lookup finds no such span.
        top = np.arange(max(self.span_codes, 1), dtype=np.int64)
        rows = np.flatnonzero(up & (self.span >= 0))
        top[self.span[rows]] = self.parent[rows]
        for _ in range(CALLER_JUMP_ROUNDS):
            above = top[top]
            if np.array_equal(above, top):
                break
            top = above
        return np.where(caller >= 0, top[np.maximum(caller, 0)], caller)


def _one_array(values: Arrow) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


def lookup(size: int, codes: np.ndarray) -> np.ndarray:
    """A boolean table over a code space, True at `codes` (missing ones ignored)."""
    table = np.zeros(max(size, 1), dtype=bool)
    table[codes[codes >= 0]] = True
    return table


def isin(codes: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Whether each code is among `members` (one code space).

    A missing code counts as a member only when `members` holds a missing one too, as
    pandas' ``isin`` matches missing with missing.
    """
    size = int(max(codes.max(initial=-1), members.max(initial=-1))) + 1
    out = lookup(size, members)[np.maximum(codes, 0)] & (codes >= 0)
    if (members < 0).any():
        out |= codes < 0
    return np.asarray(out)


def span_columns(requests: pd.DataFrame) -> SpanColumns:
    """Convert a requests frame (`records.requests.REQUEST_COLUMNS`) for the rules."""
    text = {col: arrow_text(requests[col]) for col in _TEXT}
    (span, parent), _ = shared_codes(text["span_id"], text["parent_span_id"])
    span, parent = _within_traces(span, parent, text["trace_id"])
    (fp_in, fp_out), _ = shared_codes(text["fp_in"], text["fp_out"])
    side = arrow_column(requests["side"])
    outcome = arrow_column(requests["outcome"])
    (file,), file_names = shared_codes(arrow_column(requests["file"]))
    (request_id,), request_ids = shared_codes(text["request_id"])
    front = _equals(side, FRONTEND)
    start, end = epoch_us(requests["start"]), epoch_us(requests["end"])
    # A frame built by hand may not say whether a line closes a span: taken as started.
    closing = np.asarray(requests["closing"].fillna(True).to_numpy(), dtype=bool)
    one_line = np.asarray(requests["lines"].fillna(0).to_numpy() == 1, dtype=bool)
    ended = np.asarray(pc.is_valid(outcome).to_numpy(zero_copy_only=False), dtype=bool)
    # Client ids only matter on frontend spans (client_id_reuse): hash only those.
    (front_xrid,), x_request_ids = shared_codes(text["x_request_id"].filter(pa.array(front)))
    x_request_id = np.full(len(front), -1, dtype=np.int64)
    x_request_id[front] = front_xrid
    return SpanColumns(
        front=front,
        worker=_equals(side, WORKER),
        ok=_equals(outcome, OUTCOME_OK),
        cancelled=_equals(outcome, OUTCOME_CANCELLED),
        failed=_equals(outcome, OUTCOME_ERROR),
        refused=_equals(outcome, OUTCOME_CONFLICT),
        ended=ended,
        closed_quietly=closing & ~ended & np.asarray(
            pc.is_null(text["unlinked"]).to_numpy(zero_copy_only=False), dtype=bool),
        unstarted=one_line & closing & (start == end),
        span=span,
        parent=parent,
        span_codes=_size(span, parent),
        request_id=request_id,
        x_request_id=x_request_id,
        dictionary={"request_id": request_ids, "x_request_id": x_request_ids},
        fp_in=fp_in,
        fp_out=fp_out,
        fp_codes=_size(fp_in, fp_out),
        start=start,
        end=end,
        answer_us=_answer_us(requests),
        file=file,
        file_names=[str(name) for name in file_names.to_pylist()],
        lines={col: line_numbers(requests[col]) for col in LINE_FILES},
        line_files={col: arrow_column(requests[file]) for col, file in LINE_FILES.items()},
        text=text,
    )


def _answer_us(requests: pd.DataFrame) -> np.ndarray:
    """The ``answer_us`` column as int64, -1 where missing (a frame built by hand may
    have no such column: no request states one)."""
    if "answer_us" not in requests.columns:
        return np.full(len(requests), -1, dtype=np.int64)
    stated = requests["answer_us"]
    return np.asarray(stated.fillna(-1).to_numpy(dtype=np.float64), dtype=np.int64)


def _within_traces(
    span: np.ndarray, parent: np.ndarray, trace: Arrow
) -> tuple[np.ndarray, np.ndarray]:
    """Span and parent codes that name a span within its trace, as requests are keyed.

    A span id logged in two traces (ids minted by a counter, a collision) is two
    requests: on span ids alone they were one caller, so a duplicate between them was
    never reported and each one's workers were taken for the other's; so was a worker of
    one trace whose parent id is a span of another. Only paid for when some span id
    repeats or a parent names another trace's span.
    """
    known = span[span >= 0]
    if not len(known):
        return span, parent
    if np.max(np.bincount(known)) <= 1 and not _links_across_traces(span, parent, trace):
        return span, parent
    (traces,), _ = shared_codes(trace)
    width = np.int64(_size(span, parent))
    in_trace = (traces + 1) * width  # a missing trace (-1) is a trace of its own
    keys = np.concatenate([np.where(span >= 0, in_trace + span, -1),
                           np.where(parent >= 0, _parents_trace(span, parent, traces) + parent,
                                    -1)])
    codes, _ = pd.factorize(keys, use_na_sentinel=True)
    codes = np.where(keys >= 0, codes, -1).astype(np.int64)
    return codes[: len(span)], codes[len(span):]


def _parents_trace(span: np.ndarray, parent: np.ndarray, traces: np.ndarray) -> np.ndarray:
    """The trace part of each row's parent key: its own trace's, but for a span logged
    without a trace id (work sent without trace context), which names its parent by
    span id alone: the trace of that span id when only one trace has it."""
    width = np.int64(_size(span, parent))
    own = (traces + 1) * width
    asked = np.flatnonzero((traces < 0) & (parent >= 0))
    if not len(asked):
        return own
    known = span >= 0
    pairs = pd.DataFrame({"span": span[known], "trace": traces[known]}).drop_duplicates()
    sole = pairs[~pairs["span"].duplicated(keep=False)]
    trace_of = np.full(int(width), -1, dtype=np.int64)
    trace_of[sole["span"].to_numpy()] = sole["trace"].to_numpy()
    named = trace_of[parent[asked]]
    own[asked] = (named + 1) * width
    return own


def _links_across_traces(span: np.ndarray, parent: np.ndarray, trace: Arrow) -> bool:
    """Whether a parent id names a span of another trace (span ids all distinct)."""
    children = np.flatnonzero(parent >= 0)
    named = first_rows(span, _size(span, parent), np.arange(len(span)))[parent[children]]
    linked = named >= 0
    if not linked.any():
        return False
    mine = trace.take(pa.array(children[linked], type=pa.int64()))
    theirs = trace.take(pa.array(named[linked], type=pa.int64()))
    # A missing trace id is a trace of its own, as in the keys of the read; but a span
    # logged without one names its parent by span id alone (`_parents_trace`).
    apart = pc.if_else(pc.is_null(mine), False, pc.fill_null(pc.not_equal(mine, theirs), True))
    return bool(pc.any(apart).as_py())


def _size(*codes: np.ndarray) -> int:
    return int(max((int(c.max()) for c in codes if len(c)), default=-1)) + 1


def _equals(column: pa.Array, value: str) -> np.ndarray:
    if isinstance(column, pa.DictionaryArray):
        (codes,), dictionary = shared_codes(column)
        hit = pc.fill_null(pc.equal(dictionary, value), False).to_numpy(zero_copy_only=False)
        return np.asarray(np.r_[hit, False][codes])  # code -1 (missing) reads the False
    return np.asarray(pc.fill_null(pc.equal(column, value), False).to_numpy(zero_copy_only=False))


def first_rows(codes: np.ndarray, size: int, rows: Sequence[int] | np.ndarray) -> np.ndarray:
    """For each code, the first of `rows` (in order) holding it; -1 where none does."""
    rows = np.asarray(rows, dtype=np.int64)
    table = np.full(max(size, 1), -1, dtype=np.int64)
    picked = codes[rows]
    present = picked >= 0
    # Assigning in reverse leaves the first row for each code.
    table[picked[present][::-1]] = rows[present][::-1]
    return table
