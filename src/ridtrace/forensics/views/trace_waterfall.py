"""`ridtrace trace`'s waterfall: each request's spans as bars on one time axis
(`views.trace_text` prints it above the blocks)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from rich.text import Text

from ridtrace.contract import FRONTEND
from ridtrace.forensics.rfc3339 import rfc3339_us
from ridtrace.forensics.views.text_fit import indented, packed, span_ms, with_ms
from ridtrace.forensics.views.trace_rows import RequestBlock, SpanBar, TraceView
from ridtrace.forensics.views.verdicts import CROSSED

__all__ = ["block_numbers", "waterfall_lines", "whose"]

_LABEL = 15  # "┌#10 worker-12 ", wider when a label needs it (`_label_width`)
_DURATION = 11
_MIN_BAR = 10


def block_numbers(view: TraceView) -> dict[str, int]:
    """Each block's number as `ridtrace trace` shows it (#1 first), by its span id."""
    return {block.span_id: i for i, block in enumerate(view.blocks, 1)}


def numbered(numbers: Iterable[int]) -> str:
    """Block numbers as the text names them, ascending, a run of three or more as one
    range (``#1 #3–#9``): thousands of callers holding one id each listed every other
    (`--limit 0` printed millions of numbers), which nobody reads."""
    shown = sorted(set(numbers))
    parts: list[str] = []
    at = 0
    while at < len(shown):
        end = at
        while end + 1 < len(shown) and shown[end + 1] == shown[end] + 1:
            end += 1
        if end - at >= 2:
            parts.append(f"#{shown[at]}–#{shown[end]}")
        else:
            parts.extend(f"#{n}" for n in shown[at:end + 1])
        at = end + 1
    return " ".join(parts)


def whose(block: RequestBlock, numbers: dict[str, int]) -> str:
    """Whose output a crossed caller got: the producing span, with its number if shown."""
    producer = block.verdict.got_output_of
    if producer is None:
        return ""
    ref = f" (#{numbers[producer.span_id]})" if producer.span_id in numbers else ""
    return f"span {producer.span_id or '?'}{ref}"


def _collision_order(blocks: list[RequestBlock]) -> list[list[RequestBlock]]:
    """Blocks in time order, requests that overlapped under one id kept together."""
    groups: list[list[RequestBlock]] = []
    placed: dict[str, list[RequestBlock]] = {}
    for block in sorted(blocks, key=lambda b: b.start):
        group = next((placed[s] for s in block.overlaps if s in placed), None)
        if group is None:
            group = []
            groups.append(group)
        group.append(block)
        placed[block.span_id] = group
    return groups


def _when_held(group: list[RequestBlock]) -> str:
    """How a group held its id: all of them together, or a chain of overlaps (#1 with #2,
    #2 with #3), where "at the same time" was false of #1 and #3."""
    members = {b.span_id for b in group}
    if all(members - {b.span_id} <= set(b.overlaps) for b in group):
        return "at the same time"
    return "at overlapping times"


def _bar(start: float, end: float, lo: float, scale: float, width: int) -> tuple[int, int]:
    left = min(width - 1, max(0, math.floor((start - lo) * scale)))
    right = min(width, max(left + 1, math.ceil((end - lo) * scale)))
    return left, right


def _under_caller(bar: SpanBar) -> str:
    """The label of a bar below its block's first: its side; a step's (a frontend span
    under the caller: Dynamo's `generate`, where an engine call that failed logs its
    error) with its logged name, where it read ``frontend`` as the caller above it does."""
    if bar.side == FRONTEND and bar.name:
        return f"{bar.side} {bar.name}"
    return bar.side


def _label_width(view: TraceView, numbers: dict[str, int], width: int) -> int:
    """Columns for the labels: the longest one whole, with a space after it, where the
    bars keep `_MIN_BAR` columns. A label cut to 13 characters read ``#100 fronten``, and
    ``#10 worker-12`` read ``#10 worker-1``: another worker's name."""
    longest = max(
        len(f" #{numbers[b.span_id]} {bar.side}" if j == 0 else f"    {_under_caller(bar)}")
        + (2 if j == 0 and b.verdict.label == CROSSED else 0)
        for b in view.blocks for j, bar in enumerate(b.spans)
    )
    room = width - _MIN_BAR - _DURATION - 2
    return max(_LABEL, min(longest + 1, room))


