"""Request options no engine here uses are checked as the real APIs check them.

``seed``, ``user``, ``logit_bias``, ``response_format``, ``tools``, ``tool_choice``,
``parallel_tool_calls``, ``suffix``, ``best_of`` and Anthropic's ``metadata`` were not
looked at: a request holding a wrong one was a 200 here and a 400 at the real API, and
a ``tool_choice`` that forces a tool call got a text reply with no tool call in it.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from tests.support.openai_refusals import assert_both_openai_routes_refuse

CHAT: Any = [{"role": "user", "content": "request options"}]
OPENAI_TOOLS: Any = [{"type": "function", "function": {
    "name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
ANTHROPIC_TOOLS: Any = [{"name": "lookup", "input_schema": {"type": "object"}}]


@pytest.mark.parametrize(("extra", "param"), [
    ({"seed": "abc"}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"user": 5}, "user"),
    ({"logit_bias": "x"}, "logit_bias"),
    ({"logit_bias": {"50256": -1000}}, "logit_bias"),
    ({"logit_bias": {"the": 5}}, "logit_bias"),
])
def test_options_of_both_openai_routes_are_checked(
    oai: openai.OpenAI, extra: dict[str, Any], param: str
) -> None:
    assert_both_openai_routes_refuse(oai, extra, param)


@pytest.mark.parametrize(("extra", "param"), [
    ({"response_format": "json"}, "response_format"),
    ({"response_format": {"type": "yaml"}}, "response_format"),
    ({"response_format": {"type": "json_schema"}}, "response_format"),
    ({"tools": "lookup"}, "tools"),
    ({"tools": [{"function": {"name": "f"}}]}, "tools[0]"),
    ({"tool_choice": "auto"}, "tool_choice"),  # no tools to choose from
    ({"tools": OPENAI_TOOLS, "tool_choice": "sometimes"}, "tool_choice"),
    ({"tools": OPENAI_TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    # Sent by frameworks whatever the call's tools: OpenAI's chat takes it only beside them.
    ({"parallel_tool_calls": False}, "parallel_tool_calls"),
    ({"parallel_tool_calls": True}, "parallel_tool_calls"),
    ({"metadata": "nightly"}, "metadata"),  # checked as on /v1/responses
    ({"metadata": {"run": 42}}, "metadata"),
])
def test_chat_options_are_checked(oai: openai.OpenAI, extra: dict[str, Any], param: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, extra_body=extra)
    assert info.value.param == param, info.value.body


def test_chat_metadata_needs_store_as_openai_requires(oai: openai.OpenAI) -> None:
    # OpenAI's chat keeps metadata only with a stored completion and refuses it otherwise
    # (400, the error frameworks met at their first real call): it was served here.
    for store in ({}, {"store": False}):
        with pytest.raises(openai.BadRequestError) as info:
            oai.chat.completions.create(model="echo", messages=CHAT, metadata={"run": "n"},
                                        **store)  # type: ignore[call-overload]
        assert info.value.param == "metadata", info.value.body
        assert "only allowed when 'store' is enabled" in info.value.message
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, store="yes")  # type: ignore[call-overload]
    assert info.value.param == "store", info.value.body
    for served in ({"metadata": {"run": "n"}, "store": True}, {"metadata": {}},
                   {"metadata": None}):
        assert oai.chat.completions.create(model="echo", messages=CHAT, extra_body=served).id


def test_an_empty_tools_list_is_refused_as_openai_refuses_it(oai: openai.OpenAI) -> None:
    # Frameworks that always send their tool list sent tools=[] when there were none:
    # served here, a 400 from OpenAI, the most common tool error met at a first real call.
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=CHAT, tools=[])
    assert (info.value.param, info.value.code) == ("tools", "empty_array")
    assert "empty array" in info.value.message
    # The Responses API takes an empty list (its Response objects say tools: []).
    assert oai.responses.create(model="echo", input="x", tools=[]).output_text


@pytest.mark.parametrize(("extra", "param"), [
    ({"suffix": 5}, "suffix"),
    ({"best_of": 0}, "best_of"),
    ({"best_of": "two"}, "best_of"),
    ({"best_of": 2, "stream": True}, "best_of"),  # the best is known only at the end
])
def test_legacy_completion_options_are_checked(
    oai: openai.OpenAI, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.completions.create(model="echo", prompt="x", extra_body=extra)
    assert info.value.param == param, info.value.body


def test_a_tool_choice_that_forces_a_call_is_refused_in_both_sdks(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    # The engines answer with text only: a forced call was a 200 whose tool_calls was
    # None, so code reading message.tool_calls[0] failed on a "successful" reply.
    for choice in ("required", {"type": "function", "function": {"name": "lookup"}}):
        with pytest.raises(openai.BadRequestError) as info:
            oai.chat.completions.create(model="echo", messages=CHAT, tools=OPENAI_TOOLS,
                                        tool_choice=choice)  # type: ignore[arg-type]
        assert info.value.param == "tool_choice" and "force" in info.value.message
    for anthropic_choice in ({"type": "any"}, {"type": "tool", "name": "lookup"}):
        with pytest.raises(anthropic.BadRequestError) as refused:
            claude.messages.create(model="echo", max_tokens=8, messages=CHAT,
                                   tools=ANTHROPIC_TOOLS,
                                   tool_choice=anthropic_choice)  # type: ignore[arg-type]
        assert refused.value.type == "invalid_request_error"
        assert "'tool_choice' cannot force" in (refused.value.api_message or "")


LEGACY_FUNCTIONS: Any = [{"name": "lookup", "parameters": {"type": "object", "properties": {}}}]


def test_the_legacy_function_call_is_checked_as_tool_choice_is(oai: openai.OpenAI) -> None:
    # functions / function_call, the SDK's deprecated form of tools / tool_choice, were
    # not looked at: a function_call naming a function got a 200 whose
    # message.function_call was None, and one without functions was served.
    refused: Any = (
        ({"function_call": {"name": "lookup"}, "functions": LEGACY_FUNCTIONS}, "cannot force"),
        ({"function_call": "auto"}, "only allowed when 'functions'"),
        ({"function_call": "sometimes", "functions": LEGACY_FUNCTIONS}, "must be"),
        ({"functions": [{"parameters": {}}]}, "'functions[0]'"),
    )
    for extra, fragment in refused:
        with pytest.raises(openai.BadRequestError) as info:
            oai.chat.completions.create(model="echo", messages=CHAT, extra_body=extra)
        assert info.value.param in ("function_call", "functions[0]")
        assert fragment in info.value.message
    for served in ("auto", "none"):
        reply = oai.chat.completions.create(model="echo", messages=CHAT,
                                            functions=LEGACY_FUNCTIONS, function_call=served)
        assert reply.choices[0].message.content == "echo: user: request options"


def test_chat_modalities_that_ask_for_audio_are_refused(oai: openai.OpenAI) -> None:
    # The reply is text only: message.audio was None on a 200, so code reading
    # message.audio.data failed on a "successful" reply.
    for modalities in (["text", "audio"], ["audio"], ["video"], "text"):
        with pytest.raises(openai.BadRequestError) as info:
            oai.chat.completions.create(model="echo", messages=CHAT, modalities=modalities,  # type: ignore[arg-type]
                                        audio={"voice": "alloy", "format": "wav"})
        assert info.value.param == "modalities", modalities
    text = oai.chat.completions.create(model="echo", messages=CHAT, modalities=["text"])
    assert text.choices[0].message.content == "echo: user: request options"


@pytest.mark.parametrize(("extra", "field"), [
    ({"metadata": {"user_id": 5}}, "metadata.user_id"),
    ({"metadata": {"session": "s-1"}}, "metadata"),
    ({"metadata": "user-1"}, "metadata"),
    ({"tools": [{"input_schema": {}}]}, "tools[0]"),
    ({"tool_choice": {"type": "auto"}}, "tool_choice"),  # no tools to choose from
    ({"tools": ANTHROPIC_TOOLS, "tool_choice": "auto"}, "tool_choice"),
    ({"tools": ANTHROPIC_TOOLS,
      "tool_choice": {"type": "auto", "disable_parallel_tool_use": "true"}},
     "tool_choice.disable_parallel_tool_use"),
    ({"thinking": {"type": "enabled", "budget_tokens": 500}}, "thinking.budget_tokens"),
    ({"thinking": {"type": "enabled", "budget_tokens": 4096}}, "thinking.budget_tokens"),
    ({"thinking": "on"}, "thinking"),
    # A typo of a type (or another API's word): every model refuses a type it has not.
    ({"thinking": {"type": "enable", "budget_tokens": 1024}}, "thinking.type"),
    ({"thinking": {"type": "on"}}, "thinking.type"),
    ({"thinking": {"type": "adaptive", "display": "full"}}, "thinking.display"),
    ({"system": [{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}]},
     "system[0]"),
])
def test_anthropic_options_are_checked(
    claude: anthropic.Anthropic, extra: dict[str, Any], field: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model="echo", max_tokens=2048, messages=CHAT, extra_body=extra)
    assert info.value.type == "invalid_request_error"
    assert f"'{field}'" in (info.value.api_message or ""), info.value.body
    if extra.get("thinking") == {"type": "enabled", "budget_tokens": 4096}:
        return  # over this call's max_tokens; counting has none to stay below
    # count_tokens counted such a body (200) that the call it precedes gets a 400 for.
    with pytest.raises(anthropic.BadRequestError) as counted:
        claude.messages.count_tokens(model="echo", messages=CHAT, extra_body=extra)
    assert f"'{field}'" in (counted.value.api_message or ""), counted.value.body


def test_well_formed_options_are_served(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    reply = oai.chat.completions.create(
        model="echo", messages=CHAT, seed=7, user="user-1", logit_bias={"50256": -100},
        metadata={"run": "nightly"}, store=True,
        response_format={"type": "json_schema", "json_schema": {"name": "answer"}},
        tools=OPENAI_TOOLS, tool_choice="auto", parallel_tool_calls=False,
    )
    # A JSON format gets a JSON reply (test_json_replies_e2e.py), with the same text.
    assert reply.choices[0].message.content == '{"reply": "echo: user: request options"}'
    assert oai.chat.completions.create(model="echo", messages=CHAT, tools=OPENAI_TOOLS,
                                       tool_choice="none", response_format={"type": "text"})
    legacy = oai.completions.create(model="echo", prompt="legacy", suffix="!", best_of=2,
                                    seed=7, user="u", logit_bias={"1": 2.5})
    assert legacy.choices[0].text == "echo: legacy"
    message = claude.messages.create(
        model="echo", max_tokens=32, messages=CHAT, metadata={"user_id": "user-1"},
        tools=ANTHROPIC_TOOLS, tool_choice={"type": "auto"})
    assert message.content[0].text == "echo: user: request options"  # type: ignore[union-attr]
    assert claude.messages.create(model="echo", max_tokens=8, messages=CHAT,
                                  metadata={"user_id": None}, tools=ANTHROPIC_TOOLS,
                                  tool_choice={"type": "none"})
    blocks: Any = [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    assert claude.messages.count_tokens(model="echo", messages=CHAT, system=blocks)
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", messages=CHAT, system=[{"type": "image"}])  # type: ignore[list-item]
    for thinking in ({"type": "enabled", "budget_tokens": 1024}, {"type": "disabled"},
                     {"type": "adaptive"}):
        assert claude.messages.create(model="echo", max_tokens=2048, messages=CHAT,
                                      thinking=thinking)  # type: ignore[arg-type]


RESPONSES_TOOLS: Any = [{"type": "function", "name": "lookup", "parameters": {}}]


@pytest.mark.parametrize(("extra", "param"), [
    ({"user": 5}, "user"),
    ({"text": {"format": {"type": "yaml"}}}, "text.format"),
    ({"text": {"format": {"type": "json_schema", "schema": {}}}}, "text.format"),
    ({"tools": RESPONSES_TOOLS, "parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"tools": RESPONSES_TOOLS, "tool_choice": "required"}, "tool_choice"),
    ({"tools": RESPONSES_TOOLS, "tool_choice": {"type": "function", "name": "lookup"}},
     "tool_choice"),
])
def test_responses_options_are_checked(
    oai: openai.OpenAI, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="x", extra_body=extra)
    assert info.value.param == param, info.value.body


def test_a_responses_conversation_is_not_found_rather_than_ignored(oai: openai.OpenAI) -> None:
    # Nothing is stored here: the conversation's earlier turns were silently dropped and
    # the new input answered alone, as previous_response_id was before it was refused.
    for conversation in ("conv_123", {"id": "conv_123"}):
        with pytest.raises(openai.NotFoundError) as info:
            oai.responses.create(model="echo", input="and then?",
                                 conversation=conversation)  # type: ignore[arg-type]
        assert info.value.param == "conversation"
        assert info.value.message.endswith("Conversation with id 'conv_123' not found.")
    served = oai.responses.create(
        model="echo", input="x", user="u", tools=RESPONSES_TOOLS, tool_choice="auto",
        parallel_tool_calls=True,
        text={"format": {"type": "json_schema", "name": "answer", "schema": {}}})
    assert served.output_text == '{"reply": "echo: user: x"}'


def test_an_item_reference_is_not_found_rather_than_left_out(oai: openai.OpenAI) -> None:
    # The usual way to refer back to an earlier output is an item_reference to it, and
    # nothing is stored here: the referenced turn was dropped and the rest answered
    # alone ("echo: user: and then?"), the model's earlier answer never seen.
    first = oai.responses.create(model="echo", input="first question")
    later: Any = [{"type": "item_reference", "id": first.output[0].id},
                  {"role": "user", "content": "and then?"}]
    with pytest.raises(openai.NotFoundError) as info:
        oai.responses.create(model="echo", input=later)
    assert info.value.param == "input[0]"
    assert info.value.message.endswith(f"Item with id '{first.output[0].id}' not found.")
    with pytest.raises(openai.NotFoundError):
        oai.responses.input_tokens.count(model="echo", input=later)
    # The items themselves, passed back, are served.
    again: Any = [*first.output, {"role": "user", "content": "and then?"}]
    assert oai.responses.create(model="echo", input=again).output_text == (
        "echo: assistant: echo: user: first question\nuser: and then?")


def test_a_stored_prompt_is_not_found_rather_than_ignored(oai: openai.OpenAI) -> None:
    # A prompt template lives on OpenAI's platform and nothing is stored here: its
    # instructions and messages were silently dropped and the input answered alone.
    references: Any = ({"id": "pmpt_123"},
                       {"id": "pmpt_123", "version": "2", "variables": {"city": "Paris"}})
    for reference in references:
        with pytest.raises(openai.NotFoundError) as info:
            oai.responses.create(model="echo", input="and then?", prompt=reference)
        assert info.value.param == "prompt"
        assert info.value.message.endswith("Prompt with id 'pmpt_123' not found.")
    with pytest.raises(openai.NotFoundError):
        oai.responses.input_tokens.count(model="echo", input="x", extra_body={
            "prompt": {"id": "pmpt_123"}})
    with pytest.raises(openai.BadRequestError) as shapeless:
        oai.responses.create(model="echo", input="x", extra_body={"prompt": "pmpt_123"})
    assert shapeless.value.param == "prompt"
    assert oai.responses.create(model="echo", input="x", prompt=None).output_text


def test_token_counting_counts_a_forced_tool_choice(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    # Counting generates nothing, so a choice that forces a call is no promise broken:
    # both SDKs' counters take the body the call it precedes will send.
    counted = oai.responses.input_tokens.count(
        model="echo", input="count me", tools=RESPONSES_TOOLS, tool_choice="required")
    assert counted.input_tokens == 3
    assert claude.messages.count_tokens(
        model="echo", messages=CHAT, tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "any"}).input_tokens == 3
    assert claude.messages.count_tokens(
        model="echo", messages=CHAT,
        thinking={"type": "enabled", "budget_tokens": 4096}).input_tokens == 3


def test_a_tool_choice_of_type_tool_names_its_tool(claude: anthropic.Anthropic) -> None:
    # Anthropic's API requires the name (ToolChoiceToolParam); counting took the body.
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.count_tokens(model="echo", messages=CHAT, tools=ANTHROPIC_TOOLS,
                                     tool_choice={"type": "tool"})  # type: ignore[typeddict-item]
    assert "'tool_choice.name'" in (refused.value.api_message or ""), refused.value.body
    assert claude.messages.count_tokens(
        model="echo", messages=CHAT, tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "tool", "name": "lookup"}).input_tokens == 3


@pytest.mark.parametrize(("route", "extra", "param"), [
    ("chat", {"tools": [{"type": "function"}]}, "tools[0].function"),
    ("chat", {"tools": [{"type": "function", "function": {}}]}, "tools[0].function.name"),
    ("chat", {"tools": [{"type": "function", "function": {"name": "get weather"}}]},
     "tools[0].function.name"),
    ("chat", {"tools": [*OPENAI_TOOLS, {"type": "function", "function": {"name": "f" * 65}}]},
     "tools[1].function.name"),
    ("chat", {"functions": [{"name": "get.weather"}]}, "functions[0].name"),
    ("responses", {"tools": [{"type": "function", "name": "get weather", "parameters": {}}]},
     "tools[0].name"),
    ("responses", {"tools": [{"type": "function", "parameters": {}}]}, "tools[0].name"),
])
def test_a_function_tool_needs_a_name_openai_takes(
    oai: openai.OpenAI, route: str, extra: dict[str, Any], param: str
) -> None:
    # OpenAI takes function names of 1-64 letters, digits, '_' and '-'. A tool named
    # "get weather" (or one without its function object) was served here and refused
    # by the real API, so tool definitions tested against the frontend broke there.
    with pytest.raises(openai.BadRequestError) as info:
        if route == "chat":
            oai.chat.completions.create(model="echo", messages=CHAT, extra_body=extra)
        else:
            oai.responses.create(model="echo", input="x", extra_body=extra)
    assert info.value.param == param, info.value.body


def test_function_names_openai_takes_are_served(oai: openai.OpenAI) -> None:
    for name in ("lookup", "get_weather-2", "f" * 64):
        tools: Any = [{"type": "function", "function": {"name": name}}]
        assert oai.chat.completions.create(model="echo", messages=CHAT, tools=tools)
        flat: Any = [{"type": "function", "name": name, "parameters": {}}]
        assert oai.responses.create(model="echo", input="x", tools=flat)
    assert oai.chat.completions.create(model="echo", messages=CHAT,
                                       functions=[{"name": "lookup"}])
    # Tools of other kinds carry no function name.
    assert oai.responses.create(model="echo", input="x", tools=[{"type": "web_search"}])


@pytest.mark.parametrize("name", ["my schema", "", "answer.v2", "n" * 65])
def test_a_json_schema_format_needs_a_name_openai_takes(oai: openai.OpenAI, name: str) -> None:
    # OpenAI names formats as it names functions (1-64 letters, digits, '_', '-'); a
    # hand-written "my schema" got a JSON reply here and a 400 from the real API.
    schema: Any = {"type": "object"}
    with pytest.raises(openai.BadRequestError) as chat:
        oai.chat.completions.create(model="echo", messages=CHAT, response_format={
            "type": "json_schema", "json_schema": {"name": name, "schema": schema}})
    assert chat.value.param == "response_format.json_schema.name", chat.value.body
    with pytest.raises(openai.BadRequestError) as responses:
        oai.responses.create(model="echo", input="x", text={"format": {
            "type": "json_schema", "name": name, "schema": schema}})
    assert responses.value.param == "text.format.name", responses.value.body


def test_an_anthropic_service_tier_is_checked_and_said_back(claude: anthropic.Anthropic) -> None:
    # Anthropic takes "auto" and "standard_only"; a typo or OpenAI's "flex" was served
    # here and refused there. The reply's usage says the tier that served it.
    for wrong in ("flex", "standard", 1):
        with pytest.raises(anthropic.BadRequestError) as refused:
            claude.messages.create(model="echo", max_tokens=8, messages=CHAT,
                                   extra_body={"service_tier": wrong})
        assert "service_tier: Input should be 'auto' or 'standard_only'" in str(
            refused.value.body)
    served = claude.messages.create(model="echo", max_tokens=8, messages=CHAT,
                                    service_tier="standard_only")
    assert (served.usage.service_tier, served.content[0].type) == ("standard", "text")
    with claude.messages.stream(model="echo", max_tokens=8, messages=CHAT,
                                service_tier="auto") as stream:
        assert stream.get_final_message().usage.service_tier == "standard"
    assert claude.messages.create(model="echo", max_tokens=8,
                                  messages=CHAT).usage.service_tier is None
