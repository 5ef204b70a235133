"""Fitting `ridtrace trace`'s text to a width: lines broken between parts, never inside
an id, and times that keep to their columns."""

from __future__ import annotations

from rich.cells import cell_len, chop_cells
from rich.text import Text

# A line logged with an unset clock (Go's zero time) makes a span thousands of years
# long: its milliseconds would push a row past its columns.
_UNITS = ((31_557_600_000.0, "y"), (86_400_000.0, "d"), (3_600_000.0, "h"), (60_000.0, "min"),
          (1_000.0, "s"))


def span_ms(ms: float, width: int, *, digits: int = 1, sign: str = "") -> str:
    """`ms` as ``123.4`` (`digits` decimals), or in the largest unit it holds (``2026 y``)
    when that does not fit in `width` characters."""
    text = f"{ms:{sign}.{digits}f}"
    if len(text) <= width:
        return text
    size, unit = next(((size, unit) for size, unit in _UNITS if abs(ms) >= size), (1.0, "ms"))
    return f"{ms / size:{sign}.0f} {unit}"


def with_ms(text: str) -> str:
    """`span_ms`'s text with its unit: ``ms`` unless it already names one."""
    return text if text[-1].isalpha() else f"{text} ms"


def packed(parts: list[Text], width: int, *, sep: str = "  ", indent: int = 0) -> list[Text]:
    """`parts` joined by `sep` on as few lines as `width` columns allow, broken between
    parts only (the next lines indented by `indent`): an id is never cut in two. Widths
    are terminal cells: a CJK character or an emoji takes two."""
    lines = [parts[0].copy()]
    for part in parts[1:]:
        if lines[-1].cell_len + len(sep) + part.cell_len <= width:
            lines[-1].append(sep)
            lines[-1].append_text(part)
        else:
            lines.append(Text(" " * max(0, min(indent, width - part.cell_len))) + part)
    return lines


def words_within(text: str, room: int) -> list[str]:
    """`text`'s words (split at spaces), each cut into pieces of at most `room` cells
    (rich's fold: an emoji joined by ZWJ, a letter and its marks stay whole)."""
    pieces: list[str] = []
    for word in text.split(" "):
        pieces += chop_cells(word, room) if cell_len(word) > room else [word] if word else []
    return pieces


def indented(text: str, indent: int, width: int, style: str) -> Text:
    """`text` after up to `indent` spaces: fewer when the line would not fit otherwise."""
    return Text(" " * max(0, min(indent, width - cell_len(text))) + text, style=style)


def fitted(text: str, width: int) -> str:
    """`text` in exactly `width` cells: cut with an ellipsis, or padded with spaces."""
    cell = Text(text)
    cell.truncate(width, overflow="ellipsis", pad=True)
    return cell.plain
