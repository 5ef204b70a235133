"""Property tests of the log reader, through the public forensics API only.

Whatever bytes a log file holds, reading it never raises; every non-blank line is either
read or counted as bad; and every valid ridtrace line is read, with its own line number.
"""

from __future__ import annotations

import codecs
import tempfile
from datetime import datetime
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from ridtrace.forensics import LoadedLogs, load_events
from ridtrace.forensics.reading.decoding import compression_of

_ID = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=40)
_TIMES = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1))


@st.composite
def valid_lines(draw: st.DrawFn) -> tuple[bytes, str]:
    """A line as `configure_logging` writes it, with any text in the free-form fields."""
    request_id = draw(_ID)
    line = {
        "time": draw(_TIMES).isoformat(timespec="microseconds") + "Z",
        "level": draw(st.sampled_from(["DEBUG", "INFO", "WARN", "ERROR"])),
        "message": draw(st.text(max_size=60)),
        "logger": "ridtrace.tracing.middleware",
        "schema": "ridtrace/1",
        "service": draw(st.sampled_from(["frontend", "worker-8101"])),
        "pid": draw(st.integers(1, 1 << 22)),
        "request_id": request_id,
        "event": draw(st.sampled_from(["request.start", "request.end", "dispatch.attempt"])),
        "extra": draw(st.text(max_size=30)),
    }
    return orjson.dumps(line), request_id


# Bytes that can never be a JSON object line: no newline, not blank, and not starting
# with "{" once surrounding whitespace is stripped.
_GARBAGE = st.binary(min_size=1, max_size=80).filter(
    lambda b: b"\n" not in b and b.strip() != b"" and not b.strip().startswith(b"{")
)


_WIDE_MARKS = frozenset({codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF32_BE,
                         codecs.BOM_UTF32_LE})


def _load(data: bytes) -> LoadedLogs:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "service.jsonl"
        path.write_bytes(data)
        return load_events([str(path)])


def _read(data: bytes) -> tuple[int, int, int, list[tuple[int, str]]]:
    logs = _load(data)
    rows = sorted(zip(logs.events["line"].tolist(), logs.events["request_id"].tolist(),
                      strict=True))
    return logs.stats.lines, logs.stats.bad_lines, len(logs.events), rows


@given(st.binary(max_size=600))
def test_any_bytes_are_read_or_counted_never_raised(data: bytes) -> None:
    if compression_of(data):  # read as compressed: an undecodable one is reported unreadable
        logs = _load(data)
        assert logs.stats.unreadable_files or logs.stats.lines == 0
        return
    lines, bad, rows, _ = _read(data)
    text = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 BOM opening the file is dropped
    nonblank = sum(1 for part in text.split(b"\n") if part.strip())
    assert lines == nonblank
    assert rows + bad == lines


@given(st.lists(st.one_of(valid_lines(), _GARBAGE), max_size=12), st.booleans())
def test_every_valid_line_is_read_and_every_bad_line_counted(
    items: list[tuple[bytes, str] | bytes], final_newline: bool,
) -> None:
    texts = [item[0] if isinstance(item, tuple) else item for item in items]
    data = b"\n".join(texts) + (b"\n" if final_newline and texts else b"")
    if compression_of(data) or data.startswith(b"\xef\xbb\xbf"):
        return  # read as compressed, or a BOM: `test_any_bytes_are_read_or_counted_never_raised`
    if data in _WIDE_MARKS:
        return  # a UTF-16 or UTF-32 mark alone: an empty wide text, no line
    lines, bad, _, read = _read(data)
    expected = [(number, item[1]) for number, item in enumerate(items, start=1)
                if isinstance(item, tuple)]
    assert read == expected
    assert bad == len(items) - len(expected)
    assert lines == len(items)


def test_a_lone_surrogate_escape_is_a_valid_line() -> None:
    line = (b'{"time":"2026-01-01T00:00:00.000000Z","level":"INFO","message":"m \\ud800",'
            b'"logger":"l","schema":"ridtrace/1","service":"frontend","pid":1,'
            b'"request_id":"a","event":"request.end"}\n')
    _, bad, rows, _ = _read(line)
    assert (bad, rows) == (0, 1)


def test_a_utf8_log_opening_with_a_nul_and_a_brace_is_read_as_utf8() -> None:
    # Found by the property above: `\x00{` opens UTF-16 big-endian's `{`, and the file
    # was read as UTF-16, its next line's record lost in one garbage line.
    record = (b'{"time":"2020-01-01T00:00:00.000000Z","level":"DEBUG","message":"",'
              b'"logger":"ridtrace.tracing.middleware","schema":"ridtrace/1",'
              b'"service":"frontend","pid":1,"request_id":"0","event":"request.start"}')
    assert _read(b"\x00{\n" + record)[1:] == (1, 1, [(2, "0")])
    assert _read(b"{\x00\n" + record)[1:] == (1, 1, [(2, "0")])
    lines, bad, rows, _ = _read(b"\x00{\n\x00")
    assert (lines, bad, rows) == (2, 2, 0)


def test_utf16_without_a_mark_is_still_read_in_either_byte_order() -> None:
    record = ('{"time":"2020-01-01T00:00:00.000000Z","level":"INFO","message":"",'
              '"logger":"l","schema":"ridtrace/1","service":"frontend","pid":1,'
              '"request_id":"w","event":"request.start"}\n')
    for codec in ("utf-16-le", "utf-16-be"):
        assert _read(record.encode(codec))[1:] == (0, 1, [(1, "w")]), codec
