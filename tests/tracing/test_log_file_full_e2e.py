"""A log file that takes no write costs log lines, not requests, and is said once.

`--log-file /dev/full` opens, as a file on a full disk does, and then refuses every
write (ENOSPC). The server served on, but every loguru record printed loguru's
multi-line "Logging error" report, a traceback, on stderr, and every batch of
ridtrace's own event lines one more line: a terminal that should hold one line held
pages of them. Now stderr holds one line saying that the log's lines are being lost.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.servers import child_pythonpath, free_port, run_server

SAID = ("ridtrace: cannot write to log file /dev/full: No space left on device; "
        "log lines are being lost")


def _work(number: int) -> dict[str, object]:
    return {"request_id": f"r-{number}", "endpoint": "completions", "model": "echo",
            "prompt": "hi", "max_tokens": 4}


@pytest.mark.parametrize("side", ["worker", "frontend"])
def test_a_log_file_that_refuses_writes_is_said_once_and_every_request_is_served(
    tmp_path: Path, side: str
) -> None:
    port = free_port()
    where = ["--worker", f"http://127.0.0.1:{free_port()}"] if side == "frontend" else []
    argv = ["-m", "ridtrace", "serve", side, "--host", "127.0.0.1", "--port", str(port),
            *where, "--log-file", "/dev/full"]
    env = {"PYTHONPATH": child_pythonpath()}
    with (
        run_server(argv, port=port, workdir=tmp_path, env=env, ready_path="/health") as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        if side == "worker":  # request.start / request.end: ridtrace's own events
            answers = [client.post("/v1/work", json=_work(n)) for n in range(3)]
            assert [a.status_code for a in answers] == [200] * 3, answers
        else:
            answers = [client.get(path) for path in ("/health", "/nowhere", "/health")]
            assert [a.status_code for a in answers] == [200, 404, 200], answers
    assert server.process.returncode is not None
    stderr = server.stderr_text()
    lines = stderr.splitlines()
    assert any(f"ridtrace serve {side}: listening on http://127.0.0.1:{port}, logging to "
               "/dev/full" == line for line in lines), stderr
    assert lines.count(SAID) == 1, stderr
    assert "Traceback" not in stderr and "Logging error" not in stderr, stderr
    assert "could not write" not in stderr, stderr
    assert len(lines) == 2, stderr  # the listening line and the one about the log


class _FillingDisk:
    """A binary stream that refuses writes while ``full``, as a full disk does."""

    name = "logs/app.jsonl"

    def __init__(self) -> None:
        self.full = True
        self.written = b""

    def write(self, data: bytes) -> int:
        if self.full:
            raise OSError(28, "No space left on device")
        self.written += data
        return len(data)

    def flush(self) -> None:
        pass


def test_refused_writes_are_said_once_until_one_gets_through(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # In-process, both paths that write the log: loguru's records and ridtrace's events.
    from loguru import logger

    from ridtrace.tracing import configure_logging
    from ridtrace.tracing.eventlog import EventLog

    disk = _FillingDisk()
    handler = configure_logging(disk, service="t", intercept_stdlib=False)  # type: ignore[arg-type]
    try:
        logger.info("lost 1")
        EventLog(__name__).info("lost.2", event="lost.2")  # no loop: written at once
        logger.info("lost 3")
        disk.full = False
        logger.info("kept")
        disk.full = True
        logger.info("lost again")
    finally:
        logger.remove(handler)
    err = capsys.readouterr().err
    said = ("ridtrace: cannot write to log file logs/app.jsonl: No space left on device; "
            "log lines are being lost")
    assert err.splitlines() == [
        said, "ridtrace: writing to log file logs/app.jsonl again; 3 log lines lost", said,
    ], err
    assert b'"kept"' in disk.written and b"lost" not in disk.written
