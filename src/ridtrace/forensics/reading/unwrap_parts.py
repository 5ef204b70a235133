"""What every unwrapper shares: whole lines in, as many lines out, records in parts.

See `ridtrace.forensics.reading.unwrap` for the formats and how one is recognised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ridtrace.forensics.reading.judge import (
    INVALID_UTF8,
    LIMIT_CUT_BYTES,
    LIMIT_CUT_RECORD,
    NESTED_TOO_DEEPLY,
    NOT_AN_OBJECT,
    TRUNCATED_JSON,
    text_reason,
)
from ridtrace.forensics.reading.line_prefixes import behind_prefixes, cri_part
from ridtrace.forensics.reading.lines import MAX_LINE_BYTES
from ridtrace.forensics.reading.packed_lines import (
    BAD_RECORD_KEY,
    NESTED_MARK,
    TEXT_DECODE,
    nested_too_deeply,
)


class Unwrapper(Protocol):
    """Turns whole wrapped lines into as many plain lines, across calls."""

    name: str

    def feed(self, data: bytes) -> bytes:
        """The plain lines of `data` (whole lines; the file's last may lack its newline)."""

    def unfinished(self) -> list[int]:
        """Lines (1-based) where a record starts whose last part never came."""


@dataclass
class RecordParts:
    """A record being put together from its parts, per stream.

    A record is kept to one byte past the longest line the read takes
    (`overlong.MAX_LINE_BYTES`): past that it is a bad line whatever follows, so a
    stream of parts that never ends (a runaway writer, a hostile file) holds 16 MiB,
    not all of it.
    """

    pending: dict[Any, tuple[int, list[bytes], int]] = field(default_factory=dict)
    # First lines of records whose last part never came, a whole record following them
    # on their stream (a container killed mid-record, restarted onto the same file).
    abandoned: list[int] = field(default_factory=list)

    def add(self, stream: Any, line: int, part: bytes, last: bool) -> bytes:
        """The whole record when `part` is its last, else an empty line for now."""
        if b"\n" in part:  # one line in, one line out: line numbers are the file's
            part = part.replace(b"\n", b" ")
        if isinstance(stream, (list, dict)):
            # A stream field that is JSON's array or object (`"stream": {}`) is a key all
            # the same: as a dict key it stopped the read with a TypeError, exit 4.
            stream = json.dumps(stream, sort_keys=True)
        first, parts, size = self.pending.pop(stream, (line, [], 0))
        room = MAX_LINE_BYTES + 1 - size
        if room > 0:
            parts.append(part[:room])
            size += min(len(part), room)
        if last:
            joined = b"".join(parts)
            if len(parts) > 1 and _restarts(part, joined):
                # Joined, the two were one bad line at the first part's line, cited as
                # the next record's, and the whole record after them was lost too.
                self.abandoned.append(first)
                return part
            return joined
        self.pending[stream] = (first, parts, size)
        return b""

    def unfinished(self) -> list[int]:
        return sorted([*self.abandoned, *(first for first, _, _ in self.pending.values())])


def _restarts(part: bytes, joined: bytes) -> bool:
    """Whether a last part is a whole record of its own after parts whose own last part
    never came: it opens a JSON object and parses alone, and joined they do not."""
    if part.lstrip()[:1] != b"{":
        return False
    return _parses(part) and not _parses(joined)


def _parses(text: bytes) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def cut_short(unwrap: Unwrapper) -> str:
    """The bad-line reason of a record whose last part never came."""
    return f"cut short ({unwrap.name} record whose last part is missing)"


# Why a file whose last record lacks its last part is read only in part. A runtime cuts
# a long line (an error with its payload) into parts, and a rotation can fall between
# them: the older part ends with the first, the live file starts with the rest. One
# bad line each, far under the 1 % a read may have, the record was lost without a word.
CUT_SHORT_FILE = (
    "a record whose last part is missing is not read (see its bad lines): a copy cut "
    "short, or a rotation between the parts a long line was cut into; read the parts "
    "joined oldest first, <(cat OLDER NEWER)"
)


UTF8_BOM = b"\xef\xbb\xbf"


class LineByLine:
    """Shared plumbing: split whole lines, keep the line count, count lines."""

    name = ""

    def __init__(self) -> None:
        self._line = 0
        self._parts = RecordParts()

    def feed(self, data: bytes) -> bytes:
        lines = data.split(b"\n")
        trailing = lines.pop()  # b"" after a final newline, else the unterminated last line
        out = [self._one(line) for line in lines]
        if trailing:
            out.append(self._one(trailing))
        text = b"\n".join(out)
        return text + b"\n" if data.endswith(b"\n") else text

    def _one(self, line: bytes) -> bytes:
        self._line += 1
        # A UTF-8 byte-order mark at a line's start is where `cat` joined a file a
        # Windows tool wrote (PowerShell's `Out-File -Encoding utf8`): no part of the
        # wrapper's line. Left on, the line was not in the wrapper's shape and its
        # record one bad line, under the 1 % a read may have.
        line = line.removeprefix(UTF8_BOM)
        out = self.unwrap(line, self._line)
        if out is line and nested_too_deeply(line):  # declined: its JSON is too deep
            return NESTED_MARK
        return out

    def unwrap(self, line: bytes, number: int) -> bytes:
        raise NotImplementedError

    def batched_part(self, text: str, container: Callable[[], object],
                     number: int) -> bytes | None:
        """A batch's record `text` that is part of a CRI line (shipped as the runtime
        wrote it), put together with the other parts of its `container` (what names it:
        a stream's labels): the whole record at its last part (`batched_record`), b""
        at the others; None when `text` is no part to join (no CRI line, or a whole one),
        for the caller to read as it is. Each part was a bad line, and a long Unlinked
        error went missing under the 1 % of bad lines a read may have."""
        cri = cri_part(text.rstrip("\r\n").encode("utf-8", "surrogatepass"))
        if cri is None or (cri[0] and not self._parts.pending):
            return None
        last, stream, part = cri
        whole = self._parts.add((container(), stream), number, part, last)
        return batched_record(whole.decode("utf-8", "surrogatepass")) if whole else b""

    def unfinished(self) -> list[int]:
        return self._parts.unfinished()


def json_object(line: bytes) -> dict[str, Any] | None:
    """The line's JSON object (`json_value`), or None when it holds no object."""
    value = json_value(line)
    return value if isinstance(value, dict) else None


def json_objects(line: bytes) -> list[dict[str, Any]] | None:
    """The JSON objects of a line that holds one, or several back to back (a shipper's
    batch unwrapped: the OpenTelemetry Collector's file export, Loki's answer, each
    line's records written on it, `reading.otlp`); None when it holds anything else."""
    one = json_object(line)
    if one is not None:
        return [one]
    try:
        text = line.decode(json.detect_encoding(line), "surrogatepass")
    except ValueError:
        return None
    objects: list[dict[str, Any]] = []
    at, end = 0, len(text.rstrip())
    while at < end:
        try:
            value, at = TEXT_DECODE.raw_decode(text, at)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        objects.append(value)
        while at < end and text[at] in " \t\r":
            at += 1
    return objects or None


def each_object(line: bytes, flat: Callable[[dict[str, Any]], bytes | None]) -> bytes:
    """`line` with each of its JSON objects as `flat` writes it (an object `flat` gives
    None for is kept as it was), still back to back on one line; `line` itself when it
    holds no objects."""
    objects = json_objects(line)
    if objects is None:
        return line
    try:
        if len(objects) == 1:
            done = flat(objects[0])
            return line if done is None else done
        return b"".join(flat(entry) or _compact(entry) for entry in objects)
    except RecursionError:
        # Parsed, but too deep to write again a few frames further down (a record
        # nested ~980 levels): a line nested too deeply, not an internal error, exit 4.
        return NESTED_MARK


def _compact(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode("utf-8", "surrogatepass")


def json_value(line: bytes) -> Any:
    """The line's JSON value as the reader takes it, or None when it is no JSON."""
    # RFC 7464's record separator before a JSON text (`journalctl -o json-seq`, `jq
    # --seq`) is framing, as DuckDB's reader takes it; Python's parser refuses it.
    line = line.removeprefix(b"\x1e")
    # A key given twice keeps its first value: a flattened line means what it meant.
    try:
        return TEXT_DECODE.decode(line.decode(json.detect_encoding(line), "surrogatepass"))
    except (ValueError, RecursionError):
        return None


def carried_line(text: str) -> bytes:
    """A service's line a wrapper carried as a JSON string, as the one line it was: its
    own newline dropped and any inside made spaces (one line in, one line out, so line
    numbers stay the file's), lone surrogates kept as they were escaped."""
    return text.rstrip("\r\n").replace("\n", " ").encode("utf-8", "surrogatepass")


_LINE_ENDS = re.compile(r"[\r\n]")


def batched_record(text: str) -> bytes:
    """One service line a batch carries (a collector's log record's body, a Loki
    answer's line), for its records read back to back on one line: the record as one
    line (several, when the body holds several back to back), taken from behind a
    runtime's prefix (a collector or promtail tailing a node's container files without
    their CRI parsing); and for a record that cannot be read, text included, an object
    naming why (`BAD_RECORD_KEY`). The batch's line is then a bad one and says so, its
    other records read all the same: a record cut short (a collector's
    ``max_log_size``) back to back with the others lost them all, the line "truncated
    JSON" as a whole."""
    stripped = _record_start(text)
    if not stripped:
        return b""  # a blank line, skipped as a plain file's is
    if not stripped.startswith("{"):
        line = stripped.encode("utf-8", "surrogatepass")
        behind = behind_prefixes(line)
        inner = None if behind is None else _record_start(
            behind.decode("utf-8", "surrogatepass"))
        if inner is None or not inner.startswith("{"):
            return _unreadable(text_reason(line))
        stripped = inner
    unreadable = _unreadable_records(stripped)
    if unreadable is not None:
        return _unreadable(unreadable)
    try:
        # Raw line ends in valid JSON are only space between its tokens; a CR left in
        # made the batch's line CR-separated text, and every record on it was lost.
        return _LINE_ENDS.sub(" ", stripped).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate itself, not its escape: bytes no UTF-8 reader takes, as on a
        # plain line. Written into the batch's line, they made all its records unread.
        return _unreadable(INVALID_UTF8)


def _record_start(text: str) -> str:
    """`text` without the spaces around it and a byte-order mark before it, as a plain
    line's record is read."""
    return text.strip().removeprefix("\ufeff").strip()


def _unreadable(reason: str) -> bytes:
    return json.dumps({BAD_RECORD_KEY: reason}, separators=(",", ":")).encode("ascii")


def _unreadable_records(text: str) -> str | None:
    """Why `text` (opening with ``{``) is not JSON objects back to back, as the judge of
    a plain line would say it (a cut record of 4 KiB or more is a line limit's work,
    which makes the read incomplete); None when it is. A record cut just after an inner
    object ends in ``}`` too."""
    at, end = 0, len(text)
    try:
        while at < end:
            value, at = TEXT_DECODE.raw_decode(text, at)
            if not isinstance(value, dict):
                return NOT_AN_OBJECT
            while at < end and text[at] in " \t\r\n":
                at += 1
    except RecursionError:
        return NESTED_TOO_DEEPLY
    except ValueError:
        return LIMIT_CUT_RECORD if len(text.encode("utf-8", "surrogatepass")) >= LIMIT_CUT_BYTES \
            else TRUNCATED_JSON
    return None

