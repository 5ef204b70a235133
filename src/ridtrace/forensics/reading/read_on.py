"""A walked text file looked at past its sniffed head before it is passed over.

A service's log may hold its JSON lines only after more than the 64 KiB a walk sniffs: a
copied `/var/log/syslog` whose first 70 KiB are other daemons' lines, `kubectl logs`
saved as `.txt` after a model loader's start-up text, a log whose top is a hole of NULs
(copytruncate under a writer that does not append). Passed over, the walk said a
complete, clean read of logs it never read (exit 0). Such a file is read on, up to
`LOOK_FURTHER_BYTES`, for a log record: a line that is a JSON object with a log line's
keys, bare or behind a prefix such as syslog's. With one it is read like any log, its
text lines counted bad; a printed dict or a stray `{"a": 1}` in binary data is none.
"""

from __future__ import annotations

from collections.abc import Callable

from ridtrace.forensics.reading.inputs import SNIFF_BYTES
from ridtrace.forensics.reading.judge import PREFIXED_RECORD
from ridtrace.forensics.reading.line_prefixes import PREFIX
from ridtrace.forensics.reading.lines import MAX_LINE_BYTES
from ridtrace.forensics.reading.log_names import (
    LOG_LINE_KEYS,
    NO_JSON_LINES,
    ignore_reason,
    json_object_line,
)
from ridtrace.forensics.reading.stats import FileNote
from ridtrace.forensics.reading.unwrap import Unwrapper, unwrapped_head, wrapper_of
from ridtrace.forensics.reading.unwrap_parts import json_object

__all__ = ["LOOK_FURTHER_BYTES", "read_on_to_records", "walked_file_verdict"]

# How far past the sniff a text file is looked at: a text log larger than this with no
# JSON line in it is still passed over (and named on stderr), not read as bad lines.
LOOK_FURTHER_BYTES = 64 << 20
_STEP = 1 << 20


def _log_record(text: bytes) -> bool:
    if not json_object_line(text):
        return False
    entry = json_object(text)
    return entry is not None and not LOG_LINE_KEYS.isdisjoint(entry)


def _record_line(line: bytes) -> bool:
    text = line.strip()
    if _log_record(text) or PREFIXED_RECORD.match(text):
        return True
    prefix = PREFIX.match(text)
    return prefix is not None and _log_record(text[prefix.end():])


def _first_record(text: bytes) -> int:
    """Where the first line of `text` (whole lines) holding a record starts, or -1."""
    if b"{" not in text:  # the usual text chunk costs one search
        return -1
    start = 0
    for line in text.split(b"\n"):
        if _record_line(line):
            return start
        start += len(line) + 1
    return -1


def read_on_to_records(read: Callable[[int], bytes]) -> tuple[bytes, Unwrapper | None] | None:
    """What `read` gives on from a walked file's head up to (a little past) its first line
    holding a record, and the unwrapper the lines from that one on ask for (`wrapper_of`:
    a syslog prefix the head's text lines did not show); None when the next
    `LOOK_FURTHER_BYTES` hold no such line."""
    parts: list[bytes] = []
    size = 0
    pending = bytearray()  # the line under way, while it may still be a record
    skipping = False  # it is longer than any line the read takes: no record
    in_hole = True  # nothing but NULs read yet
    while size < LOOK_FURTHER_BYTES:
        chunk = read(min(_STEP, LOOK_FURTHER_BYTES - size))
        parts.append(chunk)
        size += len(chunk)
        if in_hole:
            # The hole copytruncate leaves under a writer that does not append is as long
            # as all it wrote before: it is no text looked at, and a log behind 100 MiB
            # of it was passed over ("no JSON lines"), the walk then clean, exit 0.
            rest = chunk.lstrip(b"\0")
            size -= len(chunk) - len(rest)
            in_hole = not rest and bool(chunk)
        cut = chunk.rfind(b"\n") + 1
        if chunk and not cut:  # no line ends in it (a hole of NULs, a long line)
            if not skipping:
                pending += chunk
                skipping = len(pending) > MAX_LINE_BYTES
                if skipping:
                    pending.clear()
            continue
        whole = chunk[:cut] if chunk else bytes(pending)
        if skipping and chunk:
            whole = whole[whole.find(b"\n") + 1:]
        elif chunk:
            whole = bytes(pending) + whole
        pending[:] = chunk[cut:]
        skipping = False
        at = _first_record(whole)
        if at >= 0:
            return b"".join(parts), wrapper_of(whole[at:at + SNIFF_BYTES])
        if not chunk:
            return None
    return None


def walked_file_verdict(
    name: str, head: bytes, unwrap: Unwrapper | None, read: Callable[[int], bytes],
) -> tuple[FileNote | None, bytes, Unwrapper | None]:
    """Why a file a walk found is passed over (a note of `ignore_reason`, `unsure` when
    it was not looked at to its end; None: it is read), with the head and the unwrapper
    to read it by: a text file's head grown by what was read on to its first record, and
    the unwrapper the lines from there ask for. `head` is the file's sniffed start,
    `read` what reads on from it (both engines alike)."""
    seen = head if unwrap is None else unwrapped_head(head)
    reason = ignore_reason(name, seen, whole=len(head) < SNIFF_BYTES, wrapped=unwrap is not None)
    if reason is None:
        return None, head, unwrap
    ended = len(head) < SNIFF_BYTES

    def reading(size: int) -> bytes:
        nonlocal ended
        chunk = read(size)
        ended = ended or not chunk
        return chunk

    if reason == NO_JSON_LINES and (found := read_on_to_records(reading)):
        more, later_unwrap = found
        return None, head + more, unwrap or later_unwrap
    return FileNote(name, reason, unsure=reason == NO_JSON_LINES and not ended), head, unwrap
