"""A request the Host check refuses (421), as each official SDK reads it.

An SDK reaches a loopback frontend under a name of its own (an /etc/hosts alias, a
tunnel, a proxy forwarding its Host) and gets 421: the answer must be in the API's
error shape with the ids the SDK reads, as every other refusal is.
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest

from tests.frontend_plugin.conftest import Stack, start_stack

MESSAGE = "Misdirected request: this server does not answer for that Host"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with start_stack(tmp_path_factory.mktemp("misdirected"), workers=[[]],
                     debug_endpoints=False) as running:
        yield running


def _alias(stack: Stack) -> dict[str, str]:
    return {"host": f"gateway.alias:{stack.frontend.port}"}


def test_the_openai_sdk_reads_a_421_in_openais_error_shape(stack: Stack) -> None:
    client = openai.OpenAI(base_url=stack.url + "/v1", api_key="unused", max_retries=0,
                           default_headers=_alias(stack))
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "x"}],
                                       extra_headers={"x-request-id": "misdirected-oai"})
    error = caught.value
    assert error.status_code == 421
    # OpenAI's error object always has all four keys; "param" was missing.
    assert isinstance(error.body, dict)
    assert sorted(error.body) == ["code", "message", "param", "type"]
    assert error.body["message"].startswith(MESSAGE)
    assert error.code == "misdirected_request" and error.param is None
    assert error.request_id == "misdirected-oai"


def test_the_anthropic_sdk_reads_a_421_in_anthropics_error_shape(stack: Stack) -> None:
    # It was OpenAI's shape without `request-id`: the SDK showed the raw dict as its
    # message and had no id to quote, unlike every other error under /v1/messages.
    client = anthropic.Anthropic(base_url=stack.url, api_key="unused", max_retries=0,
                                 default_headers=_alias(stack))
    for call in (
        lambda: client.messages.create(model="echo", max_tokens=16,
                                       messages=[{"role": "user", "content": "x"}]),
        lambda: client.models.list(),  # anthropic-version sent, outside /v1/messages
    ):
        with pytest.raises(anthropic.APIStatusError) as caught:
            call()
        error = caught.value
        assert error.status_code == 421
        assert error.body == {"type": "error", "error": {
            "type": "invalid_request_error", "message": error.body["error"]["message"]},
            "request_id": error.request_id}
        assert error.body["error"]["message"].startswith(MESSAGE)
        server_id = error.response.headers["x-server-request-id"]
        assert error.request_id == server_id