def _label(text: str, mark: str, columns: int) -> str:
    """`text` then `mark`, in `columns - 1` characters: cut with an ellipsis (visibly
    cut, never another name) only when the terminal leaves no room."""
    room = columns - 1 - len(mark)
    return (text if len(text) <= room else text[: max(0, room - 1)] + "…") + mark


def waterfall_lines(view: TraceView, width: int) -> list[Text]:
    """Each request's spans as bars on one time axis, collisions stacked, crossings marked."""
    if not view.blocks:
        return []
    numbers = block_numbers(view)
    label_width = _label_width(view, numbers, width)
    bar_width = max(_MIN_BAR, width - label_width - _DURATION - 2)
    t0 = min(b.start for b in view.blocks)

    def at(block: RequestBlock, ms: float) -> float:
        return (block.start - t0).total_seconds() * 1000.0 + ms

    lo = 0.0
    hi = max(at(b, bar.end_ms) for b in view.blocks for bar in b.spans)
    scale = bar_width / max(hi - lo, 1e-3)
    lines = packed([Text("waterfall from", style="bold"),
                    Text(f"{rfc3339_us(t0)} (0 ms);", style="bold"),
                    Text("right: each span's ms", style="bold")], width, sep=" ")
    for group in _collision_order(view.blocks):
        stacked = len(group) > 1
        # A crossing's notes go under the group's bracket, not inside it (a note between
        # two bracketed requests left the bracket open across it).
        notes: list[Text] = []
        for k, block in enumerate(group):
            crossed = block.verdict.label == CROSSED
            for j, bar in enumerate(block.spans):
                mark = " "
                if stacked:
                    mark = "┌" if k == 0 and j == 0 else ("└" if k == len(group) - 1 and
                                                         j == len(block.spans) - 1 else "│")
                name = (f"#{numbers[block.span_id]} {bar.side}" if j == 0
                        else f"   {_under_caller(bar)}")
                label = _label(f"{mark}{name}", " ✗" if crossed and j == 0 else "", label_width)
                left, right = _bar(at(block, bar.start_ms), at(block, bar.end_ms), lo, scale,
                                   bar_width)
                style = "cyan" if bar.side == FRONTEND else "green"
                if bar.outcome not in (None, "ok") or (crossed and j == 0):
                    style = "red"
                row = Text(f"{label:<{label_width}}")
                row.append(" " * left)
                row.append("█" * (right - left), style=style)
                row.append(" " * (bar_width - right))
                # A caller's ms end with its answer, as its block's header says: lines
                # logged under its ids after it (the legacy pump's Unlinked response) are
                # in its bar, the id held until then, not in its duration.
                shown_ms = bar.end_ms - bar.start_ms
                if bar.span_id == block.span_id and block.duration_ms is not None:
                    shown_ms = block.duration_ms
                duration = (span_ms(shown_ms, _DURATION - 1)
                            if bar.closed and bar.opened
                            else "no end" if bar.opened else "no start")
                row.append(f"{duration:>{_DURATION}}", style="dim")
                lines.append(row)
            if crossed:
                notes += packed([
                    Text(f"  ✗ #{numbers[block.span_id]} got output of", style="bold red"),
                    Text(whose(block, numbers), style="bold red"),
                ], width, sep=" ", indent=4)
                producer = block.verdict.got_output_of
                if producer is not None:
                    notes.append(indented(f"request {producer.request_id or '-'}", 4, width,
                                          "red"))
        lines += notes
        if stacked:
            ids = numbered(numbers[b.span_id] for b in group)
            lines += packed([Text(f"  ↕ {ids} held request", style="yellow"),
                             Text(str(group[0].request_id), style="yellow"),
                             Text(_when_held(group), style="yellow")], width, sep=" ", indent=4)
    axis = Text(" " * label_width + "0 ms")
    end = with_ms(span_ms(hi, 10))
    axis.append(" " * max(1, bar_width - 4 - len(end)) + end)
    lines.append(axis)
    return lines
