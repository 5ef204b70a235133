"""Idle pooled connections must expire on the client before the server closes them.

Otherwise a request sent on a connection the server is just closing fails with a
ReadError before any byte of the answer (equal 5 s defaults in httpx and uvicorn made
a fresh-clone demo run fail that way).
"""

from __future__ import annotations

import asyncio
import inspect

from ridtrace.cli import serve_run
from ridtrace.frontend_plugin import Dispatcher, FrontendSettings
from ridtrace.frontend_plugin.wire import CLIENT_KEEP_ALIVE_SECONDS, SERVER_KEEP_ALIVE_SECONDS


def test_client_expiry_is_well_below_the_servers_keep_alive() -> None:
    assert CLIENT_KEEP_ALIVE_SECONDS * 2 <= SERVER_KEEP_ALIVE_SECONDS
    assert "timeout_keep_alive=SERVER_KEEP_ALIVE_SECONDS" in inspect.getsource(serve_run.run_server)


def test_dispatcher_pool_uses_the_short_expiry() -> None:
    async def check() -> float:
        dispatcher = Dispatcher(FrontendSettings(workers=("http://127.0.0.1:9",)))
        try:
            return dispatcher.connections().keep_alive
        finally:
            await dispatcher.aclose()

    assert asyncio.run(check()) == CLIENT_KEEP_ALIVE_SECONDS
