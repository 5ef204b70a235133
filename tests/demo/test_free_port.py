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
