"""Sampling fields the echo engine ignores are still checked, as the real APIs check them.

The official SDKs send whatever the caller passes (``extra_body`` skips their typing):
a wrong type or range must come back as a 400 naming the field, in the route's shape.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.frontend_plugin.conftest import Stack
from tests.support.openai_refusals import assert_both_openai_routes_refuse

CHAT: Any = [{"role": "user", "content": "sampling fields"}]



@pytest.mark.parametrize(("extra", "param"), [
    ({"temperature": "hot"}, "temperature"),
    ({"temperature": 2.5}, "temperature"),
    ({"temperature": True}, "temperature"),
    ({"top_p": [1]}, "top_p"),
    ({"presence_penalty": 3}, "presence_penalty"),
    ({"stop": 12}, "stop"),
    ({"stop": ["a", 1]}, "stop"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"stop": [""]}, "stop"),
])
def test_openai_sampling_fields_of_the_wrong_type_or_range_are_400(
    oai: openai.OpenAI, extra: dict[str, Any], param: str
) -> None:
    assert_both_openai_routes_refuse(oai, extra, param)


@pytest.mark.parametrize("max_tokens", ["lots", 0, 10**9])
def test_max_tokens_beside_max_completion_tokens_is_checked_too(
    oai: openai.OpenAI, max_tokens: object
) -> None:
    # A max_tokens of the wrong type or range was taken silently because only the first
    # limit set was read: it is named as itself, before the two are found set together.
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, max_completion_tokens=3,
                                    extra_body={"max_tokens": max_tokens})
    assert info.value.param == "max_tokens"
    assert "at the same time" not in info.value.message


def test_max_tokens_and_max_completion_tokens_together_are_refused_as_openai_does(
    oai: openai.OpenAI
) -> None:
    # OpenAI answers this 400; max_completion_tokens won here, so code sending both (as
    # some wrappers did) passed against the frontend and failed against the API.
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, max_completion_tokens=1,
                                    max_tokens=5)
    assert (info.value.param, info.value.code) == ("max_tokens", "invalid_parameter_combination")
    assert info.value.body["message"] == (  # type: ignore[index]
        "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.")
    # Either alone, or one beside a null, is served.
    for limits in ({"max_completion_tokens": 1}, {"max_tokens": 1},
                   {"max_completion_tokens": 1, "max_tokens": None}):
        reply = oai.chat.completions.create(model="echo", messages=CHAT, extra_body=limits)
        assert reply.usage is not None and reply.usage.completion_tokens == 1, limits


@pytest.mark.parametrize(("body", "param"), [
    ({"max_tokens": "lots", "sampling_params": {"max_tokens": 2}}, "max_tokens"),
    ({"max_tokens": 2, "sampling_params": {"max_tokens": 0}}, "sampling_params.max_tokens"),
])
def test_both_token_limits_of_native_generate_are_checked(
    stack: Stack, body: dict[str, Any], param: str
) -> None:
    reply = httpx.post(stack.url + "/inference/v1/generate", json={"prompt": "a b c", **body},
                       timeout=30)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == param


def test_stream_options_without_stream_is_400_as_openai_answers(oai: openai.OpenAI) -> None:
    # Silently ignored before: a caller waiting for the usage chunk never got one.
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT,
                                    stream_options={"include_usage": True})
    assert info.value.param == "stream_options"
    with pytest.raises(openai.BadRequestError):
        oai.completions.create(model="echo", prompt="x", stream=False,
                               stream_options={"include_usage": True})


def test_well_formed_sampling_fields_are_served(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    reply = oai.chat.completions.create(
        model="echo", messages=CHAT, temperature=0.2, top_p=1, presence_penalty=-1,
        frequency_penalty=0, stop="never-in-the-reply",
    )
    assert "sampling fields" in (reply.choices[0].message.content or "")
    assert oai.responses.create(model="echo", input="resp", temperature=1.5, top_p=0.5)
    # (this SDK release no longer types temperature and friends: sent as extra_body)
    message = claude.messages.create(
        model="echo", max_tokens=32, messages=CHAT, stop_sequences=["never-in-the-reply"],
        extra_body={"temperature": 1, "top_p": 0.9, "top_k": 40})
    assert message.stop_reason == "end_turn"


@pytest.mark.parametrize(("extra", "param"), [
    ({"temperature": "x"}, "temperature"),
    ({"temperature": 1.5}, "temperature"),  # Anthropic's range is 0-1
    ({"top_k": -1}, "top_k"),
    ({"top_k": 2.5}, "top_k"),
    ({"stop_sequences": "stop"}, "stop_sequences"),  # a list, unlike OpenAI's stop
])
def test_anthropic_sampling_fields_are_checked(
    claude: anthropic.Anthropic, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model="echo", max_tokens=8, messages=CHAT, extra_body=extra)
    error = info.value.body["error"]  # type: ignore[index]
    assert error["type"] == "invalid_request_error" and param in error["message"]


@pytest.mark.parametrize("stop", ["\n", " ", "\n\n\t"])
def test_a_whitespace_stop_sequence_is_refused_as_anthropic_refuses_it(
    claude: anthropic.Anthropic, stop: str
) -> None:
    # A newline stop, carried over from completions-era code, was served here and is a
    # 400 at Anthropic's API: every such call broke at its first real call.
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model="echo", max_tokens=8, messages=CHAT,
                               stop_sequences=["END", stop])
    assert info.value.type == "invalid_request_error"
    assert ("'stop_sequences': each stop sequence must contain non-whitespace"
            in (info.value.api_message or ""))
    served = claude.messages.create(model="echo", max_tokens=8, messages=CHAT,
                                    stop_sequences=[" END\n"])
    assert served.stop_reason in ("end_turn", "max_tokens")


def test_generate_sampling_params_are_checked(stack: Stack) -> None:
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        for path, body in (
            ("/inference/v1/generate", {"prompt": "x", "sampling_params": {"temperature": "x"}}),
            ("/generate", {"text": "x", "sampling_params": {"top_p": 2}}),
            ("/generate", {"text": "x", "sampling_params": {"stop": {"a": 1}}}),
            # SGLang's and vLLM's checks: a top_k that is no count, min_p and penalties
            # out of their ranges were served with 200.
            ("/generate", {"text": "x", "sampling_params": {"top_k": "5"}}),
            ("/generate", {"text": "x", "sampling_params": {"top_k": 2.5}}),
            ("/inference/v1/generate", {"prompt": "x", "sampling_params": {"top_k": -2}}),
            ("/generate", {"text": "x", "sampling_params": {"min_p": 1.5}}),
            ("/generate", {"text": "x", "sampling_params": {"presence_penalty": 3}}),
            ("/generate", {"text": "x", "sampling_params": {"frequency_penalty": "x"}}),
            ("/generate", {"text": "x", "sampling_params": {"repetition_penalty": -1}}),
        ):
            response = client.post(path, json=body)
            assert response.status_code == 400, (path, response.text)
            param = response.json()["error"]["param"]
            assert param == "sampling_params." + next(iter(body["sampling_params"])), body
        for top_k in (-1, 0, 1, 40):
            body = {"text": "x", "sampling_params": {"top_k": top_k, "min_p": 0.05,
                                                      "repetition_penalty": 1.1}}
            assert client.post("/generate", json=body).status_code == 200, body


def test_generate_routes_refuse_more_than_one_sample(stack: Stack) -> None:
    # SGLang answers sampling_params.n = 2 with two outputs; one output, with 200, told
    # the caller its second sample was simply the same text, as on the OpenAI routes
    # before `n` was refused there.
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        for path, body in (
            ("/inference/v1/generate", {"prompt": "x", "sampling_params": {"n": 2}}),
            ("/generate", {"text": "x", "sampling_params": {"n": 3}}),
            ("/generate", {"text": "x", "sampling_params": {"n": "2"}}),
        ):
            response = client.post(path, json=body)
            assert response.status_code == 400, (path, response.text)
            assert response.json()["error"]["param"] == "sampling_params.n", body
        for path, body in (
            ("/inference/v1/generate", {"prompt": "x", "sampling_params": {"n": 1}}),
            ("/generate", {"text": "x", "sampling_params": {"n": None}}),
        ):
            assert client.post(path, json=body).status_code == 200, body


def test_sglang_return_logprob_is_refused_rather_than_left_out(stack: Stack) -> None:
    # SGLang answers return_logprob with meta_info.output_token_logprobs as
    # [logprob, token_id, text] triples; the echo engine has no token ids, and a 200
    # without them failed the caller later, on a missing key, far from the cause.
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        for body in ({"text": "x", "return_logprob": True},
                     {"text": "x", "return_logprob": "yes"}):
            response = client.post("/generate", json=body)
            assert response.status_code == 400, response.text
            assert response.json()["error"]["param"] == "return_logprob"
        assert client.post("/generate", json={"text": "x", "return_logprob": False}
                           ).status_code == 200
