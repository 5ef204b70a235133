"""Rich tables for the forensics commands, rendered to text (stdout or ``-o FILE``)."""

from __future__ import annotations

import io
import os
import re
import shutil
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from ridtrace.forensics.printable import cited_at, cut_to_show, visible

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ridtrace.forensics.rules.report import Report
    from ridtrace.forensics.views.trace_rows import TraceView

MAX_ROWS = 50
# Lines are laid out for this width when the output is no terminal and COLUMNS is unset.
REPORT_WIDTH = 160
MAX_EVIDENCE = 4  # lines cited per finding; --format json lists them all
# Below this width the findings' seven columns fold their cells into fragments: one
# block per finding instead.
FINDINGS_TABLE_WIDTH = 140
# `ridtrace trace` is laid out for this width, so a file or a pipe gets the same lines.
TRACE_WIDTH = 100
# Narrower than this, even ids and times alone no longer fit: lay out for it and let the
# terminal wrap.
MIN_TRACE_WIDTH = 40
# Wider than this, the lines are laid out for it: the waterfall's bars grew with the
# width, and COLUMNS=10000000 took 42 s and 1.4 GB to write 363 MB.
MAX_WIDTH = 1000


def on_terminal(to_terminal: bool) -> bool:
    """Whether the output goes to a terminal (then laid out for its width)."""
    return to_terminal and sys.stdout.isatty()


def styled(to_terminal: bool) -> bool:
    """Whether to print escape codes: only to a terminal, and not when its user set
    ``NO_COLOR`` (https://no-color.org). Rich would read the variable itself, but only
    when left to decide; it is told, so a file or pipe never gets a code."""
    return on_terminal(to_terminal) and not os.environ.get("NO_COLOR")


def layout_width(to_terminal: bool, default: int) -> int:
    """The terminal's width (``COLUMNS`` first, as every terminal program reads it); for a
    file or a pipe, ``COLUMNS`` when the user set it, else `default` (stable output)."""
    if on_terminal(to_terminal):
        width = shutil.get_terminal_size((default, 24)).columns
    else:
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else default
    # At least the narrowest the reports are laid out for: fewer columns cut times and
    # ids into a few letters a line (COLUMNS=1: a character a line).
    return min(max(width, MIN_TRACE_WIDTH), MAX_WIDTH)


def _console(to_terminal: bool) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    color = styled(to_terminal)
    width = layout_width(to_terminal, REPORT_WIDTH)
    # No markup: request ids, client ids and file names come from the logs, and a
    # client's "[/bold]" would be a style tag (or a MarkupError that loses the report).
    # No highlighting either: it would colour numbers and dates inside the logs' text.
    console = Console(file=buf, width=width, force_terminal=color, no_color=not color,
                      markup=False, highlight=False)
    return console, buf


# A line's trailing blanks (a grid's last column and a centred title are padded to the
# width), kept apart from the colour codes after them.
_TRAILING_BLANKS = re.compile(r"(?:[ ]|\x1b\[[0-9;]*m)+$", re.MULTILINE)


def _text(buf: io.StringIO) -> str:
    """What was printed into `buf`, without the padding at the end of its lines."""
    return _TRAILING_BLANKS.sub(lambda m: m.group().replace(" ", ""), buf.getvalue())


def _cell(value: Any) -> str:
    if value is None or value != value:  # None or NaN/NaT
        return ""
    return visible(cut_to_show(str(value)))


