"""``/openapi.json`` states the answers the routes give, and the keys they need.

A schema-driven client (schemathesis, a generated SDK) takes the schema at its word:
``GET /v1/models/{model_id}`` listed 200 and a 422 never sent, not the 404 every model
not served gets; a frontend with API keys listed no 401 and no security scheme, though
every route but ``/health`` refuses a call without a key.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from ridtrace.frontend_plugin import FrontendSettings, create_frontend_app

KEY = "sk-schema-test-key"


async def _schema_and_answers(keys: tuple[str, ...]) -> tuple[dict[str, Any], list[int]]:
    app = create_frontend_app(FrontendSettings(workers=("http://127.0.0.1:9",),
                                               debug_endpoints=True, api_keys=keys))
    transport = httpx.ASGITransport(app=app)
    keyed = {"authorization": f"Bearer {KEY}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        schema = (await client.get("/openapi.json", headers=keyed)).json()
        answers = [(await client.get("/v1/models/not-served", headers=keyed)).status_code,
                   (await client.get("/v1/models")).status_code]
    return schema, answers


def _operations(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{method.upper()} {path}": operation
            for path, operations in schema["paths"].items()
            for method, operation in operations.items()}


def test_a_model_not_served_is_a_documented_404() -> None:
    schema, (not_served, _) = asyncio.run(_schema_and_answers(()))
    answers = _operations(schema)["GET /v1/models/{model_id}"]["responses"]
    assert not_served == 404
    assert sorted(answers) == ["200", "404"]
    assert "security" not in schema  # no keys, none asked for


def test_with_api_keys_every_route_but_health_documents_the_key_and_its_401() -> None:
    schema, (_, unkeyed) = asyncio.run(_schema_and_answers((KEY,)))
    assert unkeyed == 401
    schemes = schema["components"]["securitySchemes"]
    assert schemes["bearerKey"] == {"type": "http", "scheme": "bearer"}
    assert schemes["apiKeyHeader"] == {"type": "apiKey", "in": "header", "name": "x-api-key"}
    assert schema["security"] == [{"bearerKey": []}, {"apiKeyHeader": []}]
    operations = _operations(schema)
    assert operations["GET /health"]["security"] == []
    keyed = {name: op for name, op in operations.items() if name != "GET /health"}
    assert len(keyed) > 10
    assert [name for name, op in keyed.items() if "401" not in op["responses"]] == []
