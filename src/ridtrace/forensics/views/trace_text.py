"""`ridtrace trace` for people: a waterfall, then one compact block per request.

Laid out for the terminal's width (100 columns for a file or a pipe): every line is
built so that ids of up to 36 characters (a UUID) stay whole on one line; nothing is a
table cell that could wrap. In fewer columns, a line's parts go on lines of their own
(between parts, never inside one) and an event's `file:line` goes under it (below 47
columns, after its outcome).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import NamedTuple

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from ridtrace.forensics.printable import cited_at, visible
from ridtrace.forensics.rfc3339 import rfc3339_us
from ridtrace.forensics.views.text_fit import (
    fitted,
    indented,
    packed,
    span_ms,
    with_ms,
    words_within,
)
from ridtrace.forensics.views.trace_printable import printable_view
from ridtrace.forensics.views.trace_rows import DUPLICATE_IN_FLIGHT, RequestBlock, TraceView
from ridtrace.forensics.views.trace_waterfall import (
    block_numbers,
    numbered,
    waterfall_lines,
    whose,
)
from ridtrace.forensics.views.verdicts import CROSSED, CUT_SHORT, OWN_OUTPUT

_EVENT = 28
_MIN_EVENT = 12  # narrower, an event's file:line goes on a line of its own
_BEFORE_EVENT = 24  # "  {ms:>+10.3f}  {side:<9} "
# A detail line keeps at least this many cells for its text: under the event where the
# width allows, nearer the left edge where it does not.
_MIN_DETAIL_CELLS = 30
_AFTER_EVENT = 11  # " {outcome:<9} "
_STYLE = {OWN_OUTPUT: "green", CROSSED: "bold red"}


def _iso(block: RequestBlock) -> str:
    return rfc3339_us(block.start)


def _base_dir(view: TraceView) -> str:
    """The directory all files share, so lines show short ``file:line`` locations."""
    files = {bar.file for block in view.blocks for bar in block.spans}
    files |= set(view.offsets_ms)
    dirs = {os.path.dirname(f) for f in files}
    if not dirs or "" in dirs:
        return ""
    try:
        return os.path.commonpath(sorted(dirs))
    except ValueError:  # absolute and relative paths mixed
        return ""


def _short(path: str, base: str) -> str:
    return os.path.relpath(path, base) if base else path


def _shown_names(view: TraceView, base: str, width: int) -> dict[str, str]:
    """Each file as its lines cite it: relative to `base`, or, when one of those names
    does not fit on a line of its own under its event, a number (``f1``) that the list
    above the waterfall names. Kubernetes' ``<ns>_<pod>_<uid>/<container>/0.log`` is
    longer than an 80-column line: its ``file:line`` began at column 0 and broke
    mid-path, every event of the trace."""
    files = sorted({ev.file for block in view.blocks for ev in block.events}
                   | set(view.offsets_ms))
    names = {f: _short(f, base) for f in files}
    longest = max((cell_len(cited_at(name, 1 << 20)) for name in names.values()), default=0)
    if longest <= width - _BEFORE_EVENT - (0 if _outcome_beside(width) else _AFTER_EVENT):
        return names
    return {f: f"f{i}" for i, f in enumerate(files, 1)}


def _duration(block: RequestBlock) -> str:
    """The block's duration, and when no line of it says where it began, that."""
    if block.duration_ms is None:
        return "start not in logs"
    shown = with_ms(span_ms(block.duration_ms, 10))
    return shown if block.start_logged else f"{shown} (start not in logs)"


