"""`--host ""`: an empty bind address, as `--host "$BIND"` gives with the variable unset.

The socket layer reads an empty address as every interface, so the server listened on
0.0.0.0 and :: (and, bound off loopback, answered any `Host`): a worker or a keyless
frontend meant for this machine alone was open to the network, without a word but the
listening line. It is refused as bad usage, before anything is bound.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ridtrace.cli import serve as serve_module
from ridtrace.cli.main import main


@pytest.mark.parametrize("host", ["", " "])
@pytest.mark.parametrize("side", [["frontend", "--worker", "http://127.0.0.1:9"], ["worker"]])
def test_an_empty_bind_address_is_refused_not_every_interface(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str, side: list[str]
) -> None:
    bound: list[str] = []
    # Stand-ins for what would start serving, so that without the check the test fails
    # on its assertion rather than listening on every interface.
    monkeypatch.setattr(serve_module, "setup_telemetry", lambda *args: None)
    monkeypatch.setattr(serve_module, "check_open_file_limit", lambda *args: None)
    monkeypatch.setattr(serve_module, "run_server", lambda app, host, *a, **k: bound.append(host))
    result = CliRunner().invoke(main, ["serve", *side, "--host", host, "--port", "1",
                                       "--log-file", str(tmp_path / "x.jsonl")])
    assert bound == []
    assert result.exit_code == 2, result.output
    assert "--host" in result.output and "0.0.0.0" in result.output, result.output
