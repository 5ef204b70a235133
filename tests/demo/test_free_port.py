"""free_port: ports that neither a client's connection nor a sibling server can take first."""

from __future__ import annotations

import socket

import pytest

from ridtrace.demo import processes
from ridtrace.demo.processes import free_port


def test_ports_come_from_below_the_ephemeral_range() -> None:
    # bind(0) and outgoing connections draw from the ephemeral range; a port from there
    # could be taken by a connection before the server under test bound it.
    low, _ = processes._ephemeral_range()
    ports = [free_port() for _ in range(50)]
    assert all(processes._LOWEST_PORT <= port < low for port in ports)


def test_no_port_is_handed_out_twice() -> None:
    ports = [free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)


def test_a_port_someone_listens_on_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        busy = taken.getsockname()[1]
        processes._handed_out.discard(busy)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", free_port()))
            idle = probe.getsockname()[1]
        processes._handed_out.discard(idle)
        choices = iter([busy, idle])

        class Scripted:
            def randrange(self, low: int, high: int) -> int:
                return next(choices)

        monkeypatch.setattr(processes.secrets, "SystemRandom", Scripted)
        assert free_port() == idle


def test_processes_given_their_own_shares_never_pick_the_same_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pytest-xdist's workers each start servers: without shares two of them could pick
    # one port before either server bound it (each process knows only its own picks).
    picked = {}
    for share in range(3):
        monkeypatch.setenv("RIDTRACE_PORT_SHARE", f"{share}/3")
        # As a separate process: it knows nothing of the others' picks (the worker's own
        # set comes back after the test).
        monkeypatch.setattr(processes, "_handed_out", set())
        picked[share] = {free_port() for _ in range(200)}
        assert {port % 3 for port in picked[share]} == {share}
    assert not (picked[0] & picked[1] or picked[0] & picked[2] or picked[1] & picked[2])


@pytest.mark.parametrize("malformed", ["", "3/3", "-1/2", "a/b", "1"])
def test_a_malformed_share_is_the_whole_range(
    monkeypatch: pytest.MonkeyPatch, malformed: str
) -> None:
    monkeypatch.setenv("RIDTRACE_PORT_SHARE", malformed)
    assert processes._port_share() == (0, 1)
    assert free_port() >= processes._LOWEST_PORT


def test_no_free_port_is_the_stacks_failure_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every port taken: an OSError, which the demo reported as "internal error" with a
    # traceback (exit 4) where docs/cli.md promises its one line and exit 1.
    class Taken(socket.socket):
        def bind(self, address: object) -> None:
            raise OSError("address in use")

    monkeypatch.setattr(processes.socket, "socket", Taken)
    with pytest.raises(processes.StackDidNotStart, match="no free loopback port"):
        free_port()