def header_lines(
    block: RequestBlock, number: int, numbers: dict[str, int], width: int = 100,
    spelt: dict[str, str] | None = None,
) -> list[Text]:
    """The block's header: ids; route, status, outcome, duration, start; verdict; findings
    (`spelt`: `TraceView.spelt_span_ids`, to show the span id as logged)."""
    ids = Text(f"#{number} ", style="bold")
    ids.append(f"request {block.request_id or '-'}", style="bold cyan")
    id_parts = [ids]
    if block.x_request_id is not None:
        id_parts.append(Text(f"x-request-id {block.x_request_id}", style="cyan"))
    lines = packed(id_parts, width, indent=len(f"#{number} "))
    lines += packed([Text(part) for part in (
        block.route or "-", block.status or "-", block.outcome or "-",
        _duration(block), _iso(block), f"span {(spelt or {}).get(block.span_id, block.span_id)}",
    )], width)
    if block.deprecated_headers:
        names = block.deprecated_headers
        said = "sent deprecated header" + ("s" if len(names) > 1 else "")
        lines += packed([Text(said, style="yellow"), *(
            Text(name + ("," if i < len(names) - 1 else ""), style="yellow")
            for i, name in enumerate(names))], width, sep=" ", indent=2)
    verdict = Text("verdict: ")
    verdict.append(block.verdict.label, style=_STYLE.get(block.verdict.label, "yellow"))
    if block.verdict.label == CUT_SHORT:
        verdict.append(f" ({block.outcome})", style="yellow")  # hung up, or failed
    producer = block.verdict.got_output_of
    if producer is not None:
        verdict.append(" — got output of", style="bold red")
        lines += packed([verdict, Text(whose(block, numbers), style="bold red")], width,
                        sep=" ", indent=2)
        # Two lines: both ids at full length would not fit in 100 columns on one.
        lines.append(indented(f"that caller: request {producer.request_id or '-'}", 2,
                               width, "red"))
        if producer.x_request_id is not None:
            lines.append(indented(f"x-request-id {producer.x_request_id}", 15, width, "red"))
        verdict = Text("")
    if block.findings:
        kinds = []
        with_ = numbered(numbers[s] for s in block.overlaps if s in numbers)
        for kind in block.findings:
            both = kind == DUPLICATE_IN_FLIGHT and with_
            kinds.append(f"{kind} with {with_}" if both else kind)
        parts = [Text(f"{kind}," if i < len(kinds) - 1 else kind, style="red")
                 for i, kind in enumerate(kinds)]
        errors = packed([Text("errors:"), *parts], width, sep=" ", indent=8)
        if verdict.plain and verdict.cell_len + 2 + errors[0].cell_len <= width:
            verdict.append("  ")
            verdict.append_text(errors.pop(0))
        lines += [verdict, *errors] if verdict.plain else errors
    elif verdict.plain:
        lines.append(verdict)
    return lines


class EventLayout(NamedTuple):
    """Where an event line's parts go in the terminal's width."""

    column: int  # the event column's width
    inline: bool  # `file:line` fits on the event's line; else it goes on the next
    outcome_beside: bool  # the outcome fits beside the event; else it goes before file:line
    below: int  # the indent of that next line


def _outcome_beside(width: int) -> bool:
    # Below 47 columns an outcome beside a 12-column event runs past the line's end.
    return width - _BEFORE_EVENT - _AFTER_EVENT >= _MIN_EVENT


def _event_width(blocks: list[RequestBlock], names: dict[str, str], width: int) -> EventLayout:
    """How `event_lines` lays out the events of `blocks` in `width` columns."""
    longest = max((cell_len(cited_at(names[ev.file], ev.line)) for block in blocks
                   for ev in block.events), default=0)
    # file:line beside only when the events fit whole too (up to `_EVENT`): beside a long
    # file name, "response.unlinked" was cut to "response.unl…" where a line of its own
    # for file:line left it whole.
    named = max((cell_len(ev.event) for block in blocks for ev in block.events), default=0)
    room = width - _BEFORE_EVENT - _AFTER_EVENT
    if room - longest >= max(_MIN_EVENT, min(_EVENT, named)):
        return EventLayout(min(_EVENT, room - longest), True, True, _BEFORE_EVENT)
    if _outcome_beside(width):
        return EventLayout(min(_EVENT, room), False, True,
                           max(0, min(_BEFORE_EVENT, width - longest)))
    # The heading's `outcome   file:line` (19) shares the indent, so the columns line up.
    under = max(19, _AFTER_EVENT - 1 + longest)
    return EventLayout(min(_EVENT, width - _BEFORE_EVENT), False, False,
                       max(0, min(_BEFORE_EVENT, width - under)))


def event_lines(block: RequestBlock, names: dict[str, str], width: int = 100, *,
                event_width: EventLayout | None = None) -> list[Text]:
    """One line per log line: ms since the request's start, side, event, outcome, file:line
    (on a line of its own, under the event, when the terminal is too narrow for both);
    `names`: each file as `_shown_names` shows it."""
    column, inline, outcome_beside, below = event_width or _event_width([block], names, width)
    out = []
    for at, ev in enumerate(block.events):
        if block.events_omitted and at == block.omitted_at:
            out.append(Text(f"  … {block.events_omitted} more lines of this request, none a "
                            "lifecycle line (--max-lines 0 lists them all)", style="dim"))
        event = fitted(ev.event, column)
        ms = span_ms(ev.ms, 10, digits=3, sign="+")
        line = Text(f"  {ms:>10}  {ev.side:<9} {event} ")
        location = Text(cited_at(names[ev.file], ev.line), style="dim")
        if outcome_beside:
            line.append(f"{ev.outcome or '':<9} ")
        else:  # padded when there is none, so file:line stays under its heading
            location = Text(f"{ev.outcome or '':<9} ") + location
        if inline:
            line.append_text(location)
        else:
            line.rstrip()
        if ev.level == "ERROR":
            line.stylize("red")
        out.append(line)
        if not inline:
            out.append(Text(" " * max(0, min(below, width - location.cell_len))) + location)
        if ev.detail:
            out += _detail_lines(ev.detail, width)
    return out


