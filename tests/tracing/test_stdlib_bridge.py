"""The standard library's records in loguru: they keep where they were logged."""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

from loguru import logger

from ridtrace import configure_logging


def _log_from_a_library() -> int:
    """Logs one standard-library warning; returns the line it was logged on."""
    line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
    logging.getLogger("some.library").warning("from a library")
    return line


def test_a_stdlib_record_keeps_its_call_site_in_other_loguru_handlers(tmp_path: Path) -> None:
    # Loguru's default stderr handler (and any console handler an application adds) shows
    # `{name}:{function}:{line}`. Every uvicorn and library line read
    # `uvicorn.error:_forward:85`, the bridge's own function and line, on every terminal
    # running a configure_logging app under uvicorn, whatever logged it.
    records: list[dict[str, Any]] = []
    configure_logging(tmp_path / "app.jsonl", service="svc")
    probe = logger.add(lambda message: records.append(message.record), format="{message}")
    try:
        line = _log_from_a_library()
    finally:
        logger.remove(probe)
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    (record,) = records
    assert record["name"] == "some.library"
    assert (record["function"], record["line"]) == ("_log_from_a_library", line)
    assert record["module"] == "test_stdlib_bridge"
    assert record["file"].name == "test_stdlib_bridge.py"
    assert record["file"].path == __file__
