"""Clock skew between log files, bounded by the spans that link them.

Every process stamps its lines with its own clock. A worker's span lies inside its
caller's request: it starts after the caller started and, when the caller waited for it
(ended well), ends before the caller ended. Each worker span linked to a caller in
another file therefore bounds that file's offset from below (``caller.start -
span.start``) and, for a caller that waited, from above (``caller.end - span.end``), as
Jaeger's clock-skew adjuster does for one span. A file's offset is zero when zero is
inside its bounds (the clocks agree), else the middle of the offsets inside them (the
most room for every span inside its caller; a bound open on one side gives its edge).
The frontend file with the most requests is the reference; another frontend file is
placed by the workers it shares with files placed already; a file with no link keeps its
own clock. A caller
whose start is not in the logs (its ``request.start`` rotated away: read as an instant
at its end) bounds the offset from above only; taken as a whole request, no worker span
fit in it, and the bounds' middle put the worker's span around its caller's end,
running past it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ridtrace.forensics.reading.rotation import rotation_place
from ridtrace.forensics.rules.columns import SpanColumns, first_rows, span_columns
from ridtrace.forensics.rules.frame_arrays import arrow_text

# The lower bound of a link whose caller's start is unknown: below any real offset,
# far enough from int64's end that no arithmetic on it overflows.
_NO_LOWER_BOUND = -(1 << 62)
_NO_UPPER_BOUND = 1 << 62

# A worker writes its end line after its last chunk went out, so on one machine its
# caller may log its own end first: by 0.1-4 ms at 50 calls at once, 9 ms in the
# demo's loaded legacy run. Ends past the caller's by less than this mean the clocks
# agree, and were "corrected" by a few milliseconds on logs of one machine.
AGREE_WITHIN_US = 25_000


def clock_offsets(requests: pd.DataFrame) -> dict[str, int]:
    """Offset in microseconds to add to each worker file's times (only files that need one)."""
    return span_offsets(span_columns(requests))


def span_offsets(spans: SpanColumns) -> dict[str, int]:
    """`clock_offsets` on converted columns.

    The parts of one rotated log (``worker.jsonl.1.gz``, ``worker.jsonl``) are one
    process's lines on one clock: placed as one file, by the bounds of all their links
    together. Each part placed by its own links took an offset of its own, and given the
    offset of the part with most spans, a part bounded from below only (callers that
    went away) outvoted the tight bounds of the other: a worker 2 s behind was corrected
    by 1.6 s, and its output finished just after a timed-out caller's end became a lost
    one, an Unlinked error. A part none of whose spans links to a caller elsewhere takes
    its log's offset too: left on its raw clock, the live part of a worker 2 s ahead,
    whose one span worked for a caller whose log was lost, overlapped a later caller.
    """
    logs, log_of = _logs_of(spans.file_names)
    on_clock = _file_offsets(replace(
        spans, file=np.where(spans.file >= 0, log_of[np.maximum(spans.file, 0)], -1),
        file_names=logs))
    offsets = {name: on_clock.get(int(log_of[code]), 0)
               for code, name in enumerate(spans.file_names)}
    if -1 in on_clock:
        offsets["nan"] = on_clock[-1]
    return {name: offset for name, offset in offsets.items() if offset}


def _logs_of(file_names: list[str]) -> tuple[list[str], np.ndarray]:
    """The logs `file_names` are parts of (one per rotated log: named by its first part
    here), and each file's log code."""
    codes: dict[tuple[str, str], int] = {}
    logs: list[str] = []
    log_of = np.zeros(max(len(file_names), 1), dtype=np.int64)
    for code, name in enumerate(file_names):
        log = rotation_place(name)[0]
        if log not in codes:
            codes[log] = len(logs)
            logs.append(name)
        log_of[code] = codes[log]
    return logs, log_of


