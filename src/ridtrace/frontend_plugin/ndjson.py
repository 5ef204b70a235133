"""Reading a worker's NDJSON body: one JSON object per line, split on bytes."""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

import orjson

from ridtrace.frontend_plugin import json_codec

__all__ = ["BadLine", "ByteSource", "NdjsonReader"]


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
        self._tail = b""
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
                return None if tail.isspace() or not tail else decode(tail)
            parts = (self._tail + data).split(b"\n") if self._tail else data.split(b"\n")
            self._tail = parts.pop()
            lines.extend(part for part in parts if part and not part.isspace())
        return decode(lines.popleft())

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
