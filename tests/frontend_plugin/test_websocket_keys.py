"""`SharedSecretMiddleware` guards WebSocket routes as it guards HTTP ones.

Any scope but ``http`` went straight through, so in an app that mounts the frontend's
router with a WebSocket route of its own (a realtime endpoint, say) and adds the key
check as the docs say, that route took every connection without a key. A handshake
without one is now denied before the app sees it: 401 with ``WWW-Authenticate`` where
the server can send a denial response, a close with 1008 (policy violation) otherwise.
"""

from __future__ import annotations

import asyncio

import pytest
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.testclient import TestClient, WebSocketDenialResponse
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from ridtrace.frontend_plugin import SharedSecretMiddleware


async def _hello(websocket: WebSocket) -> None:
    await websocket.accept()
    await websocket.send_text("hello")
    await websocket.close()


def _app() -> SharedSecretMiddleware:
    app = Starlette(routes=[WebSocketRoute("/v1/realtime", _hello),
                            WebSocketRoute("/health", _hello)])
    return SharedSecretMiddleware(app, secrets=("k1",))


def test_a_handshake_without_a_key_is_denied_with_401() -> None:
    client = TestClient(_app())  # it offers the denial-response extension
    for headers in ({}, {"authorization": "Bearer wrong"}):
        with pytest.raises(WebSocketDenialResponse) as denied, \
                client.websocket_connect("/v1/realtime", headers=headers):
            pass
        assert denied.value.status_code == 401
        assert denied.value.headers["www-authenticate"].startswith("Bearer")
        assert "API key" in denied.value.json()["error"]["message"]


def test_a_handshake_with_a_key_or_on_an_open_path_is_served() -> None:
    client = TestClient(_app())
    for path, headers in (("/v1/realtime", {"authorization": "Bearer k1"}),
                          ("/v1/realtime", {"x-api-key": "k1"}), ("/health", {})):
        with client.websocket_connect(path, headers=headers) as websocket:
            assert websocket.receive_text() == "hello"


def test_without_the_denial_extension_the_handshake_is_closed_1008() -> None:
    served = False

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal served
        served = True

    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {"type": "websocket.connect"}

    scope = {"type": "websocket", "path": "/v1/realtime", "headers": [], "extensions": {}}
    check = SharedSecretMiddleware(app, secrets=("k1",))
    asyncio.run(check(scope, receive, send))  # type: ignore[arg-type]
    assert not served
    assert sent == [{"type": "websocket.close", "code": 1008, "reason": "missing API key"}]
