"""`ridtrace analyze --follow`: poll the inputs, parse what is new, run the live rules.

One poll: find new files, read every followed file's new whole lines, parse each
file's chunk through the batch read path into per-span rows, put the rows of all
files in time order and feed them to `LiveRules`. Under load a poll reads more per file (up to
`FollowSettings.max_bytes`) and the next one starts at once; when idle, the loop
sleeps `interval` seconds between polls.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ridtrace.contract import FINDING_KINDS, SEVERITY
from ridtrace.forensics.live.chunk import Chunk
from ridtrace.forensics.live.collector import PollCollector
from ridtrace.forensics.live.findings import Finding, iso_us
from ridtrace.forensics.live.parse import SpanRows, parse_chunks, span_rows
from ridtrace.forensics.live.rules import LiveRules
from ridtrace.forensics.live.stream import StreamTail
from ridtrace.forensics.live.watch import Watch
from ridtrace.forensics.reading.connection import PreparedReads, connect
from ridtrace.forensics.reading.inputs import link_state
from ridtrace.forensics.reading.stats import ReadStats, completeness, read_notes
from ridtrace.forensics.rules.instants import instants_reason

ERROR_KINDS = tuple(k for k in FINDING_KINDS if SEVERITY[k] == "error")

AHEAD_LIMIT_US = 24 * 3600 * 10**6
"""How far past the logs' present a span's time may be and still be taken as time. The
present is this machine's clock, or later by the median offset of the latest lines' times
from it, so services whose clocks all run hours ahead (local time written as UTC) are the
present, and one line stamped years ahead is not: taken as the present, it ended the
window for every request in flight then, and held the window's edge for good after."""
# Once stopping, how long (in rounds of STOP_LINE_POLL_S) the follow waits for the rest
# of a line the stop cut: a writer flushing in blocks leaves half a line at the end of
# its file most of the time, read at once as a bad line the file does not hold.
STOP_LINE_ROUNDS = 20
STOP_LINE_POLL_S = 0.05

RECENT_ENDS = 255
"""Latest span times kept for that median."""
AHEAD_SAMPLES = 10


@dataclass(frozen=True)
class FollowSettings:
    """How to follow: where to start, the window, the poll interval, the batch size."""

    from_start: bool = False
    window_s: float = 600.0
    interval: float = 0.25
    max_bytes: int = 32 << 20
    # How long a file read to its end may still lag the others (seconds): writers flush
    # each log on their own, so a file caught up now may yet get lines older than what
    # another file already shows. A judgement that rests on a line missing from a
    # caught-up file waits this long (0: caught up means up to the latest time read).
    # A stream has its own wait: it counts as caught up once quiet (`stream.QUIET_S`).
    settle_s: float = 1.0