def render_report(report: Report, *, to_terminal: bool) -> str:
    """Summary table, then findings (errors first), capped at `MAX_ROWS` rows."""
    from ridtrace.contract import FINDING_KINDS, SEVERITY
    from ridtrace.forensics.rules.findings import finding_dicts

    console, buf = _console(to_terminal)
    summary = Table(title="ridtrace analyze", show_header=False)
    summary.add_column("key")
    summary.add_column("value", justify="right")
    for key, value in report.summary.items():
        if key in ("bad_line_samples", "ignored_files", "unreadable_files", "incomplete_reasons"):
            continue
        style = "bold red" if SEVERITY.get(key) == "error" and value else None
        # clock_offsets_ms: one "file: ms" line per worker file, not a Python dict.
        shown = ("\n".join(_cell(f"{name}: {ms}") for name, ms in value.items())
                 if isinstance(value, dict) else _cell(value))
        summary.add_row(key, shown, style=style)
    console.print(summary)
    for sample in report.summary["bad_line_samples"]:
        console.print(visible(f"bad line {cited_at(sample['file'], sample['line'])}: "
                             f"{sample['reason']}"))
    found = report.found
    if not len(found):
        # A bare "No findings." over logs that were not all read is the confident false
        # clean a forensic report must never print, even under -q (no stderr warning).
        if report.summary["incomplete"]:
            _print_incomplete(console, report.summary, "No findings in what was read, but "
                              "incidents may be missing:")
        elif not report.summary["lines"] and report.lines_read and report.summary["requests"]:
            # No line in the window, but requests running across it, checked.
            console.print(f"No findings: {report.summary['requests']} request(s) ran across "
                          f"the --since/--until window, none of the {report.lines_read} lines "
                          "read falls in it.")
        elif not report.summary["lines"] and report.lines_read:
            # The logs were read; the window holds none of their lines (a mistyped year).
            console.print(f"No findings: none of the {report.lines_read} lines read falls in "
                          "the --since/--until window.")
        elif not report.summary["lines"]:
            # Nothing read is no evidence of health: an empty folder, a wrong path.
            console.print("No findings: no log line was read.")
        else:
            console.print("No findings.")
        return _text(buf)
    ordered = found.take(_worst_first(found.kind))
    records = finding_dicts(ordered.head(MAX_ROWS))
    if console.width >= FINDINGS_TABLE_WIDTH:
        base = _print_evidence_base(console, records)
        console.print(_findings_table(console.width, records, base))
    else:
        _print_finding_blocks(console, records)
    if len(found) > MAX_ROWS:
        left = Counter(ordered.kind[MAX_ROWS:])
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(
            left.items(), key=lambda item: FINDING_KINDS.index(item[0])))
        console.print(
            f"… {len(found) - MAX_ROWS} more findings ({kinds}); use --format json or csv."
        )
    if report.summary["incomplete"]:
        _print_incomplete(console, report.summary, "INCOMPLETE: more incidents may be missing:")
    return _text(buf)


def _worst_first(kinds: list[str]) -> np.ndarray[Any, Any]:
    """The text view's order: crossed streams, then duplicates in flight, then Unlinked
    errors, then the info findings (`contract.FINDING_KINDS`), each kind in the report's
    order (by time). By time alone, a legacy run's first 50 were its Unlinked errors, and
    the crossed streams, the incident itself, were past the cut, unnamed."""
    import numpy as np

    from ridtrace.contract import FINDING_KINDS

    rank = np.fromiter((FINDING_KINDS.index(kind) for kind in kinds), dtype=np.int64,
                       count=len(kinds))
    return np.argsort(rank, kind="stable")


def _print_incomplete(console: Console, summary: dict[str, Any], headline: str) -> None:
    """Why the input was incomplete, on stdout beside the verdict it qualifies."""
    console.print(headline, style="bold red")
    for reason in summary["incomplete_reasons"]:
        console.print(visible(f"  {reason}"))


def _citations(rec: dict[str, Any], base: str = "") -> list[str]:
    """The finding's evidence as ``file:line`` citations, the files relative to `base`."""
    return [cited_at(os.path.relpath(e["file"], base) if base else e["file"], e["line"])
            for e in rec["evidence"]]


def _evidence(rec: dict[str, Any], base: str = "", width: int | None = None) -> str:
    """The finding's first citations, ``, `` between them; where `width` is given, in
    lines of that many cells, a citation too long for one folded (`_folded_citation`)."""
    from rich.cells import cell_len

    cited = _citations(rec, base)
    more = f", … +{len(cited) - MAX_EVIDENCE} more" if len(cited) > MAX_EVIDENCE else ""
    if width is None:
        return _cell(", ".join(cited[:MAX_EVIDENCE]) + more)
    shown = [_cell(c) + "," for c in cited[:MAX_EVIDENCE]]
    if not more:
        shown[-1] = shown[-1][:-1]
    lines: list[str] = []
    for piece in [*shown, *([more[2:]] if more else [])]:
        if lines and cell_len(lines[-1]) + 1 + cell_len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines += _folded_citation(piece, width).split("\n")
    return "\n".join(lines)


def _folded_citation(citation: str, width: int) -> str:
    """`citation` in lines of at most `width` terminal cells, its ``:line`` kept whole on
    the last with the end of the file's name: a fold inside the number ("…jsonl:5" over
    "0,") read as a whole citation of another line."""
    from rich.cells import cell_len, get_character_cell_size

    if cell_len(citation) <= width:
        return citation
    at = citation.rfind(":")
    tail = citation[at:] if at > 0 else ""
    keep = width - cell_len(tail)
    if not tail or keep < 2:  # room for a wide character at least
        return "\n".join(_in_cells(citation, width))
    head = citation[:at]
    # The end of the name that fits before the tail (one pass from its end: a name may be
    # a thousand characters), then the rest from the start.
    cut, used = len(head), 0
    while cut > 0 and used + get_character_cell_size(head[cut - 1]) <= keep:
        cut -= 1
        used += get_character_cell_size(head[cut])
    return "\n".join([*_in_cells(head[:cut], width), head[cut:] + tail])