def _file_offsets(spans: SpanColumns) -> dict[int, int]:
    """Offsets by file code, every file placed (zero included).

    The frontend file with the most requests is the reference. Files whose spans work
    for callers on its clock come first; then, level by level, files whose spans work
    for worker spans placed already (a Dynamo processor's engine worker, a decode
    worker's prefill worker), bounded by their callers' corrected times; then other
    frontend files, by the placed workers that worked for their callers (replicas of a
    gateway behind one pool of workers, each logging to a file of its own, on clocks of
    their own). A frontend file linked to none placed is on its own clock, and so on.
    """
    # Every caller started before its worker did; only one that finished well waited
    # for it to end: a failed one (an Unlinked error, a client gone) may end while its
    # worker still runs, so it bounds its worker's offset from below only. Left out,
    # a worker 5 s ahead was placed past its failed caller's end, and its lost output
    # excused as a timeout's race.
    # A caller that ended with no word of failing waited too: Dynamo's frontend at its
    # default INFO level states no outcome, and a worker 2 s ahead of such callers was
    # never corrected (zero fits every bound from below), real duplicates missed.
    waited = (spans.ok | (spans.front & spans.closed_quietly) | (spans.worker & ~spans.ended)
              | _steps_of_ok_requests(spans))
    workers = np.flatnonzero(spans.worker & (spans.parent >= 0))
    if not spans.front.any() or not len(workers):
        return {}
    front_files = _by_requests(spans.file[spans.front])
    if len(front_files) > 1 and _all_share_workers(spans, workers, front_files):
        # Replicas of a gateway on one machine's clock are one clock: the workers placed
        # by every replica's callers at once, kept when each replica then fits at zero.
        # Placed by the reference's alone, a worker that served it only two instant
        # refusals went to the middle of their loose bounds, 196 ms off, and a request
        # of the other replica was drawn ending before its worker's span.
        joint = _placement(spans, waited, workers, front_files, together=True)
        if all(_front_fits(spans, waited, workers, joint, code) for code in front_files):
            return joint
    return _placement(spans, waited, workers, front_files, together=False)


def _placement(spans: SpanColumns, waited: np.ndarray, workers: np.ndarray,
               front_files: list[int], *, together: bool) -> dict[int, int]:
    """`_file_offsets` level by level, from the reference frontend file alone, or from
    every frontend file at zero (`together`)."""
    on_clock: dict[int, int] = {}  # file code -> offset, for the files placed so far
    shift = np.zeros(len(spans.start), dtype=np.int64)
    callers = np.zeros(len(spans.start), dtype=bool)
    while True:
        placed = (_level(spans, np.flatnonzero(callers), waited, workers, shift, on_clock)
                  if callers.any() else {})
        if not placed and together and not on_clock:
            placed = dict.fromkeys(front_files, 0)
        if not placed:
            placed = _front_level(spans, waited, workers, shift, on_clock, front_files)
        if not placed:
            alone = [code for code in front_files if code not in on_clock]
            if not alone:
                break
            placed = {alone[0]: 0}  # linked to no file placed: its own clock
        on_clock.update(placed)
        now = np.isin(spans.file, np.fromiter(placed, dtype=np.int64))
        shift = np.where(now, _file_shifts(spans, placed), shift)
        # Their frontend spans, and their worker spans that did not fail, are callers of
        # the next level's.
        callers = callers | (now & (spans.front | (spans.worker & (spans.ok | ~spans.ended))))
    return on_clock


def _all_share_workers(spans: SpanColumns, workers: np.ndarray, front_files: list[int]) -> bool:
    """Whether every frontend file's callers share a worker file with another's: only
    then can one clock for all of them be checked (a file sharing none has its own)."""
    caller = first_rows(spans.span, spans.span_codes, np.flatnonzero(spans.front))[
        spans.parent[workers]]
    linked = caller >= 0
    pairs = {(int(w), int(f)) for w, f in zip(spans.file[workers[linked]].tolist(),
                                               spans.file[caller[linked]].tolist(), strict=True)}
    served: dict[int, set[int]] = {}
    for worker_file, front_file in pairs:
        served.setdefault(worker_file, set()).add(front_file)
    shared = {f for fronts in served.values() if len(fronts) > 1 for f in fronts}
    return all(code in shared for code in front_files)


def _front_fits(spans: SpanColumns, waited: np.ndarray, workers: np.ndarray,
                on_clock: dict[int, int], code: int) -> bool:
    """Whether frontend file `code` fits at zero against the files `on_clock` places
    (its own bounds on the workers so placed, as `_front_level` takes them)."""
    others = {k: v for k, v in on_clock.items() if k != code}
    shift = _file_shifts(spans, others)
    return _front_level(spans, waited, workers, shift, others, [code]).get(code, 0) == 0


