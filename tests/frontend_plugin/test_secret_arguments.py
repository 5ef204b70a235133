"""Secrets handed to the key check in code must never open it wider than meant.

In process: these are constructor arguments of `SharedSecretMiddleware` and
`FrontendSettings`, the public API docs/frontend-plugin.md tells an app that mounts
`create_router` to use.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from ridtrace.frontend_plugin import FrontendSettings, SharedSecretMiddleware


async def _served(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"served"})


def _status(app: SharedSecretMiddleware, headers: dict[str, str]) -> int:
    async def get() -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return (await client.get("/v1/models", headers=headers)).status_code

    return asyncio.run(get())


def test_one_key_given_as_a_string_is_refused_not_taken_as_its_characters() -> None:
    # A str is an iterable of str: taken as the collection, each character was a key, so
    # 'Authorization: Bearer s' got in while the real key got 401.
    with pytest.raises(TypeError, match=r"not one string.*\(key,\)") as info:
        SharedSecretMiddleware(_served, secrets="sk-secret")
    assert "sk-secret" not in str(info.value)  # a secret is never shown
    with pytest.raises(TypeError, match=r"not one string.*\(key,\)"):
        FrontendSettings(api_keys="sk-secret")  # type: ignore[arg-type]
    keyed = SharedSecretMiddleware(_served, secrets=("sk-secret",))
    assert _status(keyed, {"authorization": "Bearer s"}) == 401
    assert _status(keyed, {"authorization": "Bearer sk-secret"}) == 200


@pytest.mark.parametrize("secrets", [
    [""],  # os.environ.get("KEYS", "").split(","), the variable unset
    ["sk-secret", ""],
])
def test_an_empty_secret_is_refused_rather_than_leaving_every_route_open(
    secrets: list[str],
) -> None:
    # Empty secrets were dropped without a word; none left meant no check at all.
    with pytest.raises(ValueError, match="must not be empty"):
        SharedSecretMiddleware(_served, secrets=secrets)


def test_a_secret_no_client_could_present_is_refused_as_the_settings_refuse_it() -> None:
    with pytest.raises(ValueError, match="printable ASCII") as info:
        SharedSecretMiddleware(_served, secrets=["sk-secret\n"])  # read from a file
    assert "sk-secret" not in str(info.value)


def test_no_secrets_at_all_still_means_no_check() -> None:
    # As documented: the middleware is added unconditionally and turned off by ().
    assert _status(SharedSecretMiddleware(_served, secrets=()), {}) == 200
