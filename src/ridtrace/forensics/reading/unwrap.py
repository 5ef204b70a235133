"""Logs shipped inside another format's lines: Kubernetes (CRI), Docker's json-file, journald,
``kubectl logs --timestamps/--prefix``, a shipper's JSON object per line (Vector, Fluent
Bit, Loki's logcli), Fluent Bit's and Fluentd's file output; and Rust tracing-subscriber's
nested JSON.

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

import copy
import json
import re

from ridtrace.forensics.reading.cloudwatch import CloudWatchEventsUnwrapper, is_cloudwatch_events
from ridtrace.forensics.reading.csv_export import csv_export_of
from ridtrace.forensics.reading.documents import document_entries_of
from ridtrace.forensics.reading.grafana import grafana_text_of
from ridtrace.forensics.reading.judge import JOURNAL_DROPPED_MARK, JOURNAL_LEFT_OUT_MARK
from ridtrace.forensics.reading.line_prefixes import CRI_LINE, PREFIX
from ridtrace.forensics.reading.loguru_json import loguru_json_in
from ridtrace.forensics.reading.loki import LOKI_HEAD, LokiAnswerUnwrapper
from ridtrace.forensics.reading.nesting import nesting_in
from ridtrace.forensics.reading.otlp import OTLP_HEAD, OtlpUnwrapper
from ridtrace.forensics.reading.search_answer import SEARCH_ANSWER_HEAD, SearchAnswerUnwrapper
from ridtrace.forensics.reading.shippers import (
    ShipperFileUnwrapper,
    envelope_of,
    shipper_file_frames,
)
from ridtrace.forensics.reading.unwrap_parts import (
    LineByLine,
    Unwrapper,
    cut_short,
    json_object,
)

__all__ = ["Unwrapper", "cut_short", "unwrapped_head", "wrapper_of"]

STREAMS = ("stdout", "stderr")
# journalctl -o json's first key: "__CURSOR", or "__REALTIME_TIMESTAMP" in an export whose
# cursors were dropped. Older systemd releases (RHEL 8's 239, Ubuntu 20.04's 245) write
# the object by hand with spaces, '{ "__CURSOR" : "s=…", … }'; newer ones compactly;
# `-o json-seq` (systemd 252) puts RFC 7464's record separator, 0x1E, before it.
_JOURNAL_HEAD = re.compile(rb'\x1e?\{\s*"__(?:CURSOR|REALTIME_TIMESTAMP)"\s*:')
# journalctl's own lines between the entries ("-- Logs begin at …, end at … --",
# "-- Reboot --", "-- Boot 5d1c… --"): no log line, read as an empty one.
JOURNAL_MARK = re.compile(rb"-- .* --\r?")


class CriUnwrapper(LineByLine):
    """Kubernetes' container runtime (CRI) log lines: ``TIME STREAM P|F CONTENT``."""

    name = "Kubernetes CRI"

    def unwrap(self, line: bytes, number: int) -> bytes:
        head = CRI_LINE.match(line)
        if head is None:
            return line
        content = line[head.end():].removesuffix(b"\r")
        return self._parts.add(head[1], number, content, head[2] == b"F")


class DockerUnwrapper(LineByLine):
    """Docker's json-file driver: ``{"log": "LINE\\n", "stream": ..., "time": ...}``."""

    name = "Docker json-file"

    def unwrap(self, line: bytes, number: int) -> bytes:
        entry = json_object(line)
        if entry is None or not isinstance(entry.get("log"), str):
            return line
        text: str = entry["log"]
        part = text.encode("utf-8", "surrogatepass")
        last = part.endswith(b"\n")
        if last:
            part = part[:-1].removesuffix(b"\r")
        return self._parts.add(entry.get("stream"), number, part, last)


