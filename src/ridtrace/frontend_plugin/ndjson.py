"""Reading a worker's NDJSON body: one JSON object per line, split on bytes."""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

import orjson

from ridtrace.frontend_plugin import json_codec

__all__ = ["MAX_LINE_BYTES", "BadLine", "ByteSource", "NdjsonReader"]

# The longest worker line held while its newline is awaited. A worker's messages are a
# chunk of text each (the largest, a reply's last usage line, a few KiB): a line that
# goes on past this is no message. Unbounded, a worker (or a wrong URL serving a big
# download) that sent a line with no end grew the frontend by ~100 MiB a request per
# 5 s until the chunk timeout, every network read copying the whole line again.
MAX_LINE_BYTES = 8 << 20


class ByteSource(Protocol):
    """A body read as it arrives (``WorkerResponse``; aiohttp's ``StreamReader`` too)."""

    async def readany(self) -> bytes:
        """What arrived since the last read; ``b""`` at the end."""


class BadLine(Exception):
    """A worker line that is not a JSON object."""


class NdjsonReader:
    """Decodes messages from a response body, one network read at a time.

    A read usually carries several lines; they are split at once and handed out without
    another await, which beats a ``readline`` per message.
    """

    __slots__ = ("_content", "_lines", "_tail", "eof")

    def __init__(self, content: ByteSource) -> None:
        self._content = content
        self._lines: deque[bytes] = deque()
        # A piece of a line whose newline has not come: bytes, grown in place (a
        # bytearray) when reads come with no newline.
        self._tail: bytes | bytearray = b""
        self.eof = False

    async def next(self) -> dict[str, Any] | None:
        """The next message, ``None`` at the end of the body; raises :class:`BadLine`."""
        lines = self._lines
        while not lines:
            if self.eof:
                return None
            data = await self._content.readany()
            if not data:
                self.eof = True
                tail, self._tail = self._tail, b""
                return None if tail.isspace() or not tail else decode(bytes(tail))
            if self._tail:
                if b"\n" not in data:  # more of a long line: grown in place, not copied
                    self._grow_tail(data)
                    continue
                data = bytes(self._tail) + data
            parts = data.split(b"\n")
            self._tail = parts.pop()
            if len(self._tail) > MAX_LINE_BYTES:
                raise self._too_long()
            lines.extend(part for part in parts if part and not part.isspace())
        return decode(lines.popleft())

    def _grow_tail(self, data: bytes) -> None:
        if not isinstance(self._tail, bytearray):
            self._tail = bytearray(self._tail)
        self._tail += data
        if len(self._tail) > MAX_LINE_BYTES:
            raise self._too_long()

    def _too_long(self) -> BadLine:
        self._tail = b""
        return BadLine(f"worker line longer than {MAX_LINE_BYTES >> 20} MiB")

    @property
    def ready(self) -> bool:
        """Whether a message is already buffered, so :meth:`next_ready` can be called."""
        return bool(self._lines)

    def next_ready(self) -> dict[str, Any]:
        """The next buffered message, without waiting (check :attr:`ready` first)."""
        return decode(self._lines.popleft())


def decode(line: bytes) -> dict[str, Any]:
    """One line as a JSON object; raises :class:`BadLine`."""
    try:
        value = json_codec.loads(line)
    except orjson.JSONDecodeError as exc:
        raise BadLine(f"invalid worker line: {exc}") from None
    if not isinstance(value, dict):
        raise BadLine("worker line is not a JSON object")
    return value