def _in_cells(text: str, width: int) -> list[str]:
    """`text` in pieces of at most `width` terminal cells (a CJK character takes two)."""
    from rich.cells import get_character_cell_size

    pieces, piece, used = [], "", 0
    for char in text:
        size = get_character_cell_size(char)
        if piece and used + size > width:
            pieces.append(piece)
            piece, used = "", 0
        piece, used = piece + char, used + size
    return [*pieces, piece] if piece else pieces


def _common_dir(dirs: set[str]) -> str:
    try:
        return os.path.commonpath(sorted(dirs))
    except ValueError:  # absolute and relative paths mixed
        return ""


# Ids up to a UUID's length are kept whole in the findings table, as in `trace`'s text.
WHOLE_ID = 36
_FINDING_COLUMNS = ("kind", "severity", "time", "request_id", "x_request_id", "detail",
                    "evidence")
_FOLDED_AT_LEAST = 16  # what a folded column keeps beside the whole ones
_CITATION_AT_MOST = 60  # the evidence column's width kept for a whole citation, at most


def _print_evidence_base(console: Console, records: list[dict[str, Any]]) -> str:
    """The directory every cited file is in, said once, to cite the files relative to:
    a long path folded across lines is no `file:line` a reader can copy, and the table's
    evidence column, repeating it, folded citations whose ids were short."""
    from rich.text import Text

    dirs = {os.path.dirname(str(e["file"])) for rec in records for e in rec["evidence"]}
    base = "" if not dirs or "" in dirs else _common_dir(dirs)
    if base:
        console.print(Text(visible(f"evidence in files under {base}{os.sep}"), style="dim"))
    return base


