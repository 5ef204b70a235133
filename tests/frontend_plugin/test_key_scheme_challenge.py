"""A key sent under another `Authorization` scheme (`curl -u :KEY` sends Basic).

It was told "invalid API key", with `error="invalid_token"` in the challenge: the caller
concluded the key was wrong (and a client that refreshes tokens on that error refreshed
it), when the key was never read. RFC 6750 (3.1) puts a request "attempted using an
unsupported authentication method" with those that lack credentials: no error code,
and the message says to send the key as Bearer.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from ridtrace.frontend_plugin import FrontendSettings, create_frontend_app

NO_ERROR = 'Bearer realm="ridtrace"'


def _refusal(headers: list[tuple[str, str]]) -> httpx.Response:
    async def call() -> httpx.Response:
        app = create_frontend_app(FrontendSettings(api_keys=("sk-right",)))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.get("/v1/models", headers=headers)

    return asyncio.run(call())


@pytest.mark.parametrize("value", ["Basic OnNrLXJpZ2h0", "Token sk-right", "Bearer", "Bearer "])
def test_an_authorization_without_a_bearer_key_is_no_key_not_a_wrong_one(value: str) -> None:
    refused = _refusal([("authorization", value)])
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == NO_ERROR
    message = refused.json()["error"]["message"]
    assert "invalid" not in message and "Bearer" in message, message


def test_a_wrong_bearer_key_is_still_invalid_and_a_repeat_still_invalid_request() -> None:
    wrong = _refusal([("authorization", "Bearer sk-wrong")])
    assert wrong.headers["www-authenticate"] == 'Bearer realm="ridtrace", error="invalid_token"'
    assert wrong.json()["error"]["message"].startswith("invalid API key")
    # Two Basic headers: a repeat, whatever they hold.
    twice = _refusal([("authorization", "Basic YQ=="), ("authorization", "Basic Yg==")])
    assert twice.status_code == 401
    assert twice.headers["www-authenticate"] == (
        'Bearer realm="ridtrace", error="invalid_request"')
    # A wrong x-api-key beside a Basic Authorization is a wrong key.
    beside = _refusal([("authorization", "Basic YQ=="), ("x-api-key", "sk-wrong")])
    assert 'error="invalid_token"' in beside.headers["www-authenticate"]