class PrefixUnwrapper(LineByLine):
    """``kubectl logs --timestamps`` / ``docker logs --timestamps`` (the time and a
    space before each line), ``kubectl logs --prefix`` (``[pod/NAME/CONTAINER] ``),
    Loki's ``logcli query`` (the time and the stream's labels), ``stern`` (the pod and
    container names), syslog's (``journalctl``, /var/log/syslog) and the others `PREFIX`
    knows; journalctl's own marks between entries are empty lines."""

    name = "kubectl logs"

    def unwrap(self, line: bytes, number: int) -> bytes:
        head = PREFIX.match(line)
        if head is None:
            return b"" if JOURNAL_MARK.fullmatch(line) else line
        return line[head.end():]


# journald's own entry for the lines it dropped under a service's rate limit
# (SD_MESSAGE_JOURNAL_DROPPED in systemd's sd-messages.h).
JOURNAL_DROPPED_ID = "a596d6fe7bfa4994828e72309e95d61e"


class JournalUnwrapper(LineByLine):
    """``journalctl -o json``: the line is ``MESSAGE`` (an array of bytes when it is not
    printable text); one longer than journald's LineMax is cut, each cut part but the
    last marked ``_LINE_BREAK=line-max`` (``CONTAINER_PARTIAL_MESSAGE=true`` from
    Docker's journald log driver)."""

    name = "journald JSON"

    def unwrap(self, line: bytes, number: int) -> bytes:
        entry = json_object(line)
        if entry is None or "MESSAGE" not in entry:
            return line
        message = entry["MESSAGE"]
        if entry.get("MESSAGE_ID") == JOURNAL_DROPPED_ID and isinstance(message, str):
            return JOURNAL_DROPPED_MARK + message.encode("utf-8", "replace")
        if isinstance(message, list) and all(isinstance(b, int) for b in message):
            part = bytes(b & 0xFF for b in message)
        elif isinstance(message, str):
            part = message.encode("utf-8", "surrogatepass")
        elif message is None:  # too long for journalctl without --all: the line is lost
            return JOURNAL_LEFT_OUT_MARK
        else:
            return line
        # Docker's journald log driver cuts a line every 16 KiB as its json-file driver
        # does, marking each part but the last CONTAINER_PARTIAL_MESSAGE=true; its entries
        # all carry dockerd's _PID, so the container tells the streams apart, and within
        # it the priority (stdout 6, stderr 3): a long line on each, cut at once, would
        # otherwise be put together as one.
        container = entry.get("CONTAINER_ID")
        stream: object = entry.get("_STREAM_ID") or (
            [container, entry.get("PRIORITY")] if container else entry.get("_PID"))
        if isinstance(stream, (list, dict)):
            # A field held twice, or as binary, is a JSON array: a key all the same.
            stream = json.dumps(stream, sort_keys=True)
        last = (entry.get("_LINE_BREAK") != "line-max"
                and entry.get("CONTAINER_PARTIAL_MESSAGE") != "true")
        return self._parts.add(stream, number, part, last)


def _first_lines(head: bytes) -> list[bytes]:
    """The non-blank lines of `head` (a file's first 64 KiB), stripped: a shipper's file
    may open with hundreds of its other entries (a model server's start-up text) before
    the first record that says how it is wrapped; the first 64 lines alone left every
    record of such a file unread ("missing time")."""
    return [line.strip() for line in head.split(b"\n") if line.strip()]


class _Chain:
    """A shipper's wrapping around tracing-subscriber's nesting: both taken off."""

    def __init__(self, outer: Unwrapper, inner: Unwrapper) -> None:
        self._outer, self._inner = outer, inner
        self.name = outer.name

    def feed(self, data: bytes) -> bytes:
        return self._inner.feed(self._outer.feed(data))

    def unfinished(self) -> list[int]:
        return self._outer.unfinished()


# Docker's json-file driver cuts a line every 16 KiB: each part but the last fills it.
_DOCKER_PART_BYTES = 16 * 1024


