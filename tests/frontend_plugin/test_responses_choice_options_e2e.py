"""The Responses API's options of a fixed set of values are checked as OpenAI checks them.

``reasoning.effort``, ``reasoning.summary``, ``reasoning.context``, ``service_tier`` and
``text.verbosity`` were not looked at on /v1/responses (chat's were): a typo
(``"hgih"``), chat's ``reasoning_effort`` shape (a string for ``reasoning``) or a number
was a 200 here and a 400 at OpenAI, so a request tested against the frontend broke at
its first real call. ``safety_identifier``, ``prompt_cache_key`` and ``reasoning.mode``
are strings there, ``max_tool_calls`` an integer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

from tests.frontend_plugin.conftest import Stack


@pytest.mark.parametrize(("extra", "param"), [
    ({"reasoning": {"effort": "hgih"}}, "reasoning.effort"),
    ({"reasoning": {"effort": 2}}, "reasoning.effort"),
    ({"reasoning": {"summary": "short"}}, "reasoning.summary"),
    ({"reasoning": {"generate_summary": "short"}}, "reasoning.generate_summary"),
    ({"reasoning": {"context": "every_turn"}}, "reasoning.context"),
    ({"reasoning": {"context": True}}, "reasoning.context"),
    ({"reasoning": {"mode": 2}}, "reasoning.mode"),
    ({"reasoning": "high"}, "reasoning"),  # chat's reasoning_effort, put in Responses' field
    ({"service_tier": "standard_only"}, "service_tier"),
    ({"text": {"verbosity": "loud"}}, "text.verbosity"),
    ({"safety_identifier": 42}, "safety_identifier"),
    ({"prompt_cache_key": ["a"]}, "prompt_cache_key"),
    ({"max_tool_calls": "3"}, "max_tool_calls"),
    ({"max_tool_calls": True}, "max_tool_calls"),
    ({"prompt_cache_options": {"ttl": "1h"}}, "prompt_cache_options.ttl"),
    ({"prompt_cache_options": {"mode": "manual"}}, "prompt_cache_options.mode"),
    ({"prompt_cache_options": "12h"}, "prompt_cache_options"),
    ({"background_options": {"completion_window": "24h"}},
     "background_options.completion_window"),
    ({"image": {"context_compression": "on"}}, "image.context_compression"),
    ({"access_programs": {"cyber": "blue"}}, "access_programs.cyber"),
    # A misspelt built-in tool was served as a tool the engine would never call.
    ({"tools": [{"type": "web_serch"}]}, "tools[0].type"),
    ({"tools": [{"type": "function", "name": "f"}, {"type": "Function", "name": "g"}]},
     "tools[1].type"),
])
def test_a_value_openai_does_not_take_is_refused(
    oai: openai.OpenAI, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="choices", extra_body=extra)
    assert info.value.param == param, info.value.body


def test_the_values_openai_takes_are_served(oai: openai.OpenAI) -> None:
    reply = oai.responses.create(
        model="echo", input="choices",
        reasoning={"effort": "minimal", "summary": "auto", "context": "all_turns",
                   "mode": "pro"},
        service_tier="ultrafast", text={"verbosity": "low"}, safety_identifier="user-1",
        prompt_cache_key="k", max_tool_calls=3)
    assert reply.output_text == "echo: user: choices"
    builtin = oai.responses.create(model="echo", input="choices", tools=[
        {"type": "web_search"}, {"type": "web_search_preview_2025_03_11"},
        {"type": "function", "name": "f", "parameters": None, "strict": None}])
    assert builtin.output_text == "echo: user: choices"
    nested = oai.responses.create(model="echo", input="choices", extra_body={
        "prompt_cache_options": {"mode": "explicit", "ttl": "12h"},
        "background_options": {"completion_window": "soonest"},
        "image": {"context_compression": "disabled"}, "access_programs": {"cyber": "standard"}})
    assert nested.output_text == "echo: user: choices"
    with oai.responses.stream(model="echo", input="choices",
                              reasoning={"effort": None, "context": None},
                              service_tier=None, text={"verbosity": None}) as stream:
        assert stream.get_final_response().output_text == "echo: user: choices"
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="choices",
                             text={"verbosity": "loud"})  # type: ignore[typeddict-item]
    assert info.value.message.endswith("Invalid value: 'loud'. Supported values are: 'low', "
                                       "'medium', and 'high'.")
    assert info.value.code == "invalid_value"


def test_the_async_client_and_a_stream_are_refused_alike(stack: Stack) -> None:
    async def refused() -> Any:
        client = openai.AsyncOpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0)
        async with client:
            try:
                await client.responses.create(model="echo", input="choices", stream=True,
                                              reasoning={"effort": "hgih"})  # type: ignore[typeddict-item]
            except openai.BadRequestError as error:
                return error.param
        return None

    assert asyncio.run(refused()) == "reasoning.effort"


TOOLS: Any = [{"type": "function", "name": "lookup", "parameters": {}}]
ALLOWED: Any = [{"type": "function", "name": "lookup"}]


@pytest.mark.parametrize(("choice", "param"), [
    ({"type": "allowed_tools", "mode": "sometimes", "tools": ALLOWED}, "tool_choice.mode"),
    ({"type": "allowed_tools", "tools": ALLOWED}, "tool_choice.mode"),
    ({"type": "allowed_tools", "mode": "auto", "tools": "lookup"}, "tool_choice.tools"),
    ({"type": "allowed_tools", "mode": "auto"}, "tool_choice.tools"),
    ({"type": "allowed_tools",  # chat's nested shape
      "allowed_tools": {"mode": "auto", "tools": ALLOWED}}, "tool_choice.mode"),
])
def test_an_allowed_tools_choice_openai_refuses_is_refused(
    oai: openai.OpenAI, choice: dict[str, Any], param: str
) -> None:
    # Served here as a choice that forces nothing (and counted); OpenAI answers 400.
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="choices", tools=TOOLS, tool_choice=choice)
    assert info.value.param == param, info.value.body
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.input_tokens.count(model="echo", input="choices", tools=TOOLS,
                                         tool_choice=choice)
    assert info.value.param == param, info.value.body
    served: Any = {"type": "allowed_tools", "mode": "auto", "tools": ALLOWED}
    assert oai.responses.create(model="echo", input="choices", tools=TOOLS,
                                tool_choice=served).output_text == "echo: user: choices"


@pytest.mark.parametrize(("choice", "param"), [
    ({"type": "function", "name": "look_up"}, "tool_choice"),  # no tool of that name
    ({"type": "custom", "name": "lookup"}, "tool_choice"),  # lookup is a function
    ({"type": "function"}, "tool_choice.name"),
    ({"type": "functions", "name": "lookup"}, "tool_choice.type"),
])
def test_a_tool_choice_naming_no_tool_is_not_counted(
    oai: openai.OpenAI, choice: dict[str, Any], param: str
) -> None:
    # input_tokens counts a call that forces a tool, as OpenAI does, but counted one that
    # names no tool the request has, which OpenAI refuses: /v1/responses then refused it
    # only as a forced call, so fixing that led to the next 400 at OpenAI.
    for count in (oai.responses.input_tokens.count, oai.responses.create):
        with pytest.raises(openai.BadRequestError) as info:
            count(model="echo", input="choices", tools=TOOLS, tool_choice=choice)
        assert info.value.param == param, info.value.body
    forced: Any = {"type": "function", "name": "lookup"}
    assert oai.responses.input_tokens.count(model="echo", input="choices", tools=TOOLS,
                                            tool_choice=forced).input_tokens


def test_previous_response_id_and_conversation_together_are_mutually_exclusive(
    oai: openai.OpenAI,
) -> None:
    # OpenAI refuses the pair before looking either up; here the id was not found, and a
    # client that recovers from previous_response_not_found by resending the whole
    # input, conversation kept, met a second 404 instead of the bug it had.
    for count in (oai.responses.create, oai.responses.input_tokens.count):
        with pytest.raises(openai.BadRequestError) as info:
            count(model="echo", input="x", previous_response_id="resp_1",
                  conversation="conv_1")
        assert info.value.code == "mutually_exclusive_parameters", info.value.body
        assert "'previous_response_id' or 'conversation'" in info.value.message


def test_the_response_object_repeats_the_checked_options(oai: openai.OpenAI) -> None:
    # OpenAI's Response object repeats them; it said reasoning, max_tool_calls,
    # top_logprobs, prompt_cache_key and safety_identifier null whatever was sent, and a
    # text without a format when only a verbosity was set (text.format.type raised).
    asked: Any = {"reasoning": {"effort": "low", "summary": "auto"}, "max_tool_calls": 3,
                  "top_logprobs": 2, "prompt_cache_key": "k", "safety_identifier": "u-1",
                  "text": {"verbosity": "low"}}
    reply = oai.responses.create(model="echo", input="choices", **asked)
    with oai.responses.stream(model="echo", input="choices", **asked) as stream:
        final = stream.get_final_response()
    for response in (reply, final):
        assert response.reasoning is not None
        assert (response.reasoning.effort, response.reasoning.summary) == ("low", "auto")
        assert (response.max_tool_calls, response.top_logprobs, response.prompt_cache_key,
                response.safety_identifier) == (3, 2, "k", "u-1")
        assert response.text is not None and response.text.format is not None
        assert (response.text.format.type, response.text.verbosity) == ("text", "low")
    plain = oai.responses.create(model="echo", input="choices")
    assert plain.reasoning is not None and plain.reasoning.effort is None
    assert (plain.max_tool_calls, plain.top_logprobs) == (None, 0)


def test_the_response_object_says_its_tier_background_and_cache_retention(
    oai: openai.OpenAI
) -> None:
    # OpenAI's Response object has them; they were left out (None in the SDK whatever was
    # sent), so a client reading back the tier it was served at read nothing. The tier is
    # the one that served it: "default" when none or "auto" was asked.
    asked: Any = {"service_tier": "flex", "background": False,
                  "prompt_cache_retention": "24h"}
    reply = oai.responses.create(model="echo", input="tier", **asked)
    with oai.responses.stream(model="echo", input="tier", **asked) as stream:
        final = stream.get_final_response()
    for response in (reply, final):
        assert (response.service_tier, response.background,
                response.prompt_cache_retention) == ("flex", False, "24h")
    for tier in (None, "auto"):
        plain = oai.responses.create(model="echo", input="tier", service_tier=tier)
        assert (plain.service_tier, plain.background,
                plain.prompt_cache_retention) == ("default", False, None)


@pytest.mark.parametrize("text", [["be brief"], 3, True])
def test_a_text_setting_that_is_no_object_is_refused(oai: openai.OpenAI, text: Any) -> None:
    # Only a plain string is left alone (one body sent to every route carries it for
    # /generate); a list or a number was served, and answered 400 by OpenAI.
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="choices", extra_body={"text": text})
    assert (info.value.param, info.value.code) == ("text", "invalid_type"), info.value.body
    assert oai.responses.create(model="echo", input="choices",
                                extra_body={"text": "for /generate"}).output_text


def test_a_prompt_cache_retention_openai_does_not_take_is_refused(oai: openai.OpenAI) -> None:
    # Served on chat and Responses alike ("24 hours", "1d"); OpenAI answers 400.
    for extra in ({"prompt_cache_retention": "1d"}, {"prompt_cache_retention": 24}):
        with pytest.raises(openai.BadRequestError) as info:
            oai.responses.create(model="echo", input="choices", extra_body=extra)
        assert info.value.param == "prompt_cache_retention", info.value.body
        with pytest.raises(openai.BadRequestError) as info:
            oai.chat.completions.create(model="echo", extra_body=extra,
                                        messages=[{"role": "user", "content": "choices"}])
        assert info.value.param == "prompt_cache_retention", info.value.body
    assert oai.responses.create(model="echo", input="choices",
                                prompt_cache_retention="24h").output_text
    assert oai.chat.completions.create(model="echo", prompt_cache_retention="in_memory",
                                       messages=[{"role": "user", "content": "choices"}]).id
