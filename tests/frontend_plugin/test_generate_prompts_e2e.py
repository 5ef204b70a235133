"""The generate routes' two prompt fields: ``text`` / ``input_ids`` (SGLang) and
``prompt`` / ``token_ids`` (native).

``null`` is a field not set, as SGLang's and vLLM's request models read it: a client
that writes its whole request object sends the field it does not use as ``null``, and
got a 400. Both set is a 400, as SGLang answers it: the route served the token ids and
dropped the text without a word.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.frontend_plugin.conftest import Stack


@pytest.mark.parametrize(("path", "body", "text"), [
    ("/generate", {"text": "a b", "input_ids": None}, "echo: a b"),
    ("/generate", {"text": None, "input_ids": [7, 8]}, "echo: 7,8"),
    ("/inference/v1/generate", {"prompt": "a b", "token_ids": None}, "echo: a b"),
    ("/inference/v1/generate", {"prompt": None, "token_ids": [7, 8]}, "echo: 7,8"),
])
def test_the_prompt_field_not_used_may_be_null(
    stack: Stack, path: str, body: dict[str, Any], text: str
) -> None:
    reply = httpx.post(stack.url + path, json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.json()["text"] == text


@pytest.mark.parametrize(("path", "body", "param"), [
    ("/generate", {"text": "a b", "input_ids": [7, 8]}, "input_ids"),
    ("/inference/v1/generate", {"prompt": "a b", "token_ids": [7, 8]}, "token_ids"),
])
def test_both_prompt_fields_are_refused(
    stack: Stack, path: str, body: dict[str, Any], param: str
) -> None:
    reply = httpx.post(stack.url + path, json=body, timeout=30)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == param
    assert "not both" in reply.json()["error"]["message"]


@pytest.mark.parametrize(("path", "param"), [("/generate", "text"),
                                             ("/inference/v1/generate", "prompt")])
def test_neither_prompt_field_is_refused(stack: Stack, path: str, param: str) -> None:
    reply = httpx.post(stack.url + path, json={"max_tokens": 3}, timeout=30)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == param


@pytest.mark.parametrize("input_ids", [[[7, 8]], [[7, 8], [9]]])
def test_a_batch_of_input_ids_is_refused_as_a_batch_of_texts_is(
    stack: Stack, input_ids: list[list[int]]
) -> None:
    # SGLang answers a list of lists (of one too) with a list of replies; one reply object
    # in its place broke the caller's reply[0]. A list of texts was already refused.
    for body in ({"input_ids": input_ids}, {"text": ["a b"] * len(input_ids)}):
        reply = httpx.post(stack.url + "/generate", json=body, timeout=30)
        assert reply.status_code == 400, reply.text
        assert "batches are not supported" in reply.json()["error"]["message"]


@pytest.mark.parametrize(("path", "param", "ids"), [
    ("/inference/v1/generate", "token_ids", [-1]),
    ("/inference/v1/generate", "token_ids", [1.5]),
    ("/inference/v1/generate", "token_ids", []),
    ("/inference/v1/generate", "token_ids", "hello"),
    ("/generate", "input_ids", [-1]),
    ("/generate", "input_ids", "hello"),
])
def test_a_token_ids_field_refused_does_not_offer_a_string(
    stack: Stack, path: str, param: str, ids: Any
) -> None:
    # A bad id list was told "must be a string or ...", where a string is refused too.
    reply = httpx.post(stack.url + path, json={param: ids}, timeout=30)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == param
    assert reply.json()["error"]["message"] == (
        f"'{param}' must be a non-empty list of token ids (integers from 0)")
