"""`ridtrace trace` as printed: 100 columns, ids whole, header, order, crossed mark, skew."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from ridtrace.forensics.views.trace_rows import TraceView
from ridtrace.forensics.views.trace_text import print_trace, trace_lines
from ridtrace.forensics.views.trace_waterfall import numbered
from tests.forensics.helpers import rt, rt_request, ts
from tests.forensics.test_trace_view import (
    RID,
    SPAN_A,
    SPAN_B,
    WORK_A,
    WORK_B,
    XRID_A,
    XRID_B,
    view_of,
    write_incident,
)


def rendered(view: TraceView, width: int = 100) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    print_trace(view, console)
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_fits_100_columns_with_36_character_ids_whole(tmp_path: Path) -> None:
    assert len(RID) == len(XRID_A) == len(XRID_B) == 36
    view = view_of(write_incident(tmp_path, skew=0.5), RID)
    lines = rendered(view)
    assert max(len(line) for line in lines) <= 100
    assert len(lines) == len(list(trace_lines(view, 100)))  # no line was wrapped
    whole = "\n".join(lines)
    glued = "".join(lines)  # an id broken across two lines shows up only here
    for ident in (RID, XRID_A, XRID_B, SPAN_A, SPAN_B):
        assert ident in whole
        assert whole.count(ident) == glued.count(ident), ident


def test_header_line_per_request(tmp_path: Path) -> None:
    lines = rendered(view_of(write_incident(tmp_path), RID))
    # The crossed caller B is the most relevant, though A came first.
    first = lines.index(f"#1 request {RID}  x-request-id {XRID_B}")
    second = lines.index(f"#2 request {RID}  x-request-id {XRID_A}")
    assert first < second
    assert lines[first + 1] == (
        f"/v1/chat/completions  200  ok  1000.0 ms  2026-11-29T10:00:00.200000Z  span {SPAN_B}"
    )
    assert lines[second + 2] == "verdict: no output  errors: duplicate_in_flight with #1"
    # The absolute time is in the header only: event lines carry ms since the start.
    assert sum("2026-11-29T" in line for line in lines[first:]) == 2


def test_event_lines_in_order_with_side_and_location(tmp_path: Path) -> None:
    lines = rendered(view_of(write_incident(tmp_path), XRID_B))
    events = [line.split() for line in lines if line.startswith("  ") and "jsonl:" in line]
    assert events == [
        ["+0.000", "frontend", "request.start", "frontend.jsonl:3"],
        ["+100.000", "worker-0", "worker.start", "worker.jsonl:2"],
        ["+900.000", "worker-0", "worker.end", "ok", "worker.jsonl:4"],
        ["+1000.000", "frontend", "request.end", "ok", "frontend.jsonl:4"],
    ]


def test_crossed_stream_names_whose_output(tmp_path: Path) -> None:
    lines = rendered(view_of(write_incident(tmp_path), RID))
    assert f"verdict: crossed — got output of span {SPAN_A} (#2)" in lines
    at = lines.index(f"  that caller: request {RID}")
    assert lines[at + 1] == f"{'':15}x-request-id {XRID_A}"
    assert f"  ✗ #1 got output of span {SPAN_A} (#2)" in lines  # on the waterfall too
    mark = next(i for i, line in enumerate(lines) if line.startswith("│#1 frontend ✗"))
    assert "█" in lines[mark]


def test_waterfall_stacks_the_collision_on_one_axis(tmp_path: Path) -> None:
    lines = rendered(view_of(write_incident(tmp_path), RID))
    rows = [line for line in lines if "█" in line]
    assert [row[:15].rstrip() for row in rows] == [
        "┌#2 frontend", "│   worker-0", "│#1 frontend ✗", "└   worker-0"]  # time order
    # B started 200 ms after A on a 1200 ms axis: its bar starts further right.
    starts = [row.index("█") for row in rows]
    assert starts[0] < starts[1] and starts[0] < starts[2]
    assert f"  ↕ #1 #2 held request {RID} at the same time" in lines
    assert WORK_A not in "\n".join(rows) and WORK_B not in "\n".join(rows)


def test_says_when_clocks_were_corrected(tmp_path: Path) -> None:
    view = view_of(write_incident(tmp_path, skew=0.5), XRID_B)
    offset = view.offsets_ms[str(tmp_path / "worker.jsonl")]
    lines = rendered(view)
    assert f"clock offsets corrected: worker.jsonl {offset:+.1f} ms" in lines
    plain = rendered(view_of(write_incident(tmp_path / "same"), XRID_B))
    assert not any("clock offsets" in line for line in plain)


def test_says_how_many_more(tmp_path: Path) -> None:
    lines = rendered(view_of(write_incident(tmp_path), RID, limit=1))
    assert lines[0].startswith(f"{RID}: 2 matching request(s), 1 shown")
    assert lines[-1] == "… 1 more matching request(s); --limit 0 shows all"


@pytest.mark.parametrize("width", [60, 80])
def test_a_narrow_terminal_gets_lines_of_its_width_with_ids_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int,
) -> None:
    # Laid out for 100 columns whatever the terminal: on 60 or 80 every long line
    # wrapped, the waterfall's bars and the event columns broken in two.
    monkeypatch.chdir(tmp_path)  # `files under logs/`: a path of its own may need a fold
    view = view_of(write_incident(Path("logs"), skew=0.5), RID)
    lines = rendered(view, width)
    assert max(len(line) for line in lines) <= width
    assert len(lines) == len(list(trace_lines(view, width)))  # no line was wrapped
    whole = "\n".join(lines)
    glued = "".join(lines)
    for ident in (RID, XRID_A, XRID_B, SPAN_A, SPAN_B, "2026-11-29T10:00:00.200000Z"):
        assert ident in whole
        assert whole.count(ident) == glued.count(ident), ident
    assert sum("█" in line for line in lines) == 4  # one row per span, none wrapped
    for location in ("frontend.jsonl:3", "worker.jsonl:2", "worker.jsonl:4", "frontend.jsonl:4"):
        assert any(line.rstrip().endswith(location) for line in lines), location
    assert any(line.split()[:2] == ["+0.000", "frontend"] for line in lines)


def test_a_line_logged_with_an_unset_clock_keeps_every_column_in_place(tmp_path: Path) -> None:
    # Go's zero time (0001-01-01) in one line made a span 2,026 years long: its duration
    # (63931543201000.0) pushed the waterfall row past 100 columns, and the event's ms
    # past its column, so both wrapped. (A lifecycle line: a request is timed by those.)
    write_incident(tmp_path)
    with (tmp_path / "frontend.jsonl").open("a") as fh:
        fh.write(rt("dispatch.attempt", time="0001-01-01T00:00:00Z", request_id=RID,
                    trace_id=f"{SPAN_A:0>32}", span_id=SPAN_A) + "\n")
    view = view_of([str(tmp_path / "frontend.jsonl"), str(tmp_path / "worker.jsonl")], RID)
    lines = rendered(view)
    assert max(len(line) for line in lines) <= 100
    assert len(lines) == len(list(trace_lines(view, 100)))
    bars = [line for line in lines if "█" in line]
    assert len(bars) == 4 and any(line.endswith(" y") for line in bars)


@pytest.mark.parametrize("width", [60, 100])
def test_wide_characters_count_as_the_two_columns_they_take(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int,
) -> None:
    # A client's id in CJK and a message with emoji take two columns a character: laid
    # out by characters, the event line ran 44 columns into a 28-column field and
    # wrapped, its file:line alone on the next line.
    from rich.cells import cell_len

    rid = "请求-🚀-" + "中" * 14
    lines = rt_request("a" * 16, rid, 0, 1, xrid="客户" * 9)
    lines.insert(1, rt(None, time=ts(0.5), message="生成完了したトークンを送信しました🚀🚀🚀",
                       request_id=rid, trace_id=f"{'a' * 16:0>32}", span_id="a" * 16))
    monkeypatch.chdir(tmp_path)  # `files under logs/`: a path of its own may need a fold
    Path("logs").mkdir()
    Path("logs/frontend.jsonl").write_text("\n".join(lines) + "\n")
    view = view_of(["logs/frontend.jsonl"], rid)
    shown = rendered(view, width)
    assert max(cell_len(line) for line in shown) <= width
    assert len(shown) == len(list(trace_lines(view, width)))  # no line was wrapped
    assert any(line.endswith("frontend.jsonl:2") and "生成" in line for line in shown) or any(
        line.strip() == "frontend.jsonl:2" for line in shown)
    assert any(rid in line for line in shown) and any("客户" * 9 in line for line in shown)


def test_invisible_characters_are_laid_out_as_the_marks_they_print_as(tmp_path: Path) -> None:
    # Zero-width and control characters take no cell while a line is laid out, then
    # print as one visible mark each (␛, �): a message of twenty of them ran twenty
    # columns past its line, which wrapped.
    rid = "r\u200b\x1b" * 10
    lines = rt_request("a" * 16, rid, 0, 1, xrid="x\u200b" * 30)
    lines.insert(1, rt(None, time=ts(0.5), message="m" + "\u200b\x07" * 20, request_id=rid,
                       trace_id=f"{'a' * 16:0>32}", span_id="a" * 16))
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    view = view_of([str(tmp_path / "frontend.jsonl")], "a" * 16)
    shown = rendered(view, 100)
    assert len(shown) == len(list(trace_lines(view, 100)))  # no line was wrapped
    assert max(len(line) for line in shown) <= 100
    assert not any(c in line for line in shown for c in "\u200b\x1b\x07")


def test_a_steps_logged_name_labels_its_bar_as_it_prints(tmp_path: Path) -> None:
    # A step's bar (Dynamo's `generate` under its `http-request`) read "frontend", as its
    # caller's does. Its name is the logs' text: an ESC in it prints as a mark, never as
    # a terminal's command.
    def dynamo(at: float, message: str, span: str, **fields: str) -> str:
        return json.dumps({"time": ts(at), "level": "INFO", "target": "request_span",
                           "message": message, "span_id": span, "trace_id": "7" * 32,
                           "request_id": "r-1", **fields})

    http, step = "a7" * 8, "b7" * 8
    front = {"span_name": "http-request", "method": "POST", "uri": "/v1/completions"}
    (tmp_path / "frontend.jsonl").write_text("\n".join([
        dynamo(0.0, "SPAN_FIRST_ENTRY", http, **front),
        dynamo(0.1, "SPAN_FIRST_ENTRY", step, span_name="gen\x1b[2Jerate", parent_id=http),
        dynamo(0.4, "SPAN_CLOSED", step, span_name="gen\x1b[2Jerate", parent_id=http),
        dynamo(0.5, "http response sent", http, status="200", latency_ms="500", **front),
    ]) + "\n")
    shown = rendered(view_of([str(tmp_path / "frontend.jsonl")], "r-1"), 100)
    labels = [line.split("█")[0].strip() for line in shown if "█" in line]
    assert labels == ["#1 frontend", "frontend gen␛[2Jerate"]
    assert not any("\x1b" in line for line in shown)


def test_lines_written_without_rich_are_what_rich_would_print(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Direct, print_trace writes a line that fits as it is (half the rendering time of
    # `--limit 0`); what rich would change (tabs, folding) goes through rich.
    from rich.text import Text

    from ridtrace.forensics.printable import visible
    from ridtrace.forensics.views import trace_text

    lines = [Text("plain  "), Text(""), Text("wide 漢字 é", style="bold"),
             Text("tab\there"), Text("x" * 130), Text("漢" * 60), Text("bell\x07")]
    monkeypatch.setattr(trace_text, "trace_lines", lambda view, width: iter(lines))
    fast, slow = io.StringIO(), io.StringIO()
    print_trace(TraceView("x", [], 0, {}, {}), Console(file=fast, width=100, highlight=False),
                direct=True)
    console = Console(file=slow, width=100, highlight=False)
    for line in lines:
        shown = line.copy()
        shown.plain = visible(line.plain)
        console.print(shown, overflow="fold", crop=False)
    assert fast.getvalue() == slow.getvalue()


@pytest.mark.parametrize("width", [40, 43, 46])
def test_the_narrowest_terminals_keep_each_event_with_its_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, width: int,
) -> None:
    # Seen in COLUMNS=40 on a retried dispatch (a worker's Conflict): between 40 and 46
    # columns the event column stayed 12 wide and the outcome stayed beside it, so a
    # `conflict` or `cancelled` ran past the line's end and printed alone at column 0,
    # the next line down, looking like a line of its own; events were cut to 12
    # (`worker.refu…`, `dispatch.re…`) with columns to spare; and the closing
    # `… N more matching request(s)` line, 51 columns, was folded by the terminal.
    from ridtrace.contract import WORKER_REFUSED

    monkeypatch.chdir(tmp_path)
    Path("logs").mkdir()
    front = [*rt_request("a" * 16, "r1", 0.0, 1.0, fp_in="in-a", fp_out="out-a"),
             rt("dispatch.retry", time=ts(0.2), request_id="r1", trace_id=f"{'a' * 16:0>32}",
                span_id="a" * 16, reason="conflict"),
             *rt_request("b" * 16, "r1", 2.0, 3.0)]
    refused = rt(WORKER_REFUSED, time=ts(0.1), request_id="r1", trace_id=f"{'a' * 16:0>32}",
                 span_id="c" * 16, parent_span_id="a" * 16, outcome="conflict",
                 service="worker-8101")
    Path("logs/frontend.jsonl").write_text("\n".join(front) + "\n")
    Path("logs/worker.jsonl").write_text(refused + "\n")
    view = view_of(["logs/frontend.jsonl", "logs/worker.jsonl"], "r1", limit=1)
    lines = rendered(view, width)
    assert max(len(line) for line in lines) <= width
    assert len(lines) == len(list(trace_lines(view, width)))  # no line was wrapped
    assert not any(line.strip() == "conflict" for line in lines)
    assert any(line.split()[1:3] == ["worker-0", "worker.refused"] for line in lines)
    assert any(line.split()[1:3] == ["frontend", "dispatch.retry"] for line in lines)
    assert any(line.split()[:1] == ["conflict"] and line.rstrip().endswith(":1")
               for line in lines) or any(
        line.split()[-2:] == ["conflict", "worker.jsonl:1"] for line in lines)


def test_waterfall_labels_of_many_blocks_and_workers_are_never_cut(tmp_path: Path) -> None:
    # The label column held 13 characters: `#100 frontend` read `#100 fronten`, and a
    # worker-only block's `#10 worker-12` read `#10 worker-1`, another worker's name.
    lines = [line for i in range(100)
             for line in rt_request(f"{i + 1:016x}", f"r{i}", i * 0.01, i * 0.01 + 0.005,
                                    xrid="shared")]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    work = [rt(event, time=ts(0.001 * k), service=f"worker-{k}", request_id="w",
               trace_id=f"{k:032x}", span_id=f"{k + 1:016x}", parent_span_id=f"{900 + k:016x}",
               outcome="ok")
            for k in range(13) for event in ("worker.start", "worker.end")]
    (tmp_path / "workers.jsonl").write_text("\n".join(work) + "\n")
    many = rendered(view_of([str(tmp_path / "frontend.jsonl")], "shared", limit=None))
    assert any(line.startswith(" #100 frontend ") for line in many)
    assert max(len(line) for line in many) <= 100
    workers = rendered(view_of([str(tmp_path / "workers.jsonl")], "w", limit=None))
    shown = {line.split()[1] for line in workers if "█" in line}
    assert shown == {f"worker-{k}" for k in range(13)}


@pytest.mark.parametrize(("numbers", "text"), [
    ([2], "#2"), ([3, 1], "#1 #3"), ([1, 2], "#1 #2"), ([4, 1, 2, 3, 9], "#1–#4 #9"),
    (range(2, 3001), "#2–#3000"), ([5, 5, 6, 7], "#5–#7"), ([], ""),
])
def test_block_numbers_in_runs_as_ranges(numbers: list[int], text: str) -> None:
    # Each of 3,000 callers holding one id listed the 2,999 others: 54 MB of numbers.
    assert numbered(numbers) == text


def test_a_chain_of_overlaps_is_not_said_to_hold_the_id_at_the_same_time(
    tmp_path: Path,
) -> None:
    # #1 with #2 and #2 with #3, but #1 ended before #3 started: "at the same time"
    # was false of them, as the bars showed.
    lines = [*rt_request("c1", "hot", 0.0, 0.2), *rt_request("c2", "hot", 0.15, 0.35),
             *rt_request("c3", "hot", 0.3, 0.5)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    assert "  ↕ #1–#3 held request hot at overlapping times" in rendered(
        view_of([str(tmp_path)], "hot"))
    # All three in flight together: at the same time.
    lines = [*rt_request("c1", "hot", 0.0, 0.4), *rt_request("c2", "hot", 0.15, 0.35),
             *rt_request("c3", "hot", 0.3, 0.5)]
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    assert "  ↕ #1–#3 held request hot at the same time" in rendered(
        view_of([str(tmp_path)], "hot"))


def test_a_crossing_s_note_stands_under_the_bracket_not_inside_it(tmp_path: Path) -> None:
    # A crossed caller followed in its group by another holder: its note was printed
    # between the two, the bracket's `│` missing there and going on after it.
    paths = write_incident(tmp_path)
    with open(paths[0], "a") as front:
        front.write("\n".join(rt_request("d" * 16, RID, 0.5, 1.3, xrid="client-d",
                                         fp_in="in-d")) + "\n")
    lines = rendered(view_of(paths, RID))
    top = next(i for i, line in enumerate(lines) if line.startswith("┌"))
    bottom = next(i for i, line in enumerate(lines) if line.startswith("└"))
    assert [line[:1] for line in lines[top + 1:bottom]] == ["│"] * (bottom - top - 1)
    assert bottom - top == 4  # three callers, two of them with a worker's bar
    assert lines[bottom + 1] == f"  ✗ #1 got output of span {SPAN_A} (#2)"


def test_an_unlinked_line_shows_which_unlinked_it_is(tmp_path: Path) -> None:
    # A displaced caller's "Unlinked request" and a reply nobody took, "Unlinked
    # response", both read as the bare event: the difference was the incident's.
    lines = [*rt_request(SPAN_A, RID, 0.0, 1.0)]
    for at, message in ((0.2, "Unlinked request; initiating request task was dropped"),
                        (0.9, "Unlinked response; response task was dropped")):
        lines.insert(-1, rt("response.unlinked", time=ts(at), message=message, level="ERROR",
                            request_id=RID, trace_id=f"{SPAN_A:0>32}", span_id=SPAN_A))
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    shown = rendered(view_of([str(tmp_path / "frontend.jsonl")], RID))
    at = [i for i, line in enumerate(shown) if " response.unlinked " in line]
    assert [shown[i + 1].strip() for i in at] == [
        "Unlinked request; initiating request task was dropped",
        "Unlinked response; response task was dropped"]
