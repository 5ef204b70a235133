"""Chat's options of a fixed set of values are checked as OpenAI checks them.

``reasoning_effort``, ``service_tier`` and ``verbosity`` were not looked at (the echo
engine has no use for them): a typo (``"hgih"``), a value of another API (Anthropic's
``"standard_only"`` service tier) or a number was a 200 here and a 400 at OpenAI (``Invalid value: 'hgih'. Supported values
are: ...``), so a request tested against the frontend broke at its first real call.
``safety_identifier`` and ``prompt_cache_key`` are strings there.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

CHAT: Any = [{"role": "user", "content": "choices"}]


@pytest.mark.parametrize(("extra", "param"), [
    ({"reasoning_effort": "hgih"}, "reasoning_effort"),
    ({"reasoning_effort": 2}, "reasoning_effort"),
    ({"service_tier": "standard_only"}, "service_tier"),
    ({"verbosity": "loud"}, "verbosity"),
    ({"safety_identifier": 42}, "safety_identifier"),
    ({"prompt_cache_key": ["a"]}, "prompt_cache_key"),
])
def test_a_value_openai_does_not_take_is_refused(
    oai: openai.OpenAI, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, extra_body=extra)
    assert info.value.param == param, info.value.body


def test_the_values_openai_takes_are_served(oai: openai.OpenAI) -> None:
    reply = oai.chat.completions.create(
        model="echo", messages=CHAT, reasoning_effort="minimal", service_tier="flex",
        verbosity="low", safety_identifier="user-1", prompt_cache_key="k")
    assert reply.choices[0].message.content == "echo: user: choices"
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, verbosity="loud")  # type: ignore[arg-type]
    assert info.value.message.endswith("Invalid value: 'loud'. Supported values are: 'low', "
                                       "'medium', and 'high'.")
    assert info.value.code == "invalid_value"
    for none in ("reasoning_effort", "service_tier", "verbosity"):
        assert oai.chat.completions.create(model="echo", messages=CHAT,
                                           extra_body={none: None}).id


@pytest.mark.parametrize("tool", [
    {"type": "web_search_preview"},  # a Responses built-in tool
    {"type": "functions", "function": {"name": "lookup"}},
])
def test_a_tool_type_chat_does_not_take_is_refused(
    oai: openai.OpenAI, tool: dict[str, Any]
) -> None:
    # Served here as a tool the engine would never call; OpenAI's chat answers 400.
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as info:
            oai.chat.completions.create(model="echo", messages=CHAT, stream=stream,
                                        tools=[{"type": "custom", "custom": {"name": "c"}},
                                               tool])  # type: ignore[list-item]
        assert info.value.param == "tools[1].type", info.value.body
        assert info.value.message.endswith(
            "Supported values are: 'function' and 'custom'.")


TOOLS: Any = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
ALLOWED: Any = [{"type": "function", "function": {"name": "lookup"}}]


@pytest.mark.parametrize(("choice", "param"), [
    ({"type": "allowed_tools", "allowed_tools": {"mode": "sometimes", "tools": ALLOWED}},
     "tool_choice.allowed_tools.mode"),
    ({"type": "allowed_tools", "allowed_tools": {"tools": ALLOWED}},
     "tool_choice.allowed_tools.mode"),
    ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": "lookup"}},
     "tool_choice.allowed_tools.tools"),
    ({"type": "allowed_tools"}, "tool_choice.allowed_tools"),
    ({"type": "allowed_tools", "mode": "auto", "tools": ALLOWED},  # the Responses shape
     "tool_choice.allowed_tools"),
])
def test_an_allowed_tools_choice_openai_refuses_is_refused(
    oai: openai.OpenAI, choice: dict[str, Any], param: str
) -> None:
    # Served here as a choice that forces nothing; OpenAI's chat answers 400.
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, tools=TOOLS,
                                    tool_choice=choice)
    assert info.value.param == param, info.value.body
    served = {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": ALLOWED}}
    assert oai.chat.completions.create(model="echo", messages=CHAT, tools=TOOLS,
                                       tool_choice=served).id


def test_the_service_tier_asked_is_said_back(oai: openai.OpenAI) -> None:
    # OpenAI's reply (and each chunk) says the tier that served a request that set one:
    # the SDK's `service_tier` read None here, so a client checking its tier saw none.
    reply = oai.chat.completions.create(model="echo", messages=CHAT, service_tier="flex")
    assert (reply.service_tier, reply.choices[0].message.content) == (
        "flex", "echo: user: choices")
    assert oai.chat.completions.create(model="echo", messages=CHAT,
                                       service_tier="auto").service_tier == "default"
    assert oai.chat.completions.create(model="echo", messages=CHAT).service_tier is None
    chunks = list(oai.chat.completions.create(
        model="echo", messages=CHAT, service_tier="priority", stream=True,
        stream_options={"include_usage": True}))
    assert chunks and {chunk.service_tier for chunk in chunks} == {"priority"}
    assert chunks[-1].usage is not None
