"""A crash in a route the frontend's router serves answers in the API's JSON error shape.

`GET /v1/models?limit=` with thousands of digits crashed (fixed since): the caller got
Starlette's plain-text `Internal Server Error`, where every other error of the frontend,
its 404, 405, 401 and 421 included, is the API's JSON, so the OpenAI SDK's error had no
message and the Anthropic SDK's no type. The exception's text stays in the log.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI

from ridtrace.frontend_plugin import FrontendSettings, create_frontend_app

SECRET_TEXT = "/srv/ridtrace/internal/state.db"


def _crashing_app() -> FastAPI:
    app = create_frontend_app(FrontendSettings())

    async def crash() -> None:
        raise RuntimeError(f"cannot open {SECRET_TEXT}")

    for path in ("/v1/models-crash", "/v1/messages/crash"):
        app.add_api_route(path, crash, methods=["GET"])
    return app


def _get(path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=_crashing_app(), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.get(path, headers=headers)

    return asyncio.run(call())


@pytest.mark.parametrize(("path", "headers"), [
    ("/v1/models-crash", None),
    ("/v1/messages/crash", None),
    ("/v1/models-crash", {"anthropic-version": "2023-06-01"}),
])
def test_a_crash_is_a_json_500_in_the_apis_shape_naming_no_internals(
    path: str, headers: dict[str, str] | None
) -> None:
    answer = _get(path, headers)
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/json"
    assert SECRET_TEXT not in answer.text and "Traceback" not in answer.text
    body = answer.json()
    rid = answer.headers["x-server-request-id"]
    if path.startswith("/v1/messages") or headers:
        assert body == {"type": "error", "error": {"type": "api_error",
                                                   "message": "Internal server error"},
                        "request_id": rid}
        assert answer.headers["request-id"] == rid
    else:
        assert body == {"error": {"message": "Internal server error", "type": "server_error",
                                  "param": None, "code": None}}


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions"])
def test_a_body_check_that_crashes_on_the_fast_path_answers_in_the_apis_shape(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The inference routes skip the router's error handlers (issue 15's fast path): a
    # body check that raised on a value it did not foresee (a content block's type given
    # as a list) was Starlette's plain-text 500 without `request-id`, its keep-alive
    # connection dropped.
    from ridtrace.frontend_plugin.routes import APIS

    api = next(spec for spec in APIS if spec.path == path)

    def crash(*args: object) -> None:
        raise TypeError(f"unhashable: {SECRET_TEXT}")

    monkeypatch.setattr(type(api), "parse", crash)

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_frontend_app(FrontendSettings()),
                                        raise_app_exceptions=True)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.post(path, json={"model": "echo"})

    answer = asyncio.run(call())
    assert answer.status_code == 500
    assert answer.headers["content-type"] == "application/json"
    assert SECRET_TEXT not in answer.text
    message = answer.json()["error"]["message"]
    assert message == "Internal server error"
    if path == "/v1/messages":
        assert answer.headers["request-id"] == answer.headers["x-server-request-id"]
