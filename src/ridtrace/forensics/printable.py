"""Text from the logs made safe to print: control characters shown, not obeyed.

Request ids, client ids, messages and file names come from the logs, and a client
chooses its ids. Printed as they are, an ESC sequence recolours or clears a terminal
and an OSC one retitles its window; a CR or newline rewrites a line of the report.
Invisible characters hide differences instead: a zero-width space or joiner, a
byte-order mark or a tag character makes two ids print alike. Each such character is
replaced by one visible character (C0 and DEL by their Unicode control pictures; C1,
format characters such as the bidirectional and zero-width ones, line and paragraph
separators, lone surrogates and unassigned code points by U+FFFD), so a styled line
keeps its spans in place.
JSON output (and CSV, `csv_cell`) keeps every character, escaped where it would be obeyed or hide
(`json_escaped`): JSON itself escapes only C0.
"""

from __future__ import annotations

import re
import unicodedata

_SHOWN = {code: 0x2400 + code for code in range(0x20)}
_SHOWN[0x7F] = 0x2421
_SHOWN.update({code: 0xFFFD for code in range(0x80, 0xA0)})
# Bidirectional controls reorder what a terminal shows ("Trojan Source"): an id could
# display as another one.
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_SHOWN.update({code: 0xFFFD for code in _BIDI})
# Unicode's default-ignorable code points outside the format category (a combining
# grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and variation
# selectors), and the blank braille pattern: each shows as nothing or a blank, so
# `rollout-7` and `rollout-7` followed by U+034F or U+3164 printed alike. Python calls
# them printable, so a test of categories alone let them through.
_BLANK = (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810), 0x2800, 0x3164,
          *range(0xFE00, 0xFE10), 0xFFA0, *range(0xE0100, 0xE01F0))
_SHOWN.update({code: 0xFFFD for code in _BLANK})
_HAS_BLANK = re.compile("[" + "".join(re.escape(chr(code)) for code in _BLANK) + "]")


# Categories never shown as a mark of their own: control, format (zero-width, bidi, BOM,
# soft hyphen, tags), surrogate, unassigned, and line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"})
_REPLACEMENT = "\ufffd"


# Most characters of one value a text view shows. rich folds a table cell in time that
# grows faster than its length: a request id of 2 MiB (a line may hold 16 MiB) took 60 s
# to print in `analyze`'s table, 15 MiB more than 11 minutes, and `trace` printed 20,000
# lines of one; the JSON outputs keep every value whole.
MAX_SHOWN_CHARS = 1000


def cut_at_shown(text: str) -> tuple[str, int]:
    """`text`'s first `MAX_SHOWN_CHARS` characters, and how many more there are."""
    return text[:MAX_SHOWN_CHARS], max(0, len(text) - MAX_SHOWN_CHARS)


def cut_to_show(text: str) -> str:
    """`text`, or its first `MAX_SHOWN_CHARS` characters and how many more there are."""
    shown, more = cut_at_shown(text)
    if not more:
        return text
    return f"{shown}… ({more} more characters: --format json has it whole)"


def visible(text: str) -> str:
    """`text` with every control or invisible character replaced by a visible one, one
    for one (the same length)."""
    shown = text.translate(_SHOWN)
    if shown.isprintable():  # the common case: nothing (left) to replace
        return shown
    return "".join(
        _REPLACEMENT if unicodedata.category(char) in _HIDDEN else char
        for char in shown
    )


# What a spreadsheet runs as a formula when a CSV cell starts with it (OWASP's "CSV
# injection"). Request ids, client ids, routes and messages are the clients' text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


# Where a backslash of the value would read as the start of an escape in a CSV cell.
_READS_AS_ESCAPE = re.compile(r"\\|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}")


def _hidden(char: str) -> bool:
    return ord(char) in _SHOWN or unicodedata.category(char) in _HIDDEN


