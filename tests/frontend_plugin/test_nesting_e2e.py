"""Bodies nested deeper than the frontend writes back get a 400, not a 500."""

from __future__ import annotations

import json

import httpx
import pytest

from ridtrace.frontend_plugin.bodies import MAX_NESTING
from tests.frontend_plugin.conftest import Stack

USER = [{"role": "user", "content": "x"}]


def _lists(depth: int) -> list[object]:
    """``depth`` arrays, one inside the other."""
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _schema(depth: int) -> dict[str, object]:
    """A schema the reply builder answers, carrying a keyword nested ``depth`` levels
    (the builder never looks at it; it travels to the worker all the same)."""
    return {"type": "object", "properties": {"a": {"type": "string"}},
            "x-note": _lists(depth)}


def _cases(depth: int) -> list[tuple[str, dict[str, object], str | None]]:
    # (path, body, the param a 400 names); orjson reads 1024 levels, writes 254.
    return [
        ("/v1/chat/completions", {"messages": USER, "response_format": {
            "type": "json_schema", "json_schema": {"name": "n", "schema": _schema(depth)}}},
         None),
        ("/v1/responses", {"input": "x", "text": {"format": {
            "type": "json_schema", "name": "n", "schema": _schema(depth)}}}, None),
        ("/v1/responses", {"input": "x", "tools": [
            {"type": "function", "name": "f", "parameters": {
                "type": "object", "x-note": _lists(depth)}}]}, None),
        ("/v1/responses", {"input": "x", "stream": True, "tools": [
            {"type": "function", "name": "f", "parameters": {
                "type": "object", "x-note": _lists(depth)}}]}, None),
        ("/v1/messages", {"max_tokens": 5, "messages": USER, "output_config": {
            "format": {"type": "json_schema", "schema": _schema(depth)}}}, None),
        # Counted as checked there: told fine before, then a 400 when sent.
        ("/v1/messages/count_tokens", {"messages": USER, "note": _lists(depth)}, None),
        ("/v1/responses/input_tokens", {"input": "x", "note": _lists(depth)}, None),
        # The schema is a string here: the body itself is shallow.
        ("/generate", {"text": "x", "sampling_params": {
            "json_schema": json.dumps(_schema(depth))}},
         "sampling_params.json_schema"),
    ]


@pytest.mark.parametrize("index", range(len(_cases(1))))
def test_a_body_nested_too_deep_gets_400_and_one_just_within_is_served(
    stack: Stack, index: int
) -> None:
    path, deep, param = _cases(300)[index]
    _, shallow, _ = _cases(MAX_NESTING - 10)[index]
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        refused = client.post(path, json=deep)
        assert refused.status_code == 400, refused.text[:300]
        error = refused.json()["error"]
        assert f"deeper than {MAX_NESTING} levels" in error["message"], error
        if param is not None:
            assert error["param"] == param
        if path.startswith("/v1/messages"):
            assert refused.json()["type"] == "error"  # Anthropic's shape
        served = client.post(path, json=shallow)
        assert served.status_code == 200, served.text[:300]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/generate"])
def test_a_body_nested_past_the_parsers_own_limit_is_told_the_same(stack: Stack, path: str) -> None:
    # orjson stops at 1024 levels, before the frontend's own walk: the caller was told
    # "invalid JSON body: depth limit exceeded: line 1 column 1026 (char 1025)".
    deep = b"[" * 1100 + b"]" * 1100
    body = (b'{"max_tokens": 5, "text": "x", "messages": ' + json.dumps(USER).encode()
            + b', "note": ' + deep + b"}")
    refused = httpx.post(stack.url + path, content=body, timeout=30,
                         headers={"content-type": "application/json"})
    assert refused.status_code == 400, refused.text[:300]
    message = refused.json()["error"]["message"]
    assert message == f"invalid JSON body: nested deeper than {MAX_NESTING} levels"
