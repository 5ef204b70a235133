"""The legacy Completions API through the official openai SDK, on real processes."""

from __future__ import annotations

import openai
import pytest


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


@pytest.mark.parametrize("prompts", [["one", "two"], [[1, 2], [3, 4]]])
def test_several_prompts_are_refused_for_what_they_are(
    oai: openai.OpenAI, prompts: list[str] | list[list[int]]
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.completions.create(model="echo", prompt=prompts)
    assert info.value.param == "prompt"
    assert "holds 2 prompts: one prompt per request is supported" in info.value.message