def _code_escape(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def csv_cell(text: str) -> str:
    """`text` for a CSV cell: a would-be formula behind a leading apostrophe (which
    spreadsheets show as text), and every character `visible` replaces written as its
    ``\\uXXXX`` (``\\UXXXXXXXX`` outside the BMP) escape, as JSON output writes it.
    `visible`'s U+FFFD lost the value (a CSV is data to filter and join on, not a
    view); raw, a bidi control reordered the cell in a terminal or a spreadsheet. A
    backslash is doubled only where it would read as an escape (before another
    backslash, an escape's spelling, or an escaped character), so Windows paths keep
    theirs and the value is recoverable: ``\\\\`` is one backslash, ``\\uXXXX`` one
    character, any other backslash itself."""
    return csv_escaped(formula_guarded(text))


def csv_escaped(text: str, also: str = "") -> str:
    """`csv_cell`'s escapes, no apostrophe; the characters of `also` escaped too (a
    ``;`` in a file name, in a cell of ``;``-separated evidence)."""
    if (text.isprintable() and "\\" not in text and not any(c in text for c in also)
            and _HAS_BLANK.search(text) is None):
        return text  # the common case: nothing to escape
    out = []
    for at, char in enumerate(text):
        if char == "\\":
            after = text[at + 1:at + 10]
            doubled = _READS_AS_ESCAPE.match(after) or (
                after and (_hidden(after[0]) or after[0] in also))
            out.append("\\\\" if doubled else char)
        else:
            out.append(_code_escape(char) if _hidden(char) or char in also else char)
    return "".join(out)


def formula_guarded(text: str) -> str:
    """`text` behind a leading apostrophe when a spreadsheet would run it as a formula,
    or when it starts with one itself: a cell's first ``'`` is then always the guard's,
    and ``=x`` and ``'=x`` (two clients' ids) are not written alike."""
    return "'" + text if text.startswith(_GUARDED_START) else text


_GUARDED_START = (*_FORMULA_START, "'")


# In JSON text, what JSON does not escape but a terminal obeys or hides: exactly what
# `visible` replaces (DEL, C1, format characters such as the bidirectional and
# zero-width ones, soft hyphen, BOM and tags, unassigned code points, line and paragraph
# separators). A list of ranges left out the rarer format characters (U+0600, U+1D173)
# and unassigned ones, which the table showed as U+FFFD and JSON passed raw.
_NOT_ASCII = re.compile("[^\x00-\x7e]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code not in _SHOWN and unicodedata.category(char) not in _HIDDEN:
        return char
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the BMP: JSON spells it as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_escaped(text: str) -> str:
    """JSON text with every character a terminal would obey or hide written as its
    ``\\uXXXX`` escape: the same JSON value, printed safely (``--format json`` to a
    terminal, a pager, a CI log). Text outside JSON strings never holds one."""
    if text.isascii() and "\x7f" not in text:  # the common case, at C speed
        return text
    return _NOT_ASCII.sub(_escape, text)


# A file name the text views quote: one holding what separates their citations (a
# space, `, `, the `:` before a line number) or a quote read as two files, or as
# another line of another file (`real.jsonl:9 other.jsonl:1`).
_AMBIGUOUS_NAME = re.compile(r"[\s,:'\"]")
# A URL's scheme (`s3://`, `file://`, the Dask engine's inputs) is no separator.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# An id that would not read as one `key=value` word: blank, or holding a space, an
# ``=`` or a quote (`a x_request_id=victim  /etc/passwd:1` forged a second id and a
# citation on `--follow`'s table line).
_AMBIGUOUS_VALUE = re.compile(r"^$|[\s='\"]")


def keyed(key: str, value: str) -> str:
    """``key=value`` as one word of a text line: the value quoted (as `cited_at` quotes
    a file name) where it holds a separator, and cut as `cut_to_show` cuts it, quoted,
    with how many more characters there are after it."""
    shown, more = cut_at_shown(value)
    if more:
        return (f"{key}={_quoted(shown + '…')} ({more} more characters: "
                "--format json has it whole)")
    return f"{key}={_quoted(value) if _AMBIGUOUS_VALUE.search(value) else value}"


def cited_at(file: str, line: object) -> str:
    """``file:line`` as the text views print a citation: a name holding a separator
    quoted (`'a b.jsonl':3`, a quote in it escaped), so each citation reads as one."""
    scheme = _SCHEME.match(file)
    if _AMBIGUOUS_NAME.search(file, scheme.end() if scheme else 0):
        file = _quoted(file)
    return f"{file}:{line}"
