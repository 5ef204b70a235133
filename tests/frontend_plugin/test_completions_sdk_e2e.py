"""The legacy Completions API through the official openai SDK, on real processes."""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.frontend_plugin.conftest import Stack


def test_a_prompt_in_the_batch_form_is_served_as_one_prompt(oai: openai.OpenAI) -> None:
    # The SDK types `prompt` as a string, token ids, or a list of either: one token
    # list in the list was refused ("must be a string or a non-empty list of token
    # ids") while one string in the list was served.
    for prompt in ("7 8 9", ["7 8 9"]):
        assert oai.completions.create(model="echo", prompt=prompt).choices[0].text == (
            "echo: 7 8 9")
    for ids in ([7, 8, 9], [[7, 8, 9]]):
        assert oai.completions.create(model="echo", prompt=ids).choices[0].text == (
            "echo: 7,8,9")


def test_a_prompt_of_token_ids_counts_each_id(oai: openai.OpenAI, stack: Stack) -> None:
    # The ids reach the engine joined with commas ("7,8,9,10"), which it counts as one
    # word: usage said prompt_tokens 1 for a prompt of 4 tokens, on every route that
    # takes ids. A text prompt is still counted by its words.
    for ids in ([7, 8, 9, 10], [[7, 8, 9, 10]]):
        reply = oai.completions.create(model="echo", prompt=ids)
        assert reply.usage is not None and reply.usage.prompt_tokens == 4
        assert reply.usage.total_tokens == 4 + reply.usage.completion_tokens
        last = list(oai.completions.create(model="echo", prompt=ids, stream=True,
                                           stream_options={"include_usage": True}))[-1]
        assert last.usage is not None and last.usage.prompt_tokens == 4
    text = oai.completions.create(model="echo", prompt="seven eight")
    assert text.usage is not None and text.usage.prompt_tokens == 2
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        for body in ({"token_ids": [7, 8, 9, 10]}, {"prompt": [7, 8, 9, 10]}):
            native = client.post("/inference/v1/generate", json=body).json()
            assert native["usage"]["prompt_tokens"] == 4, body
        sglang = {"input_ids": [7, 8, 9, 10]}
        assert client.post("/generate", json=sglang).json()["meta_info"]["prompt_tokens"] == 4
        streamed = client.post("/generate", json={**sglang, "stream": True}).text
        assert '"prompt_tokens":4' in streamed and '"prompt_tokens":1' not in streamed


@pytest.mark.parametrize("prompts", [["one", "two"], [[1, 2], [3, 4]]])
def test_several_prompts_are_refused_for_what_they_are(
    oai: openai.OpenAI, prompts: list[str] | list[list[int]]
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.completions.create(model="echo", prompt=prompts)
    assert info.value.param == "prompt"
    assert "holds 2 prompts: one prompt per request is supported" in info.value.message


def test_echo_begins_the_text_with_the_prompt(oai: openai.OpenAI) -> None:
    # `echo: true` was accepted and ignored: the text came back without the prompt.
    reply = oai.completions.create(model="echo", prompt="say it", echo=True)
    assert reply.choices[0].text == "say it" + "echo: say it"
    assert reply.usage is not None and reply.usage.completion_tokens == 3
    chunks = list(oai.completions.create(model="echo", prompt="say it", echo=True,
                                         stream=True, stream_options={"include_usage": True}))
    texts = [c.choices[0].text for c in chunks if c.choices]
    assert texts[0] == "say it" and "".join(texts) == "say it" + "echo: say it"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 3
    cut = oai.completions.create(model="echo", prompt="say it", echo=True, max_tokens=1)
    assert (cut.choices[0].text, cut.choices[0].finish_reason) == ("say itecho:", "length")
    assert oai.completions.create(model="echo", prompt="say it", echo=False).choices[
        0].text == "echo: say it"
    # The prompt's log probabilities were never computed: refused, not made up.
    with pytest.raises(openai.BadRequestError) as info:
        oai.completions.create(model="echo", prompt="x", echo=True, logprobs=1)
    assert info.value.param == "echo"


def test_a_negative_token_id_is_refused_on_every_route_that_takes_ids(
    oai: openai.OpenAI, stack: Stack
) -> None:
    # A token id is an index into the vocabulary: -100 (the label padding of ML
    # pipelines) or -1 (a pad id left in) is a caller's bug the real servers refuse
    # (vLLM: out of vocabulary). It was echoed back as if it were a token, so a client
    # tested here passed and failed against the real thing.
    for prompt in ([-100, 7, 8], [[7, -1]]):
        with pytest.raises(openai.BadRequestError) as info:
            oai.completions.create(model="echo", prompt=prompt)
        assert info.value.param == "prompt" and "token ids" in info.value.message
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        for path, body, param in (
            ("/inference/v1/generate", {"token_ids": [7, -1]}, "token_ids"),
            ("/inference/v1/generate", {"prompt": [-1]}, "prompt"),
            ("/generate", {"input_ids": [-5, 3]}, "input_ids"),
        ):
            answer = client.post(path, json=body)
            assert answer.status_code == 400, (path, body, answer.text)
            assert answer.json()["error"]["param"] == param, answer.text
    # Zero is a token id like any other.
    assert oai.completions.create(model="echo", prompt=[0, 7]).choices[0].text == "echo: 0,7"
