"""A lone surrogate escape in a body (``"\\udc80"``) is JSON (RFC 8259) and is carried.

JavaScript's ``JSON.stringify`` writes one for a string cut in the middle of an emoji,
Python's ``json.dumps`` for text read with ``surrogateescape``. orjson refuses them, so
every route answered such a body 400 ``invalid high surrogate in string`` (for a low one
too); the reply now repeats the caller's text, escape and all, through the worker and
back, streamed or not.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.frontend_plugin.conftest import Stack

TEXT = "cut \ud83d here \udc80 and \U0001f600"
JSON = {"content-type": "application/json"}


def _body(path: str, stream: bool) -> dict[str, Any]:
    messages = [{"role": "user", "content": TEXT}]
    return {
        "/v1/chat/completions": {"messages": messages, "logprobs": True},
        "/v1/completions": {"prompt": TEXT},
        "/v1/responses": {"input": TEXT, "instructions": TEXT},
        "/v1/messages": {"messages": messages, "max_tokens": 64},
        "/inference/v1/generate": {"prompt": TEXT},
        "/generate": {"text": TEXT},
    }[path] | {"model": "echo", "stream": stream}


def _events(reply: httpx.Response) -> list[Any]:
    return [json.loads(line[len("data: "):]) for line in reply.text.splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"]


def _reply_text(path: str, reply: httpx.Response, stream: bool) -> str:
    """The generated text, read as each API's client reads it."""
    if not stream:
        whole = reply.json()
        return str({
            "/v1/chat/completions": lambda: whole["choices"][0]["message"]["content"],
            "/v1/completions": lambda: whole["choices"][0]["text"],
            "/v1/responses": lambda: whole["output"][0]["content"][0]["text"],
            "/v1/messages": lambda: whole["content"][0]["text"],
            "/inference/v1/generate": lambda: whole["text"],
            "/generate": lambda: whole["text"],
        }[path]())
    events = _events(reply)
    assert not [e for e in events if e.get("error") or e.get("type") == "error"], events
    if path == "/v1/chat/completions":
        return "".join(e["choices"][0]["delta"].get("content") or ""
                       for e in events if e["choices"])
    if path == "/v1/completions":
        return "".join(e["choices"][0]["text"] for e in events)
    if path == "/v1/responses":
        return "".join(e["text"] for e in events if e["type"] == "response.output_text.done")
    if path == "/v1/messages":
        return "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
    if path == "/inference/v1/generate":
        return "".join(e["text"] for e in events)
    return str(events[-1]["text"])  # /generate: the text so far in every event


PATHS = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages",
         "/inference/v1/generate", "/generate"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("path", PATHS)
def test_a_lone_surrogate_in_the_prompt_comes_back_in_the_reply(
    stack: Stack, path: str, stream: bool
) -> None:
    # json.dumps (ensure_ascii) writes the lone surrogates as \udXXX escapes.
    body = json.dumps(_body(path, stream)).encode("ascii")
    assert b"\\udc80" in body
    reply = httpx.post(stack.url + path, content=body, headers=JSON, timeout=30)
    assert reply.status_code == 200, reply.text
    assert TEXT in _reply_text(path, reply, stream)


def test_token_counting_reads_a_lone_surrogate(stack: Stack) -> None:
    body = json.dumps({"model": "echo", "messages": [{"role": "user", "content": TEXT}]})
    reply = httpx.post(stack.url + "/v1/messages/count_tokens", content=body, headers=JSON,
                       timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"input_tokens": len(f"user: {TEXT}".split())}


@pytest.mark.parametrize(("number", "needle"), [
    ("NaN", "NaN is not JSON"),
    ("1e999", "infinity"),
])
def test_a_body_with_a_lone_surrogate_is_read_as_strictly_as_any_other(
    stack: Stack, number: str, needle: str
) -> None:
    # The escape first: the standard library's reading takes over from there.
    body = ('{"model": "echo", "messages": [{"role": "user", "content": "a \\udc80"}], '
            f'"temperature": {number}}}')
    reply = httpx.post(stack.url + "/v1/chat/completions", content=body, headers=JSON,
                       timeout=30)
    assert reply.status_code == 400, reply.text
    assert needle in reply.json()["error"]["message"]


def test_a_lone_surrogate_escape_in_sglangs_schema_string_is_json_too(stack: Stack) -> None:
    # SGLang takes the schema as JSON written into a string: its escapes are read alike.
    schema = '{"type": "object", "properties": {"a": {"type": "string", "description": "\\udc80"}}}'
    body = json.dumps({"text": TEXT, "sampling_params": {"json_schema": schema}})
    reply = httpx.post(stack.url + "/generate", content=body, headers=JSON, timeout=30)
    assert reply.status_code == 200, reply.text
    assert json.loads(reply.json()["text"]) == {"a": f"echo: {TEXT}"}


HUGE_INTEGER = "9" * 400  # past a double's range: orjson refuses it ("infinity")
INTEGER_SCHEMA = ('{"type": "object", "properties": {"a": {"type": "integer", "description": '
                  f'"\\udc80", "minimum": {HUGE_INTEGER}}}}}, "required": ["a"]}}')


@pytest.mark.parametrize(("path", "body", "needle"), [
    ("/v1/chat/completions",
     '{"model": "echo", "messages": [{"role": "user", "content": "a \\udc80"}], '
     '"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": '
     f'{INTEGER_SCHEMA}}}}}}}', "infinity"),
    ("/generate", json.dumps({"text": "x", "sampling_params": {"json_schema": INTEGER_SCHEMA}}),
     "'sampling_params.json_schema' must be a JSON schema object"),
], ids=["chat", "sglang"])
def test_an_integer_past_a_double_after_a_lone_surrogate_is_refused_as_orjson_does(
    stack: Stack, path: str, body: str, needle: str
) -> None:
    # The standard library's reading took an integer of over 308 digits for infinity
    # where orjson refuses it, and the schema's integer bound then failed in math.ceil:
    # a 500 for a body any client may send.
    reply = httpx.post(stack.url + path, content=body, headers=JSON, timeout=30)
    assert reply.status_code == 400, reply.text
    assert needle in reply.json()["error"]["message"]
