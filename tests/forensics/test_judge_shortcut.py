"""A text line's reason found from its first bytes is the one the JSON parser gives.

`judge.cannot_be_json` skips the parser for lines no JSON text could be (a text log's,
an access log's). Where it answers, the reason must be the parser's; where it is
unsure, it must leave the line to the parser.
"""

from __future__ import annotations

import pytest

from ridtrace.forensics.reading import judge
from ridtrace.forensics.reading.scan import LEAN_FIELDS

LINES = [
    b'127.0.0.1 - - [02/Dec/2026:10:00:01 +0000] "GET /items/1 HTTP/1.1" 200 5',
    b"2026-12-02 10:00:01 INFO server started",
    b"2026-12-02T10:00:01Z {\"k\": 1}",
    b"INFO server started", b"<html>", b"# comment",
    b"Dec  2 10:00:01 host sshd[123]: Accepted", b"\x00\x00INFO after a hole",
    b"  \t INFO indented", b" \x00INFO nul after a blank",
    # What a JSON parser may take, or what only the parser can tell apart:
    b"[2026-12-02 10:00:01] INFO x", b"12345", b"-1.5e3", b"  42  ", b"0", b"01", b"1.5e", b"1 2", b"1\x1c", b"7\xc2\x85",
    b"NaN", b"Infinity", b"-Infinity", b"NaNny", b"Infinityx", b"true", b"false", b"null",
    b"nonsense", b"tomorrow", b"fine", b'"a string"', b"[1, 2]", b"{}", b"{\"a\": 1",
    b"\xef\xbb\xbf{}", b"\xff\xfeI\x00N\x00F\x00O\x00", b"\xc3\x28 invalid UTF-8",
    b"-", b"-x", b"--- Logging error ---", b"\x1cINFO", b"\x1c{}", b"\t\r\n",
]


@pytest.mark.parametrize("line", LINES)
def test_the_shortcut_gives_the_parsers_reason(
    line: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = judge.judge_line(line, LEAN_FIELDS)
    monkeypatch.setattr(judge, "cannot_be_json", lambda text: False)
    assert quick == judge.judge_line(line, LEAN_FIELDS)


def test_the_shortcut_takes_the_usual_text_lines() -> None:
    for line in LINES[:10]:
        assert judge.cannot_be_json(line), line
    for line in (b"12345", b"  42  ", b"NaN", b"Infinity", b"-Infinity", b"true", b"{}",
                 b"1\x1c", b"7\xc2\x85", b"\xef\xbb\xbf{}"):
        assert not judge.cannot_be_json(line), line
