"""What a read counted: lines, bad lines (with file:line samples) and files it could not use.

Nothing the reader drops goes unrecorded: a bad line is counted and, while there is
room, kept as a sample; a file is either read, ignored as plainly not a log (with the
reason), or recorded as unreadable in whole or in part. `incomplete_reasons` turns
those records into the verdict `ridtrace analyze` and `ridtrace audit` exit 3 on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_SAMPLES = 10
# Above this share of bad lines a report may miss incidents: docs/cli.md, exit code 3.
BAD_LINE_SHARE = 0.01


@dataclass(frozen=True)
class BadLine:
    """One rejected line: where it is and why."""

    file: str
    line: int
    reason: str


@dataclass(frozen=True)
class FileNote:
    """A file that was ignored or could not be read (whole or in part), and why.

    `unsure`: ignored as no log from a part of it (its text past what was looked at may
    hold log lines): a read that read no line beside such a file is incomplete.
    """

    file: str
    reason: str
    unsure: bool = field(default=False, compare=False)


def truncated_while_read(size: int, now: int | None = None) -> str:
    """Why a file that shrank while it was read is incomplete: lines there when the read
    began are not in the report, and line numbers may have moved. `now` is left out
    where several readers of one file (Dask blocks) must note it in the same words."""
    sizes = f"from {size} to {now} bytes" if now is not None else f"from {size} bytes"
    return (f"truncated while being read ({sizes}; a copy-and-truncate rotation?): "
            "read it again")


@dataclass
class ReadStats:
    """Counters of one read; bad lines are counted, a few kept as samples."""

    lines: int = 0
    bad_lines: int = 0
    files: int = 0
    samples: list[BadLine] = field(default_factory=list)
    ignored_files: list[FileNote] = field(default_factory=list)
    unreadable_files: list[FileNote] = field(default_factory=list)
    # Per file, so a file where no line is a log record is noticed even when the other
    # files keep the share of bad lines under 1 %.
    lines_by_file: dict[str, int] = field(default_factory=dict)
    bad_by_file: dict[str, int] = field(default_factory=dict)

    def count_lines(self, file: str, lines: int) -> None:
        """Count `lines` read (non-blank) from `file`."""
        self.lines += lines
        self.lines_by_file[file] = self.lines_by_file.get(file, 0) + lines

    def count_records(self, file: str, records: int, *, bad: int) -> None:
        """Count a line that held `records` records, `bad` of them bad, beyond the one line
        (and the one bad line) already counted: the 1 % is a share of records, so one
        banner among a collector's batch of hundreds is not one bad line in a few batches."""
        self.count_lines(file, records - 1)
        more_bad = max(bad - 1, 0)
        self.bad_lines += more_bad
        self.bad_by_file[file] = self.bad_by_file.get(file, 0) + more_bad

    def bad_unsampled(self, file: str, count: int) -> None:
        """Count `count` bad lines of `file` that were not judged one by one."""
        self.bad_lines += count
        self.bad_by_file[file] = self.bad_by_file.get(file, 0) + count

    def bad(self, file: str, line: int, reason: str) -> None:
        """Count a bad line and keep it as a sample while there is room."""
        self.bad_lines += 1
        self.bad_by_file[file] = self.bad_by_file.get(file, 0) + 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(BadLine(file, line, reason))

    def rename_samples(self, old: str, new: str) -> None:
        """Bad lines sampled from `old` are in `new` now: a rotation renamed the file, or
        copied it before a truncation (`--follow`, whose per-file counts go by content,
        not name). Under the old name they named other, valid lines."""
        self.samples = [BadLine(new, s.line, s.reason) if s.file == old else s
                        for s in self.samples]

    def merge_counts(self, other: ReadStats) -> None:
        """Add `other`'s counters and file notes (not its samples)."""
        self.lines += other.lines
        self.bad_lines += other.bad_lines
        self.files += other.files
        self.ignored_files.extend(other.ignored_files)
        # Once per file and reason: each Dask block of a file may note the same thing.
        self.unreadable_files.extend(
            n for n in other.unreadable_files if n not in self.unreadable_files
        )
        for mine, theirs in ((self.lines_by_file, other.lines_by_file),
                             (self.bad_by_file, other.bad_by_file)):
            for file, count in theirs.items():
                mine[file] = mine.get(file, 0) + count

    def merge(self, other: ReadStats) -> None:
        """Add `other`'s counters (samples in order, while there is room)."""
        self.merge_counts(other)
        room = MAX_SAMPLES - len(self.samples)
        self.samples.extend(other.samples[: max(room, 0)])


def incomplete_reasons(stats: ReadStats, *, requests: int) -> list[str]:
    """Why a report over this read may miss incidents; empty when the read was whole."""
    reasons = [f"{note.file}: {note.reason}" for note in stats.unreadable_files]
    reasons += [
        f"{file}: none of its {lines} lines is a log record"
        for file, lines in stats.lines_by_file.items()
        if lines and stats.bad_by_file.get(file, 0) >= lines
    ]
    if stats.lines and stats.bad_lines > BAD_LINE_SHARE * stats.lines:
        share = 100.0 * stats.bad_lines / stats.lines
        reasons.append(f"{stats.bad_lines} bad lines ({share:.1f}% of {stats.lines}, over 1%)")
    if stats.lines and not requests:
        reasons.append(f"{stats.lines} lines read but no request found in them")
    if not stats.lines and stats.ignored_files and (
            not stats.files or any(note.unsure for note in stats.ignored_files)):
        # A walk that read nothing: "No findings" of a log it took for no log (a capture
        # with a long text start-up banner before its JSON lines) was a clean bill, and
        # still is beside an empty log (logrotate's `create` just made it). Not when a
        # file was read, empty or followed through a quiet spell, and each file ignored
        # was judged whole (a README, the follower's own output): that was "input
        # incomplete" of a read that missed nothing.
        reasons.append(f"no log line was read: the {len(stats.ignored_files)} file(s) found "
                       "were ignored as no logs (see ignored_files; name one to read it)")
    return reasons


def read_notes(stats: ReadStats) -> dict[str, list[dict[str, Any]]]:
    """The bad-line samples and the ignored and unreadable files, as a summary lists them."""
    return {
        "bad_line_samples": [
            {"file": s.file, "line": s.line, "reason": s.reason} for s in stats.samples
        ],
        "ignored_files": [{"file": n.file, "reason": n.reason} for n in stats.ignored_files],
        "unreadable_files": [
            {"file": n.file, "reason": n.reason} for n in stats.unreadable_files
        ],
    }


def completeness(stats: ReadStats, *, requests: int) -> dict[str, Any]:
    """``incomplete`` and ``incomplete_reasons``, as a summary lists them."""
    reasons = incomplete_reasons(stats, requests=requests)
    return {"incomplete": bool(reasons), "incomplete_reasons": reasons}