def _docker_entries(first: dict[str, object], lines: list[bytes]) -> bool:
    """Whether the first lines are Docker's json-file driver's entries, `first` the first
    of them parsed: a ``log`` ending in its line's newline among them, or a first part of
    a line the driver cut (16 KiB). A shipper's entries of the same first keys whose
    ``log`` has no newline (a parser took it off) are no such parts: read as Docker's,
    each line was held for a last part that never came, the whole file one bad line."""
    log = first.get("log")
    if not (isinstance(log, str) and first.get("stream") in STREAMS):
        return False
    if len(log.encode("utf-8", "surrogatepass")) >= _DOCKER_PART_BYTES:
        return True
    return any(_DOCKER_LINE_END.search(line) for line in lines)


# The end of a Docker entry whose line ends there: its newline, escaped, ends ``log``.
_DOCKER_LINE_END = re.compile(rb'^\{"log":\s*"(?:[^"\\]|\\.)*\\n"')


def _shipper_of(lines: list[bytes]) -> Unwrapper | None:
    line = lines[0] if lines else b""
    if CRI_LINE.match(line):
        return CriUnwrapper()
    # journalctl's first line may be its own ("-- Logs begin at … --").
    prefixed = [x for x in lines if not JOURNAL_MARK.fullmatch(x)]
    if prefixed and PREFIX.match(prefixed[0]):
        # A JSON line after the prefix, soon: a service's first lines may be a text
        # banner, prefixed too; a text log's own time and level are not JSON.
        for later in prefixed:
            prefix = PREFIX.match(later)
            if prefix is None:
                return None
            if later[prefix.end():][:1] == b"{":
                return PrefixUnwrapper()
        return None
    # Docker writes "log" first; journalctl "__CURSOR" (`_JOURNAL_HEAD`).
    if line.startswith(b'{"log":'):
        entry = json_object(line)
        if entry is not None and _docker_entries(entry, lines):
            return DockerUnwrapper()
    elif _JOURNAL_HEAD.match(line):
        entry = json_object(line)
        if entry is not None and "MESSAGE" in entry:
            return JournalUnwrapper()
    elif OTLP_HEAD.match(line):
        return OtlpUnwrapper()
    elif LOKI_HEAD.match(line):
        return LokiAnswerUnwrapper()
    elif SEARCH_ANSWER_HEAD.match(line):
        return SearchAnswerUnwrapper()
    elif is_cloudwatch_events(lines):
        return CloudWatchEventsUnwrapper()
    for name, frame in shipper_file_frames():
        framed = frame.match(line)
        if framed is not None and json_object(framed["record"]) is not None:
            return ShipperFileUnwrapper(name, frame)
    return envelope_of(lines) or grafana_text_of(lines)


def wrapper_of(head: bytes) -> Unwrapper | None:
    """An unwrapper for what the first lines of `head` are wrapped or nested in, or None
    for plain JSON lines (the common case, decided by a look at the first line and one
    regular-expression search of the head). NULs at its top are a hole copytruncate
    left, no part of the first line (`stage` drops them before the unwrapper)."""
    head = head.lstrip(b"\x00")
    shipper = (_shipper_of(_first_lines(head)) or document_entries_of(head)
               or csv_export_of(head))
    if shipper is None:
        return _nested_in(head)
    whole = head[: head.rfind(b"\n") + 1] or head
    inner = _nested_in(copy.deepcopy(shipper).feed(whole))
    return shipper if inner is None else _Chain(shipper, inner)


def _nested_in(head: bytes) -> Unwrapper | None:
    """The unwrapper for records a logger nests (tracing-subscriber's JSON, loguru's
    ``serialize=True``), or None for flat ones."""
    return nesting_in(head) or loguru_json_in(head)


def unwrapped_head(head: bytes) -> bytes:
    """The whole lines of `head` as they read unwrapped (`head` itself when it is not
    wrapped): a directory walk judges a container's log by what the service wrote, so a
    wrapped sidecar's text is ignored as plain text is, and wrapped JSON lines are read
    whatever the file's name."""
    probe = wrapper_of(head)
    if probe is None:
        return head
    head = head.lstrip(b"\x00")
    return probe.feed(head[: head.rfind(b"\n") + 1] or head)
