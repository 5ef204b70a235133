"""The demo's table of deprecated headers on a narrow terminal."""

from __future__ import annotations

import io

import pandas as pd
from rich.console import Console

from ridtrace.demo.report import audit_table


def test_an_80_column_terminal_shows_each_header_name_whole() -> None:
    seen = pd.Timestamp("2026-12-07 05:17:10", tz="UTC")
    audit = pd.DataFrame({
        "header": ["x-dynamo-request-id", "request-id"], "requests": [23, 16],
        "clients": [1, 1], "first_seen": [seen, seen], "last_seen": [seen, seen],
    })
    out = io.StringIO()
    audit_table(Console(file=out, width=80), audit)
    lines = out.getvalue().splitlines()
    assert max(map(len, lines)) <= 80
    assert any("x-dynamo-request-id" in line for line in lines), out.getvalue()
    assert sum(line.count("2026-12-07") for line in lines) == 4, out.getvalue()