def _file_shifts(spans: SpanColumns, by_file: dict[int, int]) -> np.ndarray:
    """Each span's shift: its file's offset in `by_file` (file code, -1 for none, to
    µs), 0 for a file not in it."""
    table = np.zeros(max(len(spans.file_names), max(by_file, default=-1) + 1) + 1,
                     dtype=np.int64)
    for code, offset in by_file.items():
        table[code + 1] = offset
    return np.asarray(table[spans.file + 1], dtype=np.int64)


def _by_requests(files: np.ndarray) -> list[int]:
    """File codes, the one with the most of `files` first (then by code)."""
    codes, counts = np.unique(files, return_counts=True)
    order = np.lexsort((codes, -counts))
    return [int(c) for c in codes[order]]


def _front_level(spans: SpanColumns, waited: np.ndarray, workers: np.ndarray,
                 shift: np.ndarray, on_clock: dict[int, int],
                 front_files: list[int]) -> dict[int, int]:
    """Offsets of the frontend files not placed yet whose callers' work was done by worker
    spans placed already (their times moved by `shift`): the bounds `_level` takes for
    a worker file, seen from the other side."""
    unplaced = [code for code in front_files if code not in on_clock]
    if not unplaced or not on_clock:
        return {}
    done = workers[np.isin(spans.file[workers], list(on_clock))]
    fronts = np.flatnonzero(spans.front & np.isin(spans.file, unplaced))
    caller = first_rows(spans.span, spans.span_codes, fronts)[spans.parent[done]]
    linked = caller >= 0
    done, caller = done[linked], caller[linked]
    if not len(done):
        return {}
    # The file's offset x keeps each worker span inside its caller: caller.start + x <=
    # worker.start and worker.end <= caller.end + x. As -x, the bounds are `_level`'s.
    lo, hi, started = _link_bounds(spans, caller, done, waited, shift)
    files = spans.file[caller]
    return {code: -_best_offset(lo[files == code], hi[files == code], started[files == code])
            for code in np.unique(files).tolist()}


def _steps_of_ok_requests(spans: SpanColumns) -> np.ndarray:
    """Frontend spans that log no outcome of their own inside a frontend span that ended
    well (Dynamo's `generate` under its `http-request`): they waited for their workers as
    it did. Bounded from below only, a worker 2 s ahead of its `generate` caller was not
    corrected."""
    parent = spans.front_parents()
    return np.asarray(spans.front & ~spans.ended & (parent >= 0) & spans.ok[np.maximum(parent, 0)])


def _level(spans: SpanColumns, callers: np.ndarray, waited: np.ndarray, workers: np.ndarray,
           shift: np.ndarray, on_clock: dict[int, int]) -> dict[int, int]:
    """Offsets of the files not placed yet whose spans work for `callers` in other files,
    the callers' times moved by `shift` (those `waited` for their workers bound them from
    above too)."""
    caller = first_rows(spans.span, spans.span_codes, callers)[spans.parent[workers]]
    linked = caller >= 0
    workers, caller = workers[linked], caller[linked]
    # Callers and workers in one file share a clock: only links across files say anything.
    across = spans.file[workers] != spans.file[caller]
    if on_clock:
        across &= ~np.isin(spans.file[workers], list(on_clock))
    workers, caller = workers[across], caller[across]
    if not len(workers):
        return {}
    lo, hi, started = _link_bounds(spans, caller, workers, waited, shift)
    made, holder = _received_outputs(spans, callers, workers, caller, waited)
    lo = np.concatenate([lo, np.full(len(made), _NO_LOWER_BOUND, dtype=np.int64)])
    hi = np.concatenate([hi, spans.end[holder] - spans.end[made] + shift[holder] - shift[made]])
    started = np.concatenate([started, np.full(len(made), _NO_UPPER_BOUND, dtype=np.int64)])
    files = spans.file[np.concatenate([workers, made])]
    return {code: _best_offset(lo[files == code], hi[files == code], started[files == code])
            for code in np.unique(files).tolist()}


