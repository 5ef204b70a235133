"""`audit --plot FILE` writes FILE, in the format its name asks for, or says why not.

matplotlib picks the format from the name's extension and, when there is none, appends
``.png`` to the name: ``--plot usage`` wrote ``usage.png`` beside the path asked for,
``--plot /dev/full`` created ``/dev/full.png`` (exit 0, no error), and a name whose
extension is no image format (``use.txt``, ``report.json``) stopped the audit with
matplotlib's ValueError, a traceback and exit 4 ("ridtrace itself failed").
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli.main import main
from tests.forensics.helpers import rt_request
from tests.support.extras import require_extra

require_extra("plot")


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "frontend.jsonl"
    log.write_text("\n".join(rt_request("a" * 16, "r1", 0, 2)) + "\n")
    return log


def test_a_plot_named_without_an_extension_is_that_file_as_png(tmp_path: Path) -> None:
    log = _log(tmp_path)
    plot = tmp_path / "usage"
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", str(plot), "-q"])
    assert result.exit_code == 0, result.output
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "usage.png").exists()


def test_a_plot_to_a_full_device_is_exit_2(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    log = _log(tmp_path)
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", "/dev/full", "-q"])
    assert result.exit_code == 2, result.output
    assert "cannot write /dev/full: No space left on device" in result.stderr


@pytest.mark.parametrize("name", ["use.txt", "report.json"])
def test_a_plot_named_for_no_image_format_is_exit_2(tmp_path: Path, name: str) -> None:
    log = _log(tmp_path)
    plot = tmp_path / name
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", str(plot), "-q"])
    assert result.exit_code == 2, result.output
    assert f"cannot write {plot}: " in result.stderr
    assert "png" in result.stderr and "svg" in result.stderr  # the formats it can write
    assert not plot.exists()


@pytest.mark.parametrize(("name", "magic"), [("use.svg", b"<?xml"), ("USE.PNG", b"\x89PNG")])
def test_a_plot_is_written_in_the_format_its_name_asks_for(
    tmp_path: Path, name: str, magic: bytes,
) -> None:
    log = _log(tmp_path)
    plot = tmp_path / name
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", str(plot), "-q"])
    assert result.exit_code == 0, result.output
    assert plot.read_bytes().startswith(magic)


def test_a_plot_to_dash_is_bad_usage_not_a_file_named_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `-o -` is standard output, as `-` is standard input among the PATHs; `--plot -`
    # silently wrote a PNG named "-" in the working directory, exit 0, and the report
    # the user may have redirected to an image file was the table.
    log = _log(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", "-", "-q"])
    assert result.exit_code == 2, result.output
    assert "--plot" in result.stderr and "standard output" in result.stderr
    assert not (tmp_path / "-").exists()
    assert result.stdout == ""  # refused before the read, as any bad usage


def test_a_pgf_plot_without_latex_is_exit_2_naming_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The error for `use.txt` lists .pgf among the formats it writes, and matplotlib's pgf
    # backend sets the text through a TeX system it runs (xelatex): on a machine without
    # one (a plain `pip install 'ridtrace[plot]'`) the audit stopped with matplotlib's
    # RuntimeError, a traceback and exit 4, "ridtrace itself failed, please report it".
    log = _log(tmp_path)
    plot = tmp_path / "use.pgf"
    no_tools = tmp_path / "empty-bin"
    no_tools.mkdir()
    monkeypatch.setenv("PATH", str(no_tools))
    result = CliRunner().invoke(main, ["audit", str(log), "--plot", str(plot), "-q"])
    assert result.exit_code == 2, (result.output, result.exception)
    assert f"cannot write {plot}: " in result.stderr and "xelatex" in result.stderr
    assert ".pdf" in result.stderr  # what to name it instead
    assert not plot.exists()


def test_a_plot_named_for_no_image_format_is_refused_before_the_logs_are_read(
    tmp_path: Path,
) -> None:
    # It was refused after the whole read (3 s on 200 MB; the bad-line warnings of a
    # read that served nothing printed first), where a bad -o is refused before it.
    log = _log(tmp_path)
    with log.open("a") as out:
        out.write("{torn\n")
    read = CliRunner().invoke(main, ["audit", str(log), "--plot", str(tmp_path / "u.png")])
    assert "bad line" in read.stderr  # what the read says of this log
    refused = CliRunner().invoke(main, ["audit", str(log), "--plot", str(tmp_path / "u.txt")])
    assert refused.exit_code == 2, refused.output
    assert "no image format" in refused.stderr
    assert "bad line" not in refused.stderr
