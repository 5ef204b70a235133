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


@pytest.fixture
def bound(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The addresses `serve` would have listened on. Stand-ins for what would start
    serving, so that without a check a test fails on its assertion rather than
    listening on every interface."""
    hosts: list[str] = []
    monkeypatch.setattr(serve_module, "setup_telemetry", lambda *args: None)
    monkeypatch.setattr(serve_module, "check_open_file_limit", lambda *args: None)
    monkeypatch.setattr(serve_module, "run_server", lambda app, host, *a, **k: hosts.append(host))
    return hosts


@pytest.mark.parametrize("host", ["", " "])
@pytest.mark.parametrize("side", [["frontend", "--worker", "http://127.0.0.1:9"], ["worker"]])
def test_an_empty_bind_address_is_refused_not_every_interface(
    tmp_path: Path, bound: list[str], host: str, side: list[str]
) -> None:
    result = CliRunner().invoke(main, ["serve", *side, "--host", host, "--port", "1",
                                       "--log-file", str(tmp_path / "x.jsonl")])
    assert bound == []
    assert result.exit_code == 2, result.output
    assert "--host" in result.output and "0.0.0.0" in result.output, result.output


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "http://127.0.0.1:8000", "localhost:8101"])
def test_a_host_with_a_port_or_scheme_is_bad_usage(
    tmp_path: Path, bound: list[str], host: str
) -> None:
    # Pasted from a URL, it went to the resolver whole: exit 3, "could not start
    # (address in use, or the app failed at startup)", and a log line naming no option.
    result = CliRunner().invoke(main, ["serve", "worker", "--host", host, "--port", "1",
                                       "--log-file", str(tmp_path / "x.jsonl")])
    assert (result.exit_code, bound) == (2, []), result.output
    assert "a port goes in --port" in result.output


@pytest.mark.parametrize(("host", "bound_as"), [("::1", "::1"), ("[::1]", "::1"), ("::", "::")])
def test_an_ipv6_address_is_still_taken(
    tmp_path: Path, bound: list[str], host: str, bound_as: str
) -> None:
    result = CliRunner().invoke(main, ["serve", "worker", "--host", host, "--port", "1",
                                       "--log-file", str(tmp_path / "x.jsonl")])
    assert (result.exit_code, bound) == (0, [bound_as]), result.output


@pytest.mark.parametrize(("host", "why"), [
    ("127.0.0.1 ", "holds a space or control character"),
    ("local\thost", "holds a space or control character"),
    ("nosuchhost.invalid", "no address of that name"),
])
def test_a_host_no_resolver_knows_is_bad_usage(
    tmp_path: Path, bound: list[str], host: str, why: str
) -> None:
    # It failed the start as exit 3, "address in use, or the app failed at startup",
    # the log naming neither the host nor --host ("Name or service not known").
    result = CliRunner().invoke(main, ["serve", "worker", "--host", host, "--port", "1",
                                       "--log-file", str(tmp_path / "x.jsonl")])
    assert bound == []
    assert result.exit_code == 2, result.output
    assert "--host" in result.output and why in result.output, result.output


@pytest.mark.parametrize("url", ["http://[::1", "http://[fe80::1"])
def test_a_worker_url_that_is_no_url_is_refused_by_name(tmp_path: Path, bound: list[str],
                                                         url: str) -> None:
    # Only "Error: Invalid IPv6 URL" was printed, naming neither the option nor the URL.
    for args, env in ((["--worker", url], {}), ([], {"RIDTRACE_FRONTEND_WORKERS": url})):
        result = CliRunner().invoke(
            main, ["serve", "frontend", *args, "--port", "1", "--log-file",
                   str(tmp_path / "x.jsonl")], env=env)
        assert bound == []
        assert result.exit_code == 2, result.output
        assert f"worker URL {url!r}: Invalid IPv6 URL" in result.output, result.output