def _received_outputs(spans: SpanColumns, callers: np.ndarray, workers: np.ndarray,
                      caller: np.ndarray, waited: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Worker spans among `workers` whose caller did not wait for them (a legacy 500
    while the worker streamed), each with the one of `callers` that ended well holding
    its finished output: that caller had the output before it ended, which bounds the
    worker's clock from above where its own caller bounds it from below only. Left out,
    such a worker was placed at the middle of its file's loose bounds, drawn running
    past the end of the caller that received its output.

    Only output one worker span made and one caller received pairs them: the output of
    different prompts can be equal (a one-token "Yes")."""
    fp = spans.fp_out
    none = np.zeros(0, dtype=np.int64)
    lost = workers[~waited[caller] & spans.ok[workers] & (fp[workers] >= 0)]
    if not len(lost):
        return none, none
    size = max(spans.fp_codes, 1)
    made = np.bincount(fp[spans.worker & spans.ok & (fp >= 0)], minlength=size)
    held = spans.front & spans.ok & (fp >= 0)
    got = np.bincount(fp[held], minlength=size)
    holder = np.full(size, -1, dtype=np.int64)
    holders = callers[held[callers]]
    holder[fp[holders]] = holders
    pair = holder[fp[lost]]
    one = (pair >= 0) & (made[fp[lost]] == 1) & (got[fp[lost]] == 1)
    return lost[one], pair[one]


Bounds = tuple[np.ndarray, np.ndarray, np.ndarray]


def _link_bounds(spans: SpanColumns, caller: np.ndarray, worker: np.ndarray,
                 waited: np.ndarray, shift: np.ndarray) -> Bounds:
    """The offset of each worker span's clock against its caller's, both as `shift` has
    placed them (an unplaced file's shift is zero), that keeps the span inside its
    caller: from below by the starts, unless the caller's start is not in the logs;
    from above by the ends, if the caller waited for its worker; and, apart, from above
    by the worker's start, if the caller did not wait but got the worker's output
    (`_best_offset` takes that bound as a loose one)."""
    apart = shift[caller] - shift[worker]
    lo = np.where(spans.unstarted[caller], _NO_LOWER_BOUND,
                  spans.start[caller] - spans.start[worker] + apart)
    # A caller that ended well with another output than its worker's (a crossed stream
    # under the legacy id policy: it was given another worker's reply) waited for that
    # reply, not for this worker, which may run on long after it: no bound from above.
    # Taken as one, a tenth of a loaded run's links put a worker of the same machine's
    # clock 64 ms behind.
    got, made = spans.fp_out[caller], spans.fp_out[worker]
    other_output = (got >= 0) & (made >= 0) & (got != made)
    # A caller that did not wait (it failed, or its client hung up) but received what
    # this worker made (its own output, cut short with it) had the worker's first chunk
    # before it ended: the worker started before then. Left open, a worker ahead of
    # callers that all hung up or timed out was never corrected, drawn starting after
    # the caller that got its output had ended.
    hi = np.where(waited[caller] & ~other_output, spans.end[caller] - spans.end[worker] + apart,
                  _NO_UPPER_BOUND)
    got_its_output = ~waited[caller] & (got >= 0) & (got == made)
    started = np.where(got_its_output, spans.end[caller] - spans.start[worker] + apart,
                       _NO_UPPER_BOUND)
    return lo, hi, started


def _best_offset(lo: np.ndarray, hi: np.ndarray, started: np.ndarray) -> int:
    """The offset inside the most link intervals ``[lo, hi]`` (`_fitting_offset`); none
    when zero is, with every end allowed `AGREE_WITHIN_US` past its caller's.

    `started` bounds a link from above by its worker's start (its caller got the
    worker's output, then hung up or failed): loosely, as that caller may end long
    after its worker began. Where the offset above already keeps such workers' starts
    before their callers' ends, it stands; taken into the middle, a worker behind by
    300 ms was placed half such a caller's length later than its start bounds say.
    Else (a worker ahead of callers that all hung up) the offset is the nearest to zero
    of the lowest that fits them: the worker begins as its caller does, dispatched."""
    tolerant = _fitting_offset(lo, hi + AGREE_WITHIN_US)
    offset = 0 if not tolerant else _fitting_offset(lo, hi)
    if not (started < _NO_UPPER_BOUND).any():
        return offset
    both = np.minimum(hi, started) + (AGREE_WITHIN_US if offset == 0 else 0)
    segments = _best_segments(lo, both)
    if segments is None or _covering(lo, both, offset) >= segments[2]:
        return offset
    low, high, _ = segments
    candidates = np.where(low > _NO_LOWER_BOUND, low, np.clip(0, low, high))
    return int(candidates[np.argmin(np.abs(candidates))])


def _covering(lo: np.ndarray, hi: np.ndarray, offset: int) -> int:
    """How many link intervals ``[lo, hi]`` hold `offset`."""
    return int(((lo <= offset) & (offset <= hi)).sum())


def _best_segments(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The segments held by the most link intervals ``[lo, hi]``: their low and high
    ends and how many intervals hold each; None when no interval is a segment."""
    valid = lo <= hi
    if not valid.any():
        return None
    lo, hi = lo[valid], hi[valid]
    points = np.concatenate([lo, hi])
    # At equal points an interval's start counts before another's end: bounds are closed.
    steps = np.concatenate([np.ones(len(lo), dtype=np.int64), -np.ones(len(hi), dtype=np.int64)])
    order = np.lexsort((-steps, points))
    points, coverage = points[order], np.cumsum(steps[order])
    best = coverage.max()
    starts = np.flatnonzero(coverage == best)
    ends = starts + 1  # the next point closes the segment of best coverage
    return points[starts], points[np.minimum(ends, len(points) - 1)], int(best)


def _fitting_offset(lo: np.ndarray, hi: np.ndarray) -> int:
    """The offset inside the most link intervals ``[lo, hi]``: zero when zero is, else
    the middle of the offsets that are (the one nearest zero of several such segments).

    A link whose caller lost a line (a torn write, a rotated file) bounds wrongly; it is
    outvoted instead of dragging the file's clock.
    """
    segments = _best_segments(lo, hi)
    if segments is None:  # no span fits its caller: the middle of the tightest bounds
        return (int(lo.max()) + int(hi.min())) // 2
    low, high, _ = segments
    if ((low <= 0) & (high >= 0)).any():
        return 0
    # Zero does not fit: the middle of the offsets that do leaves every span the most
    # room inside its caller; an edge put a span on its caller's end (a worker's output
    # finished as a failed caller ended: a timeout's race, not a lost caller). A bound
    # open on one side (callers that bound from one side only) keeps its finite edge.
    bounded = (low > _NO_LOWER_BOUND) & (high < _NO_UPPER_BOUND)
    candidates = np.where(bounded, low + (high - low) // 2, np.clip(0, low, high))
    return int(candidates[np.argmin(np.abs(candidates))])


def shift_spans(spans: SpanColumns, offsets: dict[str, int]) -> SpanColumns:
    """`spans` with every span of an offset file moved onto the reference clock."""
    if not offsets:
        return spans
    shift = _file_shifts(spans, {code: offsets[name] for code, name in
                                 enumerate(spans.file_names) if name in offsets})
    return replace(spans, start=spans.start + shift, end=spans.end + shift)


def apply_offsets(requests: pd.DataFrame, offsets: dict[str, int]) -> pd.DataFrame:
    """`requests` with every span of an offset file moved onto the reference clock."""
    if not offsets:
        return requests
    names = pa.array(list(offsets), type=pa.string())
    at = pc.index_in(arrow_text(requests["file"]), value_set=names)
    index = pc.fill_null(at, -1).to_numpy(zero_copy_only=False)
    values = np.array(list(offsets.values()), dtype=np.int64)
    shift_us = np.where(index >= 0, values[np.maximum(index, 0)], 0)
    shift = pd.to_timedelta(shift_us, unit="us")
    return requests.assign(start=requests["start"] + shift, end=requests["end"] + shift)


def correct_skew(requests: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Estimate the offsets and apply them: the requests on one clock, and the offsets."""
    offsets = clock_offsets(requests)
    return apply_offsets(requests, offsets), offsets