def _detail_lines(detail: str, width: int) -> list[Text]:
    """What a line says beyond its event (`EventRow.detail`) under it, indented under
    the event, broken between parts; a part too long for a line (a worker's refusal
    body) between its words, a word too long cut. One long part set the indent of all
    to what it left (none), and the terminal broke it anywhere."""
    indent = min(_BEFORE_EVENT + 2, max(0, width - _MIN_DETAIL_CELLS))
    room = max(1, width - indent)
    parts = detail.split(", ")
    shown: list[Text] = []
    for i, part in enumerate(parts):
        text = f"{part}," if i < len(parts) - 1 else part
        pieces = [text] if cell_len(text) <= room else words_within(text, room)
        shown += [Text(piece, style="dim") for piece in pieces]
    shown[0] = Text(" " * indent) + shown[0]
    return packed(shown, width, sep=" ", indent=indent)


def trace_lines(view: TraceView, width: int = 100) -> Iterable[Text]:
    """Everything `ridtrace trace` prints for people, line by line."""
    view = printable_view(view)  # measured as printed: each mark takes its cell
    shown = len(view.blocks)
    yield from packed([Text(f"{view.ident}:", style="bold"),
                       Text(f"{view.matched} matching request(s), {shown} shown,", style="bold"),
                       Text("most relevant first", style="bold")], width, sep=" ")
    base = _base_dir(view)
    names = _shown_names(view, base, width)
    numbered = any(_short(f, base) != name for f, name in names.items())
    if base or numbered:
        under = f"files under {base}{os.sep}" if base else "files"
        said = f"{under}, cited by number (names too long for {width} columns):"
        yield from packed([Text(word, style="dim") for word in
                           (said if numbered else under).split(" ")], width, sep=" ")
    for f, name in names.items() if numbered else ():
        # Broken after a '/' where it must, never inside a directory's name.
        steps = _short(f, base).split(os.sep)
        dirs = [Text(step + os.sep, style="dim") for step in steps[:-1]]
        yield from packed([Text(f"  {name}  ", style="dim"), *dirs,
                           Text(steps[-1], style="dim")], width, sep="", indent=4)
    if any(view.offsets_ms.values()):
        parts = [f"{names[f]} {ms:+.1f} ms" for f, ms in view.offsets_ms.items() if ms]
        line = f"clock offsets corrected: {', '.join(parts)}"
        if len(line) <= width:
            yield Text(line, style="yellow")
        else:  # one file a line rather than a file name broken across two
            yield Text("clock offsets corrected:", style="yellow")
            yield from (Text(f"  {part}", style="yellow") for part in parts)
    yield from waterfall_lines(view, width)
    numbers = block_numbers(view)
    column, inline, outcome_beside, below = columns = _event_width(view.blocks, names, width)
    yield Text("")
    heading = f"  {'ms':>10}  {'side':<9} {'event':<{column}}"
    under_event = "file:line" if outcome_beside else f"{'outcome':<9} file:line"
    if outcome_beside:
        heading += f" {'outcome':<9}"
    if inline:
        yield Text(f"{heading} {under_event}", style="dim")
    else:
        yield Text(heading.rstrip(), style="dim")
        yield Text(" " * below + under_event, style="dim")
    for number, block in enumerate(view.blocks, 1):
        yield Text("")
        yield from header_lines(block, number, numbers, width, view.spelt_span_ids)
        yield from event_lines(block, names, width, event_width=columns)
    if view.more:
        yield Text("")
        yield from packed([Text(f"… {view.more} more matching request(s);", style="bold"),
                           Text("--limit 0 shows all", style="bold")], width, sep=" ")


def print_trace(view: TraceView, console: Console, *, direct: bool = False) -> None:
    """Print `trace_lines` on `console`, never wrapping a line mid-id.

    `direct`: `console` styles nothing and writes straight to its file (no recording,
    no capture), so a line that fits and that rich would not change (no tab, nothing
    to fold) is written to the file as it is. Rich outputs the same characters, but
    for thousands of blocks (`--limit 0` into a file or a pipe) it took about half of
    the rendering time.
    """
    write = console.file.write
    width = console.width
    for line in trace_lines(view, width):
        text = visible(line.plain)
        if direct and text.isprintable() and cell_len(text) <= width:
            write(text + "\n")
            continue
        shown = line.copy()
        shown.plain = text  # same length: the styles stay on their text
        console.print(shown, overflow="fold", crop=False)
