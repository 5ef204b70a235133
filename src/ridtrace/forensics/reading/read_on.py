"""A walked text file looked at past its sniffed head before it is passed over.

A service's log may hold its JSON lines only after more than the 64 KiB a walk sniffs: a
copied `/var/log/syslog` whose first 70 KiB are other daemons' lines, `kubectl logs`
saved as `.txt` after a model loader's start-up text. Passed over as text, the walk said
a complete, clean read of logs it never read (exit 0). A file the sniff calls text is
read on, up to `LOOK_FURTHER_BYTES`, for a line holding a JSON object (bare, or behind a
prefix such as syslog's); with one it is read like any log, its text lines counted bad.
"""

from __future__ import annotations

from collections.abc import Callable

from ridtrace.forensics.reading.inputs import SNIFF_BYTES
from ridtrace.forensics.reading.judge import PREFIXED_RECORD
from ridtrace.forensics.reading.log_names import json_object_line
from ridtrace.forensics.reading.unwrap import PREFIX, Unwrapper, wrapper_of

__all__ = ["LOOK_FURTHER_BYTES", "read_on_to_records"]

# How far past the sniff a text file is looked at: a text log larger than this with no
# JSON line in it is still passed over (and named on stderr), not read as bad lines.
LOOK_FURTHER_BYTES = 64 << 20
_STEP = 1 << 20


def _record_line(line: bytes) -> bool:
    text = line.strip()
    if json_object_line(text) or PREFIXED_RECORD.match(text):
        return True
    prefix = PREFIX.match(text)
    return prefix is not None and json_object_line(text[prefix.end():])


def read_on_to_records(read: Callable[[int], bytes]) -> tuple[bytes, Unwrapper | None] | None:
    """What `read` gives on from a text file's head up to (a little past) its first line
    holding a record, and the unwrapper the lines from that one on ask for (`wrapper_of`:
    a syslog prefix the head's text lines did not show); None when the next
    `LOOK_FURTHER_BYTES` hold no such line."""
    parts: list[bytes] = []
    size = 0
    rest = b""  # the last, unfinished line of what was read
    while size < LOOK_FURTHER_BYTES:
        chunk = read(min(_STEP, LOOK_FURTHER_BYTES - size))
        parts.append(chunk)
        size += len(chunk)
        text = rest + chunk
        if chunk:
            cut = text.rfind(b"\n") + 1
            text, rest = text[:cut], text[cut:]
        if b"{" in text:  # the usual text chunk costs one search
            start = 0
            for line in text.split(b"\n"):
                if _record_line(line):
                    window = text[start:start + SNIFF_BYTES]
                    return b"".join(parts), wrapper_of(window)
                start += len(line) + 1
        if not chunk:
            return None
    return None