class Follower:
    """Follows log inputs and yields findings as the logs make them certain."""

    def __init__(
        self, inputs: Sequence[str], settings: FollowSettings | None = None,
        *, clock: Callable[[], float] = time.time,
        ticks: Callable[[], float] = time.monotonic,
        launch_sizes: dict[tuple[int, int], int] | None = None,
    ) -> None:
        self.settings = settings or FollowSettings()
        self._clock = clock
        self._ticks = ticks
        # (ticks, watermark, batch) after each poll, back to the settle time: what was read
        # by then.
        self._seen: deque[tuple[float, int, int]] = deque()
        self._settled = 0
        self._settled_batch = 0
        # Latest span times as offsets from the clock when they were read (µs); the
        # clock itself to start with, so the first line read is not the present alone.
        self._offsets = np.zeros(1, dtype=np.int64)
        self.ahead = 0
        self.ahead_samples: list[dict[str, Any]] = []
        self.stats = ReadStats()
        self.watch = Watch(inputs, self.stats, from_start=self.settings.from_start,
                           launch_sizes=launch_sizes)
        self.rules = LiveRules(window_s=self.settings.window_s)
        self._con = connect()
        self._queries = PreparedReads(self._con)
        self._tmp = tempfile.TemporaryDirectory(prefix="ridtrace-follow-")
        self._staged = Path(self._tmp.name) / "chunk.jsonl"
        self.polls = 0
        self.reported: Counter[str] = Counter()  # findings handed to `run`'s caller
        self._latest: dict[str, int] = {}
        # Files read to their end but for a piece of a last line: where each stood, and
        # since when (`_quiet_piece`).
        self._pieces: dict[str, tuple[tuple[int, int], float]] = {}

    def start(self) -> tuple[int, list[str]]:
        """Look at the inputs once: files followed (from their end unless `from_start`),
        and the inputs that do not exist yet (waited for)."""
        self.watch.discover()
        return len(self.watch.tails), sorted(self.watch.missing)

    def streams(self) -> list[str]:
        """The streams followed (standard input, named pipes): read from their first line,
        whatever `from_start` says of files."""
        return [tail.name for tail in self.watch.tails.values() if isinstance(tail, StreamTail)]

    def poll(self) -> tuple[list[Finding], bool]:
        """One round: the findings it made certain, and whether data is still pending."""
        self.watch.discover()
        chunks, more = self.watch.read(self.settings.max_bytes)
        self._renamed()
        self.polls += 1
        return self._feed(chunks), more

    def finish(self) -> list[Finding]:
        """The findings of the last lines that never got their newline, read as lines
        now that the follow ends, as the batch read reads a file's last line: held
        back for good, an error on such a line was never reported; then the callers
        whose judgement waited on a worker span that never ended."""
        return [*self._feed(self.watch.flush_held(), final=True), *self.rules.finish()]

    def _renamed(self) -> None:
        """Spans read from a file a rotation renamed (or copied, then truncated) cite
        its new name: a finding printed after the rotation cited the old name's line
        numbers, other requests' lines in the file now under that name."""
        for old, new in self.watch.take_renamed():
            self.stats.rename_samples(old, new)
            # Every line read under `old` so far is in `new`: lines read after the
            # rotation under `old` are the new file's, and not taken in yet.
            for span in self.rules.state.spans.values():
                if span.file == old:
                    span.file = new
                if span.last_file == old:
                    span.last_file = new
            if old in self._latest:  # what was read of it is read of the new name
                self._latest[new] = max(self._latest.get(new, 0), self._latest[old])

    def _feed(self, chunks: list[Chunk], *, final: bool = False) -> list[Finding]:
        parts = parse_chunks(self._con, chunks, self.stats, self._staged, self._queries)
        batch = span_rows(parts)
        limit = self._ahead_limit(batch)
        for part in parts:
            latest = part.latest(limit)
            if latest is not None:
                self._latest[part.name] = max(self._latest.get(part.name, 0), latest)
        # Files with more to read are only known up to their latest line so far; those
        # read to their end, up to what the others showed a settle time ago (the end of
        # the follow: up to the latest time read).
        settled = None if final or self.settings.settle_s <= 0 else self._settled_mark()
        marks, behind, unfinished = {}, {}, {}
        now = self._ticks()
        for tail in self.watch.tails.values():
            latest = self._latest.get(tail.name, 0)
            if not tail.at_eof and not self._quiet_piece(tail, now):
                marks[tail.name] = unfinished[tail.name] = latest
                if tail.behind:
                    behind[tail.name] = latest
            elif settled is not None and not isinstance(tail, StreamTail):
                marks[tail.name] = max(latest, settled)
        # A log not followed yet (not created before its first flush) is caught up to
        # the same settled time as one read to its end.
        found = self.rules.feed(batch, marks, behind, limit, unseen=settled,
                                settled_batch=None if settled is None else self._settled_batch,
                                unfinished=unfinished)
        self._seen.append((self._ticks(), self.rules.state.watermark, self.rules.state.batches))
        return found

    def _quiet_piece(self, tail: Any, now: float) -> bool:
        """Whether `tail` is a rotated part read to its end but for a piece of a line
        that has not grown for a settle time. A rotated log's torn last line (its writer
        killed mid-write, or writing to the new file now) never gets its newline; taken
        as more to come at a time not known yet, it held every judgement waiting on the
        files' progress for good (a crossed stream was never printed). The piece is
        still held, and read if it ends. A live file's piece is a line being written
        (a writer that flushes by blocks): it is waited for, however long."""
        where = (None if isinstance(tail, StreamTail) or not tail.rotated_away
                 else tail.piece_left)
        if where is None:
            self._pieces.pop(tail.name, None)
            return False
        seen = self._pieces.get(tail.name)
        if seen is None or seen[0] != where:
            self._pieces[tail.name] = seen = (where, now)
        return now - seen[1] >= self.settings.settle_s

    def _settled_mark(self) -> int:
        """The latest log time read a settle time ago: a file read to its end now holds
        every line up to it (a writer flushes within the settle time), while a line the
        other files showed since may still have older lines on their way to it. Without
        it, a caller whose end line a frontend had not flushed yet was taken as still in
        flight when a worker of the id's next caller logged, and printed as a duplicate."""
        cutoff = self._ticks() - self.settings.settle_s
        while self._seen and self._seen[0][0] <= cutoff:
            _, self._settled, self._settled_batch = self._seen.popleft()
        return self._settled

    def _ahead_limit(self, batch: SpanRows) -> int:
        """The latest time the batch may move the window to; spans past it are counted
        (`ahead_of_present`) and the batch's watermark is taken from the others."""
        now = int(self._clock() * 1e6)
        ends = batch.ends
        self._offsets = np.concatenate([self._offsets, ends[-RECENT_ENDS:] - now])[-RECENT_ENDS:]
        # The lower median: one line ahead beside one on time is not the present. Never
        # behind the clock: read --from-start, a backlog's old lines put the median days
        # back, and the first lines written now were taken as stamped ahead of it.
        middle = max(int(np.sort(self._offsets)[(len(self._offsets) - 1) // 2]), 0)
        # Within int64, where the times are (DuckDB reads years up to 294247).
        limit = min(now + middle + AHEAD_LIMIT_US, int(np.iinfo(np.int64).max))
        ahead = np.flatnonzero(ends > limit)
        if len(ahead):
            self.ahead += len(ahead)
            for row in ahead[: AHEAD_SAMPLES - len(self.ahead_samples)].tolist():
                self.ahead_samples.append({
                    "file": batch.columns["file"][row], "line": batch.columns["last_line"][row],
                    "time": iso_us(int(ends[row])),
                })
            on_time = ends[ends <= limit]
            batch.watermark = int(on_time.max()) if len(on_time) else 0
        return limit

    def run(
        self,
        on_finding: Callable[[Finding], bool],
        *,
        stop: Callable[[], bool],
        stop_now: Callable[[], bool] = lambda: False,
        sleep: Callable[[float], Any] = time.sleep,
        line_wait: Callable[[float], Any] = time.sleep,
    ) -> None:
        """Poll until `stop()` or until `on_finding` returns False (e.g. --fail-fast).

        After `stop()` turns true, rounds go on until what was already written is read,
        so a summary taken after a signal covers every line written before it; lines
        written after it are not read, so a busy writer cannot keep the follow going.
        `stop_now()` (a second signal) ends it at once: what is left unread is listed,
        the summary says the read is incomplete. `line_wait` pauses for the rest of a
        line the stop cut (not `sleep`, which a signal cuts short).
        """
        bounded = False
        waits = 0
        with PollCollector() as collector:
            while True:
                # Rounds after a signal drain what is already written; streams that all
                # ended leave nothing to wait for.
                stopping = stop() or self.watch.finished()
                if stopping and not bounded:
                    self.watch.bound()
                    bounded = True
                findings: list[Finding] = []
                if stop_now():
                    self.watch.abandon()
                    stopping, more = True, False
                else:
                    findings, more = self.poll()
                    collector.after_poll()
                for finding in findings:
                    self.reported[finding["kind"]] += 1
                    if not on_finding(finding):
                        return
                if (stopping and not more and waits < STOP_LINE_ROUNDS and not stop_now()
                        and self.watch.cut_lines()):
                    waits += 1  # the rest of a line being written when the stop came
                    line_wait(STOP_LINE_POLL_S)
                    continue
                if stopping and not more:
                    for finding in self.finish():
                        self.reported[finding["kind"]] += 1
                        if not on_finding(finding):
                            return
                    return
                if not more and not stop():
                    sleep(self.settings.interval)

    def summary(self) -> dict[str, Any]:
        """Counters so far, in the shape of the analyze report's summary where they agree."""
        stats, rules = self.stats, self.rules
        out: dict[str, Any] = {
            "files": self.watch.files_read(), "lines": stats.lines,
            "bad_lines": stats.bad_lines,
            "requests": rules.callers_seen, "spans": rules.spans_seen,
        }
        for kind in ERROR_KINDS:
            out[kind] = self.reported[kind]
        out["errors"] = sum(self.reported[k] for k in ERROR_KINDS)
        out["open_at_window_edge"] = rules.state.open_at_edge
        out["open_at_exit"] = rules.open_spans()
        out["ahead_of_present"] = self.ahead
        out["ahead_of_present_samples"] = self.ahead_samples
        out["window_s"] = self.settings.window_s
        out.update(read_notes(stats))
        out["missing_inputs"] = sorted(self.watch.missing)
        out.update(completeness(stats, requests=rules.spans_seen))
        # An input that never appeared was not read: a mistyped path waited for, then a
        # clean summary and exit 0, where the batch read refuses such a path (exit 2).
        reasons = [f"{raw}: never appeared while followed{link_state(raw)}, nothing read "
                   "from it" for raw in out["missing_inputs"] if raw not in self.watch.appeared]
        # As the batch read names them: requests in flight at once could not be seen.
        if (unseen := instants_reason(rules.instants, rules.fronts_seen)) is not None:
            reasons.append(unseen)
        if reasons:
            out["incomplete"] = True
            out["incomplete_reasons"] = [*out["incomplete_reasons"], *reasons]
        return out

    def close(self) -> None:
        """Release the window, files, the DuckDB connection and the staging directory."""
        self.rules.state.release()
        self.watch.close()
        self._con.close()
        self._tmp.cleanup()
