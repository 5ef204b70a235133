"""What the text views print on a real terminal: its width, and colour only when wanted."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ridtrace.testing.synth import SynthSpec, SynthTruth, write_logs
from tests.support.terminal import run_on_terminal


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthTruth]:
    out = tmp_path_factory.mktemp("logs")
    return out, write_logs(out, SynthSpec(requests=120, deprecated_every=20))


OnTerminal = Callable[..., tuple[int, str]]


@pytest.fixture(scope="module")
def on_terminal() -> OnTerminal:
    """`run_on_terminal`, each command at each width run once for the module: the narrow
    layout tests and the padding test read the same runs (analyze and trace, 60 columns),
    about a CPU-second each."""
    runs: dict[tuple[tuple[str, ...], int], tuple[int, str]] = {}

    def run(*args: str, columns: int) -> tuple[int, str]:
        if (args, columns) not in runs:
            runs[args, columns] = run_on_terminal(*args, columns=columns)
        return runs[args, columns]

    return run


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _collided(truth: SynthTruth) -> str:
    return min(key for kind, key in truth.expected if kind == "duplicate_in_flight")


@pytest.mark.parametrize("command", ["analyze", "trace", "audit"])
def test_no_color_means_no_escape_codes_on_a_terminal(
    logs: tuple[Path, SynthTruth], command: str,
) -> None:
    # https://no-color.org: the views passed no_color=False to rich, which then ignored
    # the variable and coloured a terminal whose user had asked for none.
    path, truth = logs
    args = [command, *([_collided(truth)] if command == "trace" else []), str(path), "-q"]
    _, coloured = run_on_terminal(*args, columns=140)
    assert "\x1b[" in coloured  # on a terminal, colour by default
    _, plain = run_on_terminal(*args, columns=140, env={"NO_COLOR": "1"})
    assert "\x1b" not in plain, plain[:400]
    # The same text, laid out for the same terminal: only the colour is gone.
    assert plain == _ANSI.sub("", coloured)


def _lines(text: str) -> list[str]:
    return _ANSI.sub("", text).splitlines()


@pytest.mark.parametrize("columns", [60, 80])
def test_analyze_findings_read_whole_on_a_narrow_terminal(
    logs: tuple[Path, SynthTruth], on_terminal: OnTerminal, columns: int,
) -> None:
    # Seven columns in 60 made every cell a few letters a line: "dupli / cate_ / in_fl",
    # times and file:line cut in four. A narrow terminal gets one block per finding.
    path, truth = logs
    code, out = on_terminal("analyze", str(path), "-q", columns=columns)
    assert code == 1
    lines = _lines(out)
    assert max(map(len, lines)) <= columns
    text = "\n".join(lines)
    kinds = {kind for kind, _ in truth.expected if kind != "client_id_reuse"}
    for kind in kinds:  # each kind name whole on a line of its own block
        assert any(line.startswith(kind) for line in lines), (kind, text)
    assert "2026-11-29T10:00:00." in text
    assert "frontend.jsonl:" in text
    rid = _collided(truth)
    assert any(line.split() == ["request_id", rid] for line in lines), text


@pytest.mark.parametrize("command", ["analyze", "audit", "trace"])
def test_no_line_ends_in_padding(
    logs: tuple[Path, SynthTruth], on_terminal: OnTerminal, command: str,
) -> None:
    # A finding block's fields and the centred summary title were padded to the width:
    # two lines in three ended in blanks, noise in a diff or a pasted report.
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    path, truth = logs
    args = [command, *([_collided(truth)] if command == "trace" else []), str(path), "-q"]
    for columns in (60, 100):
        _, shown = on_terminal(*args, columns=columns)
        piped = CliRunner().invoke(main, args, env={"COLUMNS": str(columns)}).stdout
        for text in (_ANSI.sub("", shown), piped):
            padded = [line for line in text.splitlines() if line != line.rstrip()]
            assert not padded, padded[:5]
            assert len(text.splitlines()) > 10


@pytest.mark.parametrize("columns", [40, 60, 80, 200])
def test_trace_fits_the_terminal(
    logs: tuple[Path, SynthTruth], on_terminal: OnTerminal, columns: int,
) -> None:
    # trace was laid out for at least 100 columns: on 60 or 80 every waterfall row,
    # header and event line wrapped; on 200 the waterfall used half the screen.
    path, truth = logs
    code, out = on_terminal("trace", _collided(truth), str(path), "-q", columns=columns)
    assert code == 0
    lines = _lines(out)
    assert max(map(len, lines)) <= columns
    if columns == 200:
        assert max(map(len, lines)) > 150  # the bars use the room there is
    bars = [line for line in lines if "█" in line]
    assert len(bars) == 4  # two callers and their worker spans, one row each


def test_columns_lays_out_trace_and_analyze_for_a_pipe_too(
    logs: tuple[Path, SynthTruth],
) -> None:
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    path, truth = logs
    piped = CliRunner().invoke(main, ["trace", _collided(truth), str(path), "-q"])
    assert 90 < max(map(len, piped.stdout.splitlines())) <= 100  # unset: the stable 100
    for args in (["trace", _collided(truth)], ["analyze"]):
        narrow = CliRunner().invoke(main, [*args, str(path), "-q"], env={"COLUMNS": "60"})
        assert "\x1b" not in narrow.stdout
        assert max(map(len, narrow.stdout.splitlines())) <= 60, narrow.stdout


def test_columns_past_the_widest_or_below_the_narrowest_layout_are_held_to_it(
    logs: tuple[Path, SynthTruth],
) -> None:
    # COLUMNS=10000000 made trace's bars that wide (42 s, 1.4 GB, 363 MB written);
    # COLUMNS=1 cut analyze's summary into a character a line.
    from click.testing import CliRunner

    from ridtrace.cli.main import main

    path, truth = logs
    wide = CliRunner().invoke(main, ["trace", _collided(truth), str(path), "-q"],
                              env={"COLUMNS": "10000000"})
    assert 900 < max(map(len, wide.stdout.splitlines())) <= 1000
    for args in (["trace", _collided(truth)], ["analyze"], ["audit"]):
        narrow = CliRunner().invoke(main, [*args, str(path), "-q"], env={"COLUMNS": "1"})
        assert 30 < max(map(len, narrow.stdout.splitlines())) <= 40, narrow.stdout
    summary = CliRunner().invoke(main, ["analyze", str(path), "-q"], env={"COLUMNS": "1"})
    assert "duplicate_in_flight" in summary.stdout  # a key whole on its line


@pytest.mark.parametrize("by", ["header", "client", "route"])
def test_audit_rows_read_whole_on_a_narrow_terminal(
    logs: tuple[Path, SynthTruth], by: str,
) -> None:
    # Six columns in 60 cut the header names and the times into pieces ("x-dynam /
    # o-reque / st-id"); wide enough, the table stays.
    path, _ = logs
    code, out = run_on_terminal("audit", str(path), "--by", by, "-q", columns=60)
    assert code == 0
    lines = _lines(out)
    assert max(map(len, lines)) <= 60
    text = "\n".join(lines)
    for whole in ("x-dynamo-request-id", "request-id", "2026-11-29T10:00:00."):
        assert any(whole in line for line in lines), (whole, text)
    assert sum(line.split()[:1] == ["first_seen"] for line in lines) == len(
        [line for line in lines if line.split()[:1] == ["last_seen"]]) >= 2
    _, wide = run_on_terminal("audit", str(path), "--by", by, "-q", columns=200)
    assert "┏" in wide  # the table


@pytest.mark.parametrize("columns", [140, 160, 200])
def test_the_findings_table_keeps_times_and_uuid_ids_whole(tmp_path: Path, columns: int) -> None:
    # Server-minted ids are UUIDs: beside them the table folded each time after its
    # 25th character ("2026-11-29T10:00:00.10000" / "0Z", which reads as another time)
    # and each id in two, in a file (160 columns) as on a terminal.
    from click.testing import CliRunner

    from ridtrace.cli.main import main
    from tests.forensics.helpers import rt_request

    rid = "0b1c2d3e-4f50-4a61-b728-394a5b6c7d8e"
    lines = (rt_request("a" * 16, rid, 0.1, 0.5, xrid="client-x")
             + rt_request("b" * 16, rid, 0.2, 0.6, xrid="client-y"))
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(main, ["analyze", str(tmp_path), "-q"],
                                env={"COLUMNS": str(columns)})
    assert result.exit_code == 1, result.stderr
    rows = result.stdout.splitlines()
    assert max(map(len, rows)) <= columns
    finding = [row for row in rows if "duplicate_in_flight │ error" in row]
    assert finding and "│ 2026-11-29T10:00:00.100000Z │" in finding[0], "\n".join(rows)
    if columns >= 160:
        assert f"│ {rid} │ client-x     │" in finding[0], "\n".join(rows)


def test_trace_cites_kubernetes_pod_logs_readably_on_80_columns(
    logs: tuple[Path, SynthTruth], tmp_path: Path,
) -> None:
    # /var/log/pods/<ns>_<pod>_<uid>/<container>/0.log: relative to the pods directory,
    # each file:line was still over 80 columns, so it began at column 0 and the terminal
    # broke it mid-path, on every event of the trace.
    path, truth = logs
    pods = tmp_path / "var" / "log" / "pods"
    uid = "3f1c2a9e-8b7d-4c6e-9a1f-2b3c4d5e6f7a"
    for log in sorted(path.glob("*.jsonl")):
        name = log.stem.replace("-", "")
        container = pods / f"inference-prod_{name}-7f9c8d6b5-x2kqp_{uid}" / name
        container.mkdir(parents=True)
        (container / "0.log").write_bytes(log.read_bytes())
    code, out = run_on_terminal("trace", _collided(truth), str(pods), "--limit", "2",
                                "-q", columns=80)
    assert code == 0, out
    lines = [line.rstrip() for line in _lines(out)]
    assert max(map(len, lines)) <= 80, "\n".join(lines)
    text = "\n".join(lines)
    assert "cited by number (names too long for 80 columns):" in text, text
    legend = lines.index(next(line for line in lines if "cited by number" in line))
    # The path broken after a '/', each directory's name whole.
    assert [line.strip() for line in lines[legend + 1:legend + 4]] == [
        "f1", f"inference-prod_frontend-7f9c8d6b5-x2kqp_{uid}/", "frontend/0.log",
    ], text
    events = [line for line in lines if line.startswith("      +")]
    assert events and all(re.search(r"  f\d:\d+$", line) for line in events), text


@pytest.mark.parametrize("command", ["analyze", "trace", "audit"])
def test_dash_as_output_on_a_terminal_is_laid_out_as_standard_output(
    logs: tuple[Path, SynthTruth], command: str,
) -> None:
    # `-o -` is standard output, but its text was laid out as for a file: 160 columns
    # of table (100 for trace) folded by an 80-column terminal, and never coloured.
    path, truth = logs
    args = [command, *([_collided(truth)] if command == "trace" else []), str(path), "-q"]
    _, out = run_on_terminal(*args, "-o", "-", columns=80)
    assert "\x1b[" in out
    assert max(map(len, _lines(out))) <= 80


@pytest.mark.parametrize("option", [
    ["-o", "/nonexistent-ridtrace/\x1b]0;TITLE\x07\x1b[31mX"],
    pytest.param(["--plot", "x\x1b[2J.txt"], marks=pytest.mark.extra("plot")),
])
def test_an_output_path_in_an_error_is_shown_not_obeyed(
    logs: tuple[Path, SynthTruth], option: list[str],
) -> None:
    # click only strips escape codes off a stderr that is no terminal: on one, a path's
    # OSC retitled the window and its CSI cleared the screen.
    command = "audit" if option[0] == "--plot" else "analyze"
    code, out = run_on_terminal(command, str(logs[0]), "-q", *option, columns=120)
    assert code == 2 and "cannot write" in out
    assert "\x1b]" not in out and "\x1b[2J" not in out and "\x1b[31m" not in out, out


@pytest.mark.parametrize(("folder", "name"), [("ab", "frontend.jsonl"),
                                            ("日志", "前端服务器日志文件.jsonl")])
def test_the_findings_table_never_folds_a_citation_inside_its_line_number(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str, name: str,
) -> None:
    # In a file (160 columns) the evidence column was 19 wide: "ab/frontend.jsonl:50,"
    # showed as "ab/frontend.jsonl:5" over "0,", a whole citation of another line. A
    # name of wide (CJK) characters was folded by characters, not terminal cells.
    from click.testing import CliRunner

    from ridtrace.cli.main import main
    from tests.cli.helpers import analyze_json
    from tests.forensics.helpers import rt_request

    rid = "0b1c2d3e-4f50-4a61-b728-394a5b6c7d8e"
    (tmp_path / folder).mkdir()
    lines = [line for n in range(600) for line in rt_request(f"{n + 1:016x}", f"r{n}", n, n + 0.5)]
    lines += [line for span in "fedc" for line in rt_request(span * 16, rid, 620.1, 620.5)]
    (tmp_path / folder / name).write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    _, doc = analyze_json(folder)
    want = [e["line"] for e in doc["findings"][0]["evidence"][:4]]
    for columns in range(140, 221, 8):
        result = CliRunner().invoke(main, ["analyze", folder, "-q"],
                                    env={"COLUMNS": str(columns)})
        assert result.exit_code == 1, result.stderr
        rows = [row for row in result.stdout.splitlines() if row.startswith("│")]
        evidence = [row.rstrip(" │").rsplit("│", 1)[-1].strip() for row in rows]
        shown = [int(n) for cell in evidence for n in re.findall(r"\.jsonl:(\d+)", cell)]
        assert shown == want, "\n".join(rows)
        assert "… +4 more" in result.stdout


def test_one_long_citation_leaves_the_short_ones_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pod log's long path among short ones: the evidence column fell to 16, and every
    # short citation folded, where the detail beside it took the room left.
    from click.testing import CliRunner

    from ridtrace.cli.main import main
    from tests.forensics.helpers import rt_request

    (tmp_path / "logs").mkdir()
    rid = "0b1c2d3e-4f50-4a61-b728-394a5b6c7d8e"
    (tmp_path / "logs" / "frontend.jsonl").write_text("\n".join(
        rt_request("a" * 16, rid, 0.1, 0.5) + rt_request("b" * 16, rid, 0.2, 0.6)) + "\n")
    (tmp_path / "logs" / f"{'p' * 70}.jsonl").write_text("\n".join(
        rt_request("c" * 16, rid, 0.3, 0.7)) + "\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["analyze", "logs", "-q"], env={"COLUMNS": "180"})
    assert result.exit_code == 1, result.stderr
    assert "evidence in files under logs/" in result.stdout, result.stdout
    assert "│ frontend.jsonl:1," in result.stdout, result.stdout


def test_a_long_folder_leaves_the_tables_citations_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The table cited every file by its whole path: under a long folder, with ids of 9
    # characters, the evidence column was 21 wide and each citation folded in its name
    # ("demo/legacy/l" over "ogs/frontend.jsonl:8,"). The blocks cited them relatively.
    from click.testing import CliRunner

    from ridtrace.cli.main import main
    from tests.forensics.helpers import rt_request

    logs = tmp_path / ("deep-" * 12) / "legacy" / "logs"
    logs.mkdir(parents=True)
    (logs / "frontend.jsonl").write_text("\n".join(
        rt_request("a" * 16, "rollout-7", 0.1, 0.5) + rt_request("b" * 16, "rollout-7", 0.2, 0.6))
        + "\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["analyze", str(logs.relative_to(tmp_path)), "-q"],
                                env={"COLUMNS": "140"})
    assert result.exit_code == 1, result.stderr
    assert f"evidence in files under {logs.relative_to(tmp_path)}/" in result.stdout
    cells = [line.rsplit("│", 2)[1].strip() for line in result.stdout.splitlines()
             if line.startswith("│") and line.count("│") == 8]
    cited = [c for cell in cells for c in cell.replace(",", " ").split()]
    assert cited and all(re.fullmatch(r"frontend\.jsonl:\d+", c) for c in cited), cells


def test_at_forty_columns_a_blocks_time_is_whole_under_its_key(tmp_path: Path) -> None:
    # Beside its key the time had 24 columns of its 27: "…T10:00:00.1000" over "00Z".
    from click.testing import CliRunner

    from ridtrace.cli.main import main
    from tests.forensics.helpers import rt_request

    (tmp_path / "frontend.jsonl").write_text("\n".join(
        rt_request("a" * 16, "r-1", 0.1, 0.5) + rt_request("b" * 16, "r-1", 0.2, 0.6)) + "\n")
    result = CliRunner().invoke(main, ["analyze", str(tmp_path), "-q"], env={"COLUMNS": "40"})
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 40 for line in lines), lines
    times = [line.strip() for line in lines if re.fullmatch(r"\s*\d{4}-\d\d-\d\dT[\d:.]+Z", line)]
    assert times and all(len(t) == len("2026-11-29T10:00:00.100000Z") for t in times), lines


@pytest.mark.parametrize("columns", [100, 90, 40])
def test_a_finding_block_never_breaks_a_quoted_citation_at_its_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: int,
) -> None:
    # Below the table's width a finding is a block, whose evidence the grid wrapped at
    # spaces: "… 'front" over "end.jsonl':15", read as two citations, where the whole
    # citation fitted on a line of its own.
    from click.testing import CliRunner

    from ridtrace.cli.main import main
    from tests.forensics.helpers import rt_request

    (tmp_path / "logs").mkdir()
    rid = "0b1c2d3e-4f50-4a61-b728-394a5b6c7d8e"
    lines = [line for span in "fedcba" for line in rt_request(span * 16, rid, 0.1, 0.5)]
    (tmp_path / "logs" / "front end.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["analyze", "logs", "-q"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 1, result.stderr
    text = result.stdout
    at = text.index("\n  evidence") + 1
    block = text[at:].split("\n\n", 1)[0]
    citations = re.findall(r"'front end\.jsonl':\d+", block)
    assert len(citations) == 4, block
    assert "'front\n" not in block and "'front \n" not in block
    assert max(len(row) for row in block.splitlines()) <= columns
