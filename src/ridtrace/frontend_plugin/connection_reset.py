"""An ASGI extension `ridtrace serve` offers: reset the connection once the app returns.

A stream let go because its client stopped reading cannot reach it whole; closed
gracefully, the server holds the connection until the client reads what is buffered,
which a stalled client never does (`ridtrace.cli.cut_short`). Under another server the
extension is absent and nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["RESET_EXTENSION", "connection_reset"]

RESET_EXTENSION = "ridtrace.connection.reset"


def connection_reset(scope: Mapping[str, Any]) -> Callable[[], None] | None:
    """What resets `scope`'s connection when its app returns, if its server offers it."""
    offered = (scope.get("extensions") or {}).get(RESET_EXTENSION)
    reset = offered.get("reset") if isinstance(offered, dict) else None
    return reset if callable(reset) else None
