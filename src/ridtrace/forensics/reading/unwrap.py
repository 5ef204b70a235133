"""Logs shipped inside another format's lines: Kubernetes (CRI), Docker's json-file, journald,
``kubectl logs --timestamps/--prefix``; and Rust tracing-subscriber's nested JSON.

A service's JSON lines rarely reach an incident as written. On a Kubernetes node each
line is prefixed by the container runtime (``2026-10-02T14:00:00.003195123Z stderr F
{...}``, a line longer than the runtime's buffer cut into ``P`` parts and a last ``F``);
Docker's json-file driver wraps each one as ``{"log": "{...}\\n", "stream": ..., "time":
...}`` (cut every 16 KiB, the last part ending in ``\\n``); ``journalctl -o json``
carries it in ``MESSAGE``; ``kubectl logs --timestamps`` puts the time before it.
Read as they are, every line was a bad one and the report
said only "none of its lines is a log record". A Rust service logging with
tracing-subscriber's own JSON formatter nests what Dynamo's JSONL writes flat (``fields``,
``span``, ``spans``): its lines were read without their ids, its requests silently lost.

The wrapper is known from the file's first lines (`wrapper_of`), so a plain JSON-lines
file pays one look at bytes already read (about 0.1 ms a file). An unwrapper turns
whole lines into the same number of lines: each record where its last part is, and an
empty line for each earlier part (empty lines are not rows), so evidence still cites
the file's own line numbers. A line that is not in the wrapper's shape passes through
as it is, to be judged like any other line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from ridtrace.forensics.reading.judge import first_of_each_key
from ridtrace.forensics.reading.overlong import MAX_LINE_BYTES

# RFC 3339 as Go's RFC3339Nano writes it (kubelet, containerd, Docker, kubectl).
_TIME = rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"
# Kubelet's CRI log line: RFC 3339 nano time, stream, tag (P partial / F full), content.
# An empty line may end at its tag, without the space before the content.
_CRI_LINE = re.compile(
    _TIME + rb" (stdout|stderr) ([PF])"
    rb"(?::[^ \r]*)?(?: |\r?$)"
)
_STREAMS = ("stdout", "stderr")
# kubectl's --prefix, its --timestamps, or both; one of them at least.
_PREFIX = re.compile(rb"\[[^\]\s]+\] (?:" + _TIME + rb" )?|" + _TIME + rb" ")


class Unwrapper(Protocol):
    """Turns whole wrapped lines into as many plain lines, across calls."""

    name: str

    def feed(self, data: bytes) -> bytes:
        """The plain lines of `data` (whole lines; the file's last may lack its newline)."""

    def unfinished(self) -> list[int]:
        """Lines (1-based) where a record starts whose last part never came."""


@dataclass
class _Parts:
    """A record being put together from its parts, per stream.

    A record is kept to one byte past the longest line the read takes
    (`overlong.MAX_LINE_BYTES`): past that it is a bad line whatever follows, so a
    stream of parts that never ends (a runaway writer, a hostile file) holds 16 MiB,
    not all of it.
    """

    pending: dict[Any, tuple[int, list[bytes], int]] = field(default_factory=dict)

    def add(self, stream: Any, line: int, part: bytes, last: bool) -> bytes:
        """The whole record when `part` is its last, else an empty line for now."""
        if b"\n" in part:  # one line in, one line out: line numbers are the file's
            part = part.replace(b"\n", b" ")
        first, parts, size = self.pending.pop(stream, (line, [], 0))
        room = MAX_LINE_BYTES + 1 - size
        if room > 0:
            parts.append(part[:room])
            size += min(len(part), room)
        if last:
            return b"".join(parts)
        self.pending[stream] = (first, parts, size)
        return b""

    def unfinished(self) -> list[int]:
        return sorted(first for first, _, _ in self.pending.values())


def cut_short(unwrap: Unwrapper) -> str:
    """The bad-line reason of a record whose last part never came."""
    return f"cut short ({unwrap.name} record whose last part is missing)"


class _LineByLine:
    """Shared plumbing: split whole lines, keep the line count, count lines."""

    name = ""

    def __init__(self) -> None:
        self._line = 0
        self._parts = _Parts()

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
        return self.unwrap(line, self._line)

    def unwrap(self, line: bytes, number: int) -> bytes:
        raise NotImplementedError

    def unfinished(self) -> list[int]:
        return self._parts.unfinished()


class CriUnwrapper(_LineByLine):
    """Kubernetes' container runtime (CRI) log lines: ``TIME STREAM P|F CONTENT``."""

    name = "Kubernetes CRI"

    def unwrap(self, line: bytes, number: int) -> bytes:
        head = _CRI_LINE.match(line)
        if head is None:
            return line
        content = line[head.end():].removesuffix(b"\r")
        return self._parts.add(head[1], number, content, head[2] == b"F")


class DockerUnwrapper(_LineByLine):
    """Docker's json-file driver: ``{"log": "LINE\\n", "stream": ..., "time": ...}``."""

    name = "Docker json-file"

    def unwrap(self, line: bytes, number: int) -> bytes:
        entry = _object(line)
        if entry is None or not isinstance(entry.get("log"), str):
            return line
        text: str = entry["log"]
        part = text.encode("utf-8", "surrogatepass")
        last = part.endswith(b"\n")
        if last:
            part = part[:-1].removesuffix(b"\r")
        return self._parts.add(entry.get("stream"), number, part, last)


class PrefixUnwrapper(_LineByLine):
    """``kubectl logs --timestamps`` / ``docker logs --timestamps`` (the time and a
    space before each line) and ``kubectl logs --prefix`` (``[pod/NAME/CONTAINER] ``)."""

    name = "kubectl logs"

    def unwrap(self, line: bytes, number: int) -> bytes:
        head = _PREFIX.match(line)
        return line if head is None else line[head.end():]


class JournalUnwrapper(_LineByLine):
    """``journalctl -o json``: the line is ``MESSAGE`` (an array of bytes when it is not
    printable text); one longer than journald's LineMax is cut, each cut part but the
    last marked ``_LINE_BREAK=line-max``."""

    name = "journald JSON"

    def unwrap(self, line: bytes, number: int) -> bytes:
        entry = _object(line)
        if entry is None or "MESSAGE" not in entry:
            return line
        message = entry["MESSAGE"]
        if isinstance(message, list) and all(isinstance(b, int) for b in message):
            part = bytes(b & 0xFF for b in message)
        elif isinstance(message, str):
            part = message.encode("utf-8", "surrogatepass")
        else:
            return line
        stream = entry.get("_STREAM_ID") or entry.get("_PID")
        last = entry.get("_LINE_BREAK") != "line-max"
        return self._parts.add(stream, number, part, last)


class TracingJsonUnwrapper(_LineByLine):
    """Rust tracing-subscriber's JSON formatter: the event's fields under ``fields``
    (unless ``flatten_event``), the current span's under ``span``, every open span's in
    ``spans`` (outermost first), the time in ``timestamp``. Flattened to one object as
    Dynamo's JSONL writes it: the line's own keys first, then the event's fields, then
    the spans' from the innermost out (a span's ``name`` is ``span_name``)."""

    name = "tracing-subscriber JSON"

    def unwrap(self, line: bytes, number: int) -> bytes:
        entry = _object(line)
        if entry is None:
            return line
        # A line outside any span, with flatten_event, has no nesting: its time is still
        # in "timestamp".
        flat = {k: v for k, v in entry.items() if k not in _NESTING}
        if "time" not in flat and "timestamp" in flat:
            flat["time"] = flat["timestamp"]
        fields = entry.get("fields")
        if isinstance(fields, dict):
            for key, value in fields.items():
                flat.setdefault(key, value)
        spans = entry.get("spans")
        nested = [entry.get("span"), *(reversed(spans) if isinstance(spans, list) else ())]
        for span in nested:
            if isinstance(span, dict):
                for key, value in span.items():
                    flat.setdefault("span_name" if key == "name" else key, value)
        return json.dumps(flat, separators=(",", ":")).encode()


_NESTING = ("fields", "span", "spans")


def _nested(entry: dict[str, Any]) -> bool:
    return (isinstance(entry.get("fields"), dict) or isinstance(entry.get("span"), dict)
            or isinstance(entry.get("spans"), list))


def _object(line: bytes) -> dict[str, Any] | None:
    try:
        # A float kept as its text: 1e400 written back as Infinity is no JSON, and the
        # reader takes every field as text anyway.
        # A key given twice keeps its first value: a flattened line means what it meant.
        value = json.loads(line, object_pairs_hook=first_of_each_key, parse_float=str,
                           parse_constant=str)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _first_lines(head: bytes) -> list[bytes]:
    """The first non-blank lines of `head`, stripped (at most 64)."""
    return [line.strip() for line in head.split(b"\n", 64)[:64] if line.strip()]


class _Chain:
    """A shipper's wrapping around tracing-subscriber's nesting: both taken off."""

    def __init__(self, outer: Unwrapper, inner: Unwrapper) -> None:
        self._outer, self._inner = outer, inner
        self.name = outer.name

    def feed(self, data: bytes) -> bytes:
        return self._inner.feed(self._outer.feed(data))

    def unfinished(self) -> list[int]:
        return self._outer.unfinished()


# tracing-subscriber's nesting, wherever it is among the first lines: a service's first
# lines (start-up messages) are often outside any span.
_NESTING_KEY = re.compile(rb'"(?:fields|span)"\s*:\s*\{|"spans"\s*:\s*\[')


def _nesting_in(head: bytes) -> Unwrapper | None:
    found = _NESTING_KEY.search(head)
    if found is None:
        return None
    start = head.rfind(b"\n", 0, found.start()) + 1
    end = head.find(b"\n", found.end())
    entry = _object(head[start : end if end >= 0 else len(head)])
    return TracingJsonUnwrapper() if entry is not None and _nested(entry) else None


def _shipper_of(lines: list[bytes]) -> Unwrapper | None:
    line = lines[0] if lines else b""
    if _CRI_LINE.match(line):
        return CriUnwrapper()
    if _PREFIX.match(line):
        # A JSON line after the prefix, soon: a service's first lines may be a text
        # banner, prefixed too; a text log's own time and level are not JSON.
        for later in lines:
            prefix = _PREFIX.match(later)
            if prefix is None:
                return None
            if later[prefix.end():][:1] == b"{":
                return PrefixUnwrapper()
        return None
    # Docker writes "log" first; journalctl's first key is "__CURSOR" (or, in an export
    # whose cursors were dropped, "__REALTIME_TIMESTAMP").
    if line.startswith(b'{"log":'):
        entry = _object(line)
        if entry is not None and isinstance(entry.get("log"), str) and (
            entry.get("stream") in _STREAMS
        ):
            return DockerUnwrapper()
    elif line.startswith((b'{"__CURSOR":', b'{"__REALTIME_TIMESTAMP":')):
        entry = _object(line)
        if entry is not None and "MESSAGE" in entry:
            return JournalUnwrapper()
    return None


def wrapper_of(head: bytes) -> Unwrapper | None:
    """An unwrapper for what the first lines of `head` are wrapped or nested in, or None
    for plain JSON lines (the common case, decided by a look at the first line and one
    regular-expression search of the head)."""
    shipper = _shipper_of(_first_lines(head))
    if shipper is None:
        return _nesting_in(head)
    whole = head[: head.rfind(b"\n") + 1] or head
    inner = _nesting_in(type(shipper)().feed(whole))
    return shipper if inner is None else _Chain(shipper, inner)


def unwrapped_head(head: bytes) -> bytes:
    """The whole lines of `head` as they read unwrapped (`head` itself when it is not
    wrapped): a directory walk judges a container's log by what the service wrote, so a
    wrapped sidecar's text is ignored as plain text is, and wrapped JSON lines are read
    whatever the file's name."""
    probe = wrapper_of(head)
    if probe is None:
        return head
    return probe.feed(head[: head.rfind(b"\n") + 1] or head)
