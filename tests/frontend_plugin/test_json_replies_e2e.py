"""A JSON response format gets a JSON reply, through the official SDKs' parse helpers.

The format was accepted and the echo engine answered with its text all the same
(``echo: user: …``), so ``json.loads`` on the content, and every SDK ``parse`` helper
(``chat.completions.parse``, ``responses.parse``, ``messages.parse`` and their
streams), failed on a 200: pydantic's ``ValidationError``, "Invalid JSON".
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import anthropic
import httpx
import openai
import pydantic
import pytest

from tests.frontend_plugin.conftest import Stack

CHAT: Any = [{"role": "user", "content": "structured please"}]
TEXT = "echo: user: structured please"


class Verdict(pydantic.BaseModel):
    summary: str
    score: int
    tags: list[str]
    label: Literal["good", "bad"]
    note: str | None


def _is_verdict(verdict: Verdict | None, text: str = TEXT) -> bool:
    return verdict == Verdict(summary=text, score=0, tags=[], label="good", note=text)


def test_json_object_replies_parse_on_every_route(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    json_object: Any = {"type": "json_object"}
    # JSON mode needs the word in the messages, as OpenAI requires (test_json_object_word_e2e).
    asked: Any = [{"role": "user", "content": "structured json please"}]
    said = "echo: user: structured json please"
    chat = oai.chat.completions.create(model="echo", messages=asked, response_format=json_object)
    assert json.loads(chat.choices[0].message.content or "") == {"reply": said}
    streamed = oai.chat.completions.create(model="echo", messages=asked, stream=True,
                                           response_format=json_object)
    text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    assert json.loads(text) == {"reply": said}
    response = oai.responses.create(model="echo", input="structured json please",
                                    text={"format": json_object})
    assert json.loads(response.output_text) == {"reply": said}
    schema: Any = {"type": "json_schema", "schema": {"type": "object"}}
    message = claude.messages.create(model="echo", max_tokens=64, messages=CHAT,
                                     output_config={"format": schema})
    assert json.loads(message.content[0].text) == {"reply": TEXT}  # type: ignore[union-attr]
    # Without a format the reply is the text, as before.
    plain = oai.chat.completions.create(model="echo", messages=CHAT,
                                        response_format={"type": "text"})
    assert plain.choices[0].message.content == TEXT


def test_the_sdk_parse_helpers_get_their_model(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    chat = oai.chat.completions.parse(model="echo", messages=CHAT, response_format=Verdict)
    assert _is_verdict(chat.choices[0].message.parsed)
    with oai.chat.completions.stream(model="echo", messages=CHAT,
                                     response_format=Verdict) as stream:
        assert _is_verdict(stream.get_final_completion().choices[0].message.parsed)
    response = oai.responses.parse(model="echo", input="structured please", text_format=Verdict)
    assert _is_verdict(response.output_parsed)
    with oai.responses.stream(model="echo", input="structured please",
                              text_format=Verdict) as events:
        assert _is_verdict(events.get_final_response().output_parsed)
    message = claude.messages.parse(model="echo", max_tokens=256, messages=CHAT,
                                    output_format=Verdict)
    assert _is_verdict(message.parsed_output)
    with claude.messages.stream(model="echo", max_tokens=256, messages=CHAT,
                                output_format=Verdict) as messages:
        assert _is_verdict(messages.get_final_message().parsed_output)


def test_async_parse_helpers_each_get_their_own_document(stack: Stack) -> None:
    async def run() -> list[Any]:
        oai = openai.AsyncOpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0)
        claude = anthropic.AsyncAnthropic(base_url=stack.url, api_key="k", max_retries=0)
        shared = {"x-request-id": "one-json-id"}
        calls = []
        for i in range(6):
            chat: Any = [{"role": "user", "content": f"caller {i}"}]
            calls.append(oai.chat.completions.parse(
                model="echo", messages=chat, response_format=Verdict, extra_headers=shared)
                if i % 2 else claude.messages.parse(
                model="echo", max_tokens=256, messages=chat, output_format=Verdict,
                extra_headers=shared))
        return list(await asyncio.gather(*calls))

    for i, reply in enumerate(asyncio.run(run())):
        parsed = reply.choices[0].message.parsed if i % 2 else reply.parsed_output
        assert _is_verdict(parsed, f"echo: user: caller {i}"), i


def test_a_schema_the_engine_cannot_answer_is_a_400_naming_it(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    endless: Any = {"type": "object", "properties": {"me": {"$ref": "#"}},
                    "required": ["me"]}
    with pytest.raises(openai.BadRequestError) as chat:
        oai.chat.completions.create(model="echo", messages=CHAT, response_format={
            "type": "json_schema", "json_schema": {"name": "endless", "schema": endless}})
    assert chat.value.param == "response_format.json_schema"
    assert "allows no document" in chat.value.message
    with pytest.raises(openai.BadRequestError) as responses:
        oai.responses.create(model="echo", input="x", text={"format": {
            "type": "json_schema", "name": "endless", "schema": endless}})
    assert responses.value.param == "text.format"
    # Counting generates nothing: the schema needs no document there.
    counted = oai.responses.input_tokens.count(model="echo", input="x", text={"format": {
        "type": "json_schema", "name": "endless", "schema": endless}})
    assert counted.input_tokens == 2
    for config, field in (
        ({"format": {"type": "json_schema", "schema": endless}}, "output_config.format.schema"),
        ({"format": {"type": "json_schema"}}, "output_config.format.schema"),
        ({"format": {"type": "yaml", "schema": {}}}, "output_config.format"),
        ({"effort": "extreme"}, "output_config.effort"),
    ):
        with pytest.raises(anthropic.BadRequestError) as messages:
            claude.messages.create(model="echo", max_tokens=8, messages=CHAT,
                                   output_config=config)
        assert f"'{field}'" in (messages.value.api_message or ""), config


def test_sglang_json_schema_gets_a_json_text_and_other_grammars_are_refused(
    stack: Stack
) -> None:
    # SGLang's /generate constrains its text to sampling_params.json_schema (a string);
    # the echo answered it with plain text, and ignored a regex or ebnf it cannot follow.
    schema = json.dumps(Verdict.model_json_schema())
    for stream in (False, True):
        answer = httpx.post(stack.url + "/generate", timeout=30, json={
            "text": "structured please", "stream": stream,
            "sampling_params": {"json_schema": schema, "max_new_tokens": 64}})
        assert answer.status_code == 200, answer.text
        last = (answer.json() if not stream else
                [json.loads(line[6:]) for line in answer.text.splitlines()
                 if line.startswith("data: {")][-1])
        assert _is_verdict(Verdict.model_validate_json(last["text"]), "echo: structured please")
    for params, field in (({"json_schema": "{not json"}, "json_schema"),
                          ({"json_schema": {"type": "object"}}, "json_schema"),
                          ({"regex": "[a-z]+"}, "regex"), ({"ebnf": "root ::= 'a'"}, "ebnf")):
        refused = httpx.post(stack.url + "/generate", timeout=30,
                             json={"text": "x", "sampling_params": params})
        assert refused.status_code == 400, params
        assert refused.json()["error"]["param"] == f"sampling_params.{field}"
