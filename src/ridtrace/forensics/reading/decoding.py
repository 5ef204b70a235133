"""A log source's text bytes: decompressed (gzip, bzip2, xz, zstd), as UTF-8, without a BOM.

Compression is known by the first bytes, whatever the name. A truncated or corrupt
archive gives every line decodable before the damage; the stream then ends and says why.
UTF-16 text (what Windows PowerShell's ``>`` and ``Out-File`` write) is known by its
byte-order mark or by a first ``{`` next to a NUL, and read as UTF-8; so is UTF-32 text
by its byte-order mark.
"""

from __future__ import annotations

import bz2
import codecs
import io
import lzma
import zlib
from typing import Any, BinaryIO

from ridtrace.forensics.reading.docker_local import (
    DOCKER_LOCAL,
    DOCKER_LOCAL_BYTES,
    is_docker_local,
)
from ridtrace.forensics.reading.wide_text import WideText

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
_READ_BYTES = 1 << 20
# Compressed rotations, known by their first bytes whatever their name.
COMPRESSIONS = (
    (GZIP_MAGIC, "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    # lz4's frame (`lz4`, logrotate's compresscmd lz4): no decompressor in the standard
    # library, so never read; ignored in a walk as binary data, its log was missing
    # from a report that said it was complete.
    (b"\x04\x22\x4d\x18", "lz4"),
)
# How to read what this Python cannot decompress, by the tool that made it.
_DECOMPRESS_WITH = {"zstd": "zstd", "lz4": "lz4"}
MAGIC_BYTES = 6
# UTF-16 with a byte-order mark (the codec reads the order and drops the mark), or
# without one, known by the JSON line's first character and its NUL. UTF-32 with its
# mark (PowerShell's `Out-File -Encoding utf32`) comes first: its little-endian mark
# starts with UTF-16's, and read as UTF-16 its every line was a bad one.
_WIDE_TEXT_STARTS = (
    (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
    (b"{\x00", "utf-16-le"), (b"\x00{", "utf-16-be"),
)


_MARKS = frozenset({codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE,
                    codecs.BOM_UTF16_BE})
# Bytes after a mark looked at for a NUL: a log's text in UTF-16 or UTF-32 has some (its
# `{`, its digits, its quotes are ASCII), one in UTF-8 none.
_LOOKED_AFTER_MARK = 32


def wide_text_codec(head: bytes) -> str | None:
    """The UTF-16 or UTF-32 codec the first bytes of a text announce, or None (UTF-8).

    A mark followed by text with no NUL is no wide text's: a UTF-8 service appending to
    a log PowerShell created with its mark alone. Read as UTF-16, its JSON lines were
    one garbage line; read as UTF-8 the mark is a bad line and the records are read.
    A mark alone is an empty wide text.
    """
    for start, codec in _WIDE_TEXT_STARTS:
        if head.startswith(start):
            after = head[len(start): len(start) + _LOOKED_AFTER_MARK]
            if start in _MARKS and after and b"\x00" not in after:
                return None
            if start not in _MARKS and not _ascii_unit_next(after, codec):
                return None
            return codec
    return None


def _ascii_unit_next(after: bytes, codec: str) -> bool:
    """Whether the bytes after a `{` without a mark go on as UTF-16 of its byte order:
    JSON puts an ASCII character after `{` (a quote, a blank, `}`), a NUL beside it.

    A UTF-8 log whose first line was a stray NUL and a `{` was read as UTF-16 big-endian,
    its records after it one garbage line, the request they held lost.
    """
    if len(after) < 2:
        return True  # nothing after the `{` yet: as the start says
    high, low = (after[0], after[1]) if codec.endswith("-be") else (after[1], after[0])
    return high == 0 and 0 < low < 0x80


def compression_of(head: bytes) -> str | None:
    """The compression a file's first bytes announce (gzip, bzip2, xz, zstd, lz4), or
    None."""
    return next((name for magic, name in COMPRESSIONS if head.startswith(magic)), None)


def _decompressor(kind: str) -> Any:
    """A streaming decompressor of `kind`, or None when this Python has none for it."""
    if kind == "gzip":
        return zlib.decompressobj(wbits=31)
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    if kind == "xz":
        return lzma.LZMADecompressor()
    if kind != "zstd":
        return None
    try:  # zstd: in the standard library from Python 3.14
        from compression import zstd  # type: ignore[import-not-found]

        return zstd.ZstdDecompressor()
    except ImportError:
        return None


_SALVAGE_STEP = 4096
# Compressed bytes given to a bzip2/xz/zstd decompressor at once. Those cannot be copied
# to decode a failing piece again (as gzip's can, `_salvage`): damage loses only the
# output of this much input, not of a whole read.
_UNPACKED_FEED = 4096


def _salvage(inflate: Any, feed: bytes) -> bytes:
    """What `inflate` decodes from `feed` before its first corrupt byte: in steps, and
    the step that fails again byte by byte."""
    out: list[bytes] = []
    for at in range(0, len(feed), _SALVAGE_STEP):
        before = inflate.copy()
        try:
            out.append(inflate.decompress(feed[at : at + _SALVAGE_STEP]))
        except zlib.error:
            for byte in range(at, min(at + _SALVAGE_STEP, len(feed))):
                try:
                    out.append(before.decompress(feed[byte : byte + 1]))
                except zlib.error:
                    break
            break
    return b"".join(out)


class DecodedStream(io.RawIOBase):
    """A source's text bytes: decompressed when compressed, without a UTF-8 BOM.

    A truncated or corrupt compressed file does not raise: the stream ends where the
    data ends, and `tear` says why, so every line before the tear is still read. A
    compression this Python cannot decode is named in `unsupported`; nothing is read.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.compression = compression_of(self._peek(raw, MAGIC_BYTES))
        self.gzip = self.compression == "gzip"
        self.tear: str | None = None
        self.unsupported: str | None = None
        self._stopped = False
        self._inflate: Any = None
        if self.compression is not None:
            self._inflate = _decompressor(self.compression)
            if self._inflate is None:
                # Say how to read it now: logrotate's zstd rotations are found in an
                # incident, when upgrading Python is not an option.
                tool = _DECOMPRESS_WITH[self.compression]
                can = " (Python 3.14 can)" if self.compression == "zstd" else ""
                self.unsupported = (
                    f"{self.compression}-compressed, and this Python cannot decompress "
                    f"it{can}: decompress it first ({tool} -d FILE), or name it as a pipe: "
                    f"<({tool} -dc FILE)"
                )
        elif is_docker_local(self._peek(raw, DOCKER_LOCAL_BYTES)):
            self.unsupported = DOCKER_LOCAL
        self._pending = b""
        self._started = False
        # Whether the text began with a UTF-8 BOM (stripped here; DuckDB would not).
        self.had_bom = False
        # The UTF-16 codec the text is in, known at the first read; None for UTF-8.
        self.encoding: str | None = None
        self._utf16: WideText | None = None
        self._sniffed = False

    @staticmethod
    def _peek(raw: BinaryIO, n: int) -> bytes:
        peek = getattr(raw, "peek", None)
        if peek is not None:
            return bytes(peek(n)[:n])
        data = raw.read(n)
        raw.seek(0)
        return data

    def readable(self) -> bool:
        return True

    def consumed(self) -> int | None:
        """The source's bytes read so far (compressed ones, for a compressed file), which
        a progress bar over file sizes counts; None where the source cannot say (a pipe)."""
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return None

    def _next_bytes(self) -> bytes:
        if self.unsupported is not None or self._stopped:
            return b""
        if self._inflate is None:
            return self._raw.read(_READ_BYTES)
        if not self.gzip:
            return self._next_unpacked()
        while True:
            if self._inflate.eof:
                rest = self._inflate.unused_data
                if not rest:
                    rest = self._raw.read(_READ_BYTES)
                    if not rest:
                        return b""
                if rest[:1] == b"\x00" and self._zeros_to_the_end(rest):
                    # Zeros after the last member (a preallocated or block-padded copy):
                    # gzip itself ignores them; they were "corrupt gzip data", exit 3.
                    return b""
                self._inflate = zlib.decompressobj(wbits=31)  # the next gzip member
                feed = rest
            else:
                feed = self._inflate.unconsumed_tail or self._raw.read(_READ_BYTES)
                if not feed:
                    self.tear = "gzip stream truncated"
                    return b""
            before = self._inflate.copy()
            try:
                out: bytes = self._inflate.decompress(feed, _READ_BYTES)
            except zlib.error as exc:
                self.tear = f"corrupt gzip data ({exc})"
                self._stopped = True  # nothing more is read from this stream
                # The failed call's output is lost: decode its input again in small
                # steps, keeping what comes before the damage (all of it when only the
                # trailer's checksum is wrong).
                return _salvage(before, feed)
            if out:
                return out

    def _zeros_to_the_end(self, rest: bytes) -> bool:
        """Whether `rest` and all the stream holds after it are NUL bytes."""
        while rest:
            if rest.strip(b"\x00"):
                return False
            rest = self._raw.read(_READ_BYTES)
        return True

    def _next_unpacked(self) -> bytes:
        """The next bytes of a bzip2, xz or zstd stream (their decompressors keep the
        input they have not used; several streams one after the other are read on)."""
        assert self.compression is not None
        while True:
            if self._inflate.eof:
                feed = self._inflate.unused_data or self._raw.read(_UNPACKED_FEED)
                if not feed or (feed[:1] == b"\x00" and self._zeros_to_the_end(feed)):
                    return b""  # the end, or zeros after it (xz's stream padding too)
                self._inflate = _decompressor(self.compression)  # the next stream
            elif self._inflate.needs_input:
                feed = self._raw.read(_UNPACKED_FEED)
                if not feed:
                    self.tear = f"{self.compression} stream truncated"
                    return b""
            else:
                feed = b""
            try:
                out: bytes = self._inflate.decompress(feed, _READ_BYTES)
            except (OSError, EOFError, ValueError, lzma.LZMAError) as exc:
                self.tear = f"corrupt {self.compression} data ({exc})"
                self._stopped = True
                return b""
            if out:
                return out

    def read(self, size: int = -1) -> bytes:
        """Read up to `size` decoded bytes (all when negative)."""
        chunks = [self._pending]
        have = len(self._pending)
        while size < 0 or have < size:
            data = self._utf8(self._next_bytes())
            if not data:
                break
            chunks.append(data)
            have += len(data)
        data = b"".join(chunks)
        if not self._started:
            self._started = True
            if data.startswith(BOM):
                data = data[len(BOM) :]
                self.had_bom = True
        if size >= 0 and len(data) > size:
            data, self._pending = data[:size], data[size:]
        else:
            self._pending = b""
        return data

    def _utf8(self, data: bytes) -> bytes:
        """`data` as UTF-8: the text's first bytes tell whether it is UTF-16."""
        if not self._sniffed and data:
            self._sniffed = True
            self.encoding = wide_text_codec(data)
            if self.encoding is not None:
                self._utf16 = WideText(self.encoding, data, wide_text_codec)
        if self._utf16 is None:
            return data
        # An odd byte at the very end is U+FFFD, on a line of its own judging.
        return self._utf16.decode(data)

    def readinto(self, buffer: Any) -> int:
        """`io.RawIOBase` plumbing over `read`."""
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)
