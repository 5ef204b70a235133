"""Property test of the six routes' body parsers: whatever JSON (or bytes) a caller sends,
the answer is a success or a 4xx in that API's own error shape — never a 5xx, never an
exception, never a registry entry left behind.

The frontend runs in process (ASGITransport): this is about parsing, not transport. Its
worker is one real `ridtrace serve worker` for the module, reached over loopback by the
frontend's own HTTP client.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from loguru import logger

from ridtrace.frontend_plugin import Frontend, FrontendSettings, create_frontend_app
from ridtrace.frontend_plugin.routes import APIS
from ridtrace.tracing import TracingSettings
from tests.frontend_plugin.conftest import _spawn
from tests.support.servers import stop_process, wait_until_serving

FIELDS = ["model", "messages", "prompt", "max_tokens", "stream", "input", "instructions",
          "system", "text", "rid", "request_id", "sampling_params", "token_ids", "input_ids",
          "max_completion_tokens", "max_output_tokens", "role", "content", "max_new_tokens",
          "response_format", "json_schema", "schema", "output_config", "output_format",
          "format", "modalities", "type"]

# Any JSON, lone surrogates included (characters() with no category excluded).
_TEXT = st.one_of(st.text(max_size=12), st.text(st.characters(exclude_categories=()), max_size=12))
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70),
                     st.floats(allow_nan=False, allow_infinity=False), _TEXT)
_KEYS = st.one_of(st.sampled_from(FIELDS), _TEXT)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_KEYS, inner, max_size=5)),
    max_leaves=16,
)
_PARTS = st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _TEXT}), max_size=2)
_MESSAGE = st.fixed_dictionaries({"role": st.one_of(st.sampled_from(["user", "system"]), _JSON),
                                  "content": st.one_of(_TEXT, _PARTS, _JSON)})
# Bodies close to valid ones, where parsers have the most branches.
_NEAR_VALID = st.fixed_dictionaries({}, optional={
    "model": _JSON, "messages": st.one_of(st.lists(_MESSAGE, max_size=3), _JSON),
    "prompt": st.one_of(_TEXT, st.lists(st.integers(-5, 1 << 40), max_size=3), _JSON),
    "input": st.one_of(_TEXT, st.lists(_MESSAGE, max_size=2), _JSON),
    "text": st.one_of(_TEXT, _JSON), "max_tokens": st.one_of(st.integers(-3, 10_000), _JSON),
    "max_output_tokens": st.integers(-3, 10_000),
    "stream": st.one_of(st.booleans(), _JSON), "rid": _JSON, "request_id": _JSON,
    "sampling_params": st.one_of(st.dictionaries(st.sampled_from(FIELDS), _JSON), _JSON),
    "system": _JSON, "instructions": _JSON, "token_ids": _JSON, "input_ids": _JSON,
})
BODIES = st.one_of(
    _NEAR_VALID.map(lambda b: json.dumps(b).encode()),
    _JSON.map(lambda b: json.dumps(b).encode()),
    st.binary(max_size=64),
)


@pytest.fixture(scope="module")
def settings_(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrontendSettings]:
    worker = _spawn(["worker"], tmp_path_factory.mktemp("property-worker"), "worker")
    try:
        wait_until_serving(worker.url, worker.process, timeout=60, path="/health")
        logger.remove()  # thousands of requests: keep their lines out of the captured output
        yield FrontendSettings(workers=(worker.url,), max_body_bytes=4096)
    finally:
        logger.add(sys.stderr)
        stop_process(worker.process, grace=5)


def _error_shape_ok(path: str, body: Any) -> bool:
    if path == "/v1/messages":
        return (body.get("type") == "error" and isinstance(body["error"]["type"], str)
                and isinstance(body["error"]["message"], str))
    error = body.get("error")
    return isinstance(error, dict) and set(error) == {"message", "type", "param", "code"}


@pytest.mark.parametrize("api", APIS, ids=[api.endpoint for api in APIS])
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES)
def test_any_body_gets_a_success_or_a_4xx_in_the_apis_shape(
    settings_: FrontendSettings, api: Any, body: bytes
) -> None:
    # One frontend per example: its worker connections belong to the example's event loop.
    frontend = Frontend(settings_)
    app = create_frontend_app(tracing=TracingSettings(log_lifecycle=False), frontend=frontend)

    async def post() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://fe") as client:
                return await client.post(api.path, content=body,
                                         headers={"content-type": "application/json"})
        finally:
            await frontend.aclose()

    response = asyncio.run(post())
    event(f"status {response.status_code}")
    assert response.status_code in (200, 400, 413), response.text
    if response.status_code != 200:
        assert _error_shape_ok(api.path, orjson.loads(response.content)), response.text
    elif "text/event-stream" not in response.headers["content-type"]:
        orjson.loads(response.content)
    assert len(frontend.registry) == 0
