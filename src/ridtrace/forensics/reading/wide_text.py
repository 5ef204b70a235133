"""UTF-16 or UTF-32 text decoded to UTF-8, and where a log's encoding changes.

A log PowerShell's ``>`` started (UTF-16 with a mark) that another writer appended to in
UTF-8, or in the other byte order with its own mark, changes encoding at a line's
start. Decoded on as the first encoding, the rest of the file was one line of garbage:
one bad line under the 1 % rule, its records unread, "No findings". A line that starts
in another encoding's way (a UTF-8 ``{`` beside no NUL, a byte-order mark) is decoded
from there as that encoding.
"""

from __future__ import annotations

import codecs
import re
from typing import Any

# Bytes held back from the decoder at a chunk's end: enough to see how the next line
# starts when its newline ends the chunk (a newline, then a 4-byte mark).
_LOOK = 8


# After a newline: a byte-order mark (UTF-8's, UTF-16's, UTF-32's), or UTF-8's ``{``
# with no NUL beside it (UTF-16 and UTF-32 put one there, in either byte order).
_OTHER_START = (rb"(?:\xef\xbb\xbf|\xff\xfe|\xfe\xff|\x00\x00\xfe\xff|\{[^\x00])")


class WideText:
    """Incremental UTF-16/UTF-32 → UTF-8 decoding that follows a change of encoding at a
    line's start (`wide_text_codec` picks the encoding of the text from there on)."""

    def __init__(self, encoding: str, head: bytes, pick: Any) -> None:
        self._pick = pick  # bytes → the wide codec they announce, or None (UTF-8)
        self._start(encoding, head)
        self._held = b""

    def _start(self, encoding: str | None, head: bytes) -> None:
        """Decode as `encoding` (None: UTF-8) from `head`, the text's first bytes there."""
        self.encoding = encoding
        self._decoder = (codecs.getincrementaldecoder(encoding)("replace")
                         if encoding is not None else None)
        self._fed = 0  # bytes given to this decoder: where its code units start
        self._unit = 4 if encoding is not None and "32" in encoding else 2
        if encoding is not None:
            # "utf-16" and "utf-32" take their order from the mark that opens `head`.
            big = encoding.endswith("-be") or head.startswith(
                (codecs.BOM_UTF32_BE, codecs.BOM_UTF16_BE))
            codec = f"utf-{8 * self._unit}-{'be' if big else 'le'}"
            newline = "\n".encode(codec)
            # A line's end a cut can tear: its newline, or the CR before it (CRLF ends,
            # as PowerShell and Windows tools write them).
            self._line_ends = (newline, "\r".encode(codec))
            self._change = re.compile(re.escape(newline) + _OTHER_START)

    def decode(self, data: bytes) -> bytes:
        """`data` (the next raw bytes; empty at the end) as UTF-8."""
        out: list[bytes] = []
        buf, self._held = self._held + data, b""
        final = not data
        while buf:
            if self._decoder is None:  # UTF-8 from here on: no more to follow
                out.append(buf)
                break
            cut = self._change_at(buf, final)
            if cut is None:
                keep = 0 if final else min(_LOOK, len(buf))
                out.append(self._decode(buf[: len(buf) - keep], final))
                self._held = buf[len(buf) - keep:]
                break
            out.append(self._decode(buf[:cut], True))
            buf = buf[cut:]
            self._start(self._pick(buf), buf)
        else:
            if final and self._decoder is not None:
                out.append(self._decode(b"", True))
        return b"".join(out)

    def _decode(self, data: bytes, final: bool) -> bytes:
        assert self._decoder is not None
        self._fed += len(data)
        text: str = self._decoder.decode(data, final=False)
        if final:
            torn, flag = self._decoder.getstate()
            if torn and any(end.startswith(torn) for end in self._line_ends):
                # The text ends in part of a newline or of its CR (a copy cut at an odd
                # byte): the line before it is whole. Decoded as U+FFFD it joined that line, and
                # the last record, complete, was a bad line "truncated JSON".
                self._decoder.setstate((b"", flag))
                text += "\n"
            else:
                text += self._decoder.decode(b"", final=True)
        return text.encode("utf-8")

    def _change_at(self, buf: bytes, final: bool) -> int | None:
        """Where in `buf` a line in another encoding starts, or None."""
        # A start can only be told where the bytes after the newline are all here.
        end = len(buf) if final else len(buf) - _LOOK
        for found in self._change.finditer(buf, 0, len(buf)):
            at = found.start()
            if at >= end:
                break
            if (self._fed + at) % self._unit == 0:  # a newline, not two halves of units
                return at + self._unit
        return None