def _findings_table(width: int, records: list[dict[str, Any]], base: str = "") -> Table:
    """The findings as a table `width` wide: kind, severity and time whole (a time
    folded after "…18.66258" read as another time), and ids up to `WHOLE_ID` characters
    too, while the columns that fold keep `_FOLDED_AT_LEAST`; the rest folds."""
    from rich.cells import cell_len

    cells = [[_cell(rec[col]) for col in _FINDING_COLUMNS[:5]] for rec in records]
    longest = {col: min(max([len(col)] + [cell_len(row[i]) for row in cells]), WHOLE_ID)
               for i, col in enumerate(_FINDING_COLUMNS[:5])}
    borders = 3 * len(_FINDING_COLUMNS) + 1
    # A citation folds only where it is longer than the evidence column can be: folded
    # inside its line number ("…jsonl:5" over "0,"), it read as another, whole citation.
    cited = max((cell_len(_cell(e)) + 1 for rec in records for e in _citations(rec, base)),
                default=0)
    evidence = max(min(cited, _CITATION_AT_MOST), _FOLDED_AT_LEAST)
    joined = max((cell_len(_evidence(rec, base)) for rec in records), default=0)  # one line
    whole: dict[str, int] = {}
    # Ids kept whole before citations: a long path's citation folds anyway.
    for kept, cited_whole in ((_FINDING_COLUMNS[:5], True), (_FINDING_COLUMNS[:5], False),
                              (_FINDING_COLUMNS[:3], True), (_FINDING_COLUMNS[:3], False)):
        folded = len(_FINDING_COLUMNS) - len(kept) - 1  # the evidence column's apart
        spare = width - sum(longest[c] for c in kept) - borders - folded * _FOLDED_AT_LEAST
        # Not all whole: the evidence shares what is left with the detail beside it.
        # All whole, the citations go on one line as far as half the room takes them.
        last = max(evidence, min(joined, (spare + _FOLDED_AT_LEAST) // 2)) if cited_whole \
            else min(evidence, _FOLDED_AT_LEAST + max(0, spare - _FOLDED_AT_LEAST) // 2)
        if spare >= last:
            whole = {col: longest[col] for col in kept} | {"evidence": last}
            break
    table = Table(title="findings")
    for col in _FINDING_COLUMNS:
        table.add_column(col, overflow="fold", width=whole.get(col))
    for rec in records:
        style = "red" if rec["severity"] == "error" else None
        table.add_row(
            rec["kind"], rec["severity"], _cell(rec["time"]), _cell(rec["request_id"]),
            _cell(rec["x_request_id"]), _cell(rec["detail"]),
            _evidence(rec, base, width=whole.get("evidence")), style=style,
        )
    return table


def _print_finding_blocks(console: Console, records: list[dict[str, Any]]) -> None:
    """One block per finding, a field a line: seven table columns in a narrow terminal
    left each cell a few letters wide ("dupli / cate_ / in_fl")."""
    from rich.padding import Padding
    from rich.text import Text

    console.print("findings", style="bold")
    base = _print_evidence_base(console, records)
    for rec in records:
        console.print()
        style = "red" if rec["severity"] == "error" else None
        console.print(Text(f"{rec['kind']}  {rec['severity']}", style=style or ""))
        beside = console.width >= _KEYS_BESIDE + len(rec["time"])
        # Folded by citation, as the table folds them: left to the grid, a citation of a
        # quoted name with a space in it was broken at the space, read as two.
        evidence_width = max(1, console.width - (_KEYS_BESIDE if beside else _UNDER_KEY))
        shown = (
            ("time", _cell(rec["time"])), ("request_id", _cell(rec["request_id"])),
            ("x_request_id", _cell(rec["x_request_id"]) or "-"),
            ("detail", _cell(rec["detail"])),
            ("evidence", _evidence(rec, base, width=evidence_width)),
        )
        if not beside:
            # Too narrow for the time beside its key: folded there, "…T16:55:12.3613"
            # over "36Z" read as another time. Each value under its key instead.
            for key, value in shown:
                console.print(Text(f"  {key}"))
                console.print(Padding(Text(value, overflow="fold"), (0, 0, 0, _UNDER_KEY)))
            continue
        fields = Table.grid(padding=(0, 2))
        fields.add_column(no_wrap=True)
        fields.add_column(overflow="fold")
        for key, value in shown:
            fields.add_row(f"  {key}", value)
        console.print(fields)


# A block's widest key ("  x_request_id") and the grid's padding after it.
_KEYS_BESIDE = len("  x_request_id") + 2
# A value under its key, in a terminal too narrow for it beside: indented this much.
_UNDER_KEY = 4


def _frame_table(frame: pd.DataFrame, *, title: str) -> Table:
    table = Table(title=title)
    for col in frame.columns:
        table.add_column(str(col), overflow="fold")
    for row in frame.itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    return table


def _print_frame(console: Console, frame: pd.DataFrame, *, title: str) -> None:
    """`frame` as a table when it fits the console, else one block per row (a column a
    line): folded into a narrow terminal, each cell was a few letters a line."""
    from rich.measure import Measurement
    from rich.text import Text

    table = _frame_table(frame, title=title)
    unbounded = console.options.update_width(10_000)  # measured, not clamped to the console
    if Measurement.get(console, unbounded, table).maximum <= console.width:
        console.print(table)
        return
    console.print(title, style="bold")
    for row in frame.itertuples(index=False):
        console.print()
        fields = Table.grid(padding=(0, 2))
        fields.add_column(no_wrap=True)
        fields.add_column(overflow="fold")
        for column, value in zip(frame.columns, row, strict=True):
            fields.add_row(Text(f"  {column}"), Text(_cell(value)))
        console.print(fields)
    console.print()


def render_audit(
    table: pd.DataFrame, summary: dict[str, Any], *, by: str, to_terminal: bool
) -> str:
    """The audit's rows, then what was read: an empty table over an unread input says so."""
    title = f"deprecated headers by {by}" + ("" if len(table) else " (none seen)")
    console, buf = _console(to_terminal)
    # The table itself, not its rendered text: on a terminal that text holds escape
    # codes, which a second console prints as visible garbage.
    _print_frame(console, table, title=title)
    console.print(
        f"read {summary['files']} file(s): {summary['lines']} line(s), "
        f"{summary['bad_lines']} bad, {summary['requests']} request(s)"
    )
    for sample in summary["bad_line_samples"]:
        console.print(visible(f"bad line {cited_at(sample['file'], sample['line'])}: "
                             f"{sample['reason']}"))
    for note in summary["unreadable_files"]:
        console.print(visible(f"could not read all of {note['file']}: {note['reason']}"))
    if summary["incomplete"]:
        _print_incomplete(console, summary,
                          "INCOMPLETE: use of the deprecated headers may be missing:")
    return _text(buf)


def render_trace(view: TraceView, *, to_terminal: bool) -> str:
    """`ridtrace trace`'s waterfall and blocks, laid out for the terminal's width (at least
    `MIN_TRACE_WIDTH`), or `TRACE_WIDTH` for a file or a pipe."""
    from ridtrace.forensics.views.trace_text import print_trace

    buf = io.StringIO()
    color = styled(to_terminal)
    width = layout_width(to_terminal, TRACE_WIDTH)
    console = Console(
        file=buf, width=width, force_terminal=color, no_color=not color, highlight=False,
    )
    print_trace(view, console, direct=console.color_system is None)
    return _text(buf)
