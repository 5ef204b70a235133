"""The official openai and anthropic clients against the real frontend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.frontend_plugin.conftest import Stack, start_stack


def test_openai_chat(oai: openai.OpenAI) -> None:
    reply = oai.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "chat sdk plain"}]
    )
    assert "chat sdk plain" in (reply.choices[0].message.content or "")
    assert reply.id.startswith("chatcmpl-") and reply.choices[0].finish_reason == "stop"
    stream = oai.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "chat sdk stream"}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "chat sdk stream" in text


def test_openai_completions(oai: openai.OpenAI) -> None:
    reply = oai.completions.create(model="echo", prompt="completion sdk plain")
    assert "completion sdk plain" in reply.choices[0].text
    stream = oai.completions.create(model="echo", prompt="completion sdk stream", stream=True)
    assert "completion sdk stream" in "".join(c.choices[0].text for c in stream)


def test_openai_streams_end_with_the_usage_when_asked(oai: openai.OpenAI) -> None:
    chunks = list(oai.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "usage please"}], stream=True,
        stream_options={"include_usage": True},
    ))
    *text_chunks, last = chunks
    assert last.choices == [] and last.usage is not None
    assert last.usage.completion_tokens > 0
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens
    assert all(c.usage is None and len(c.choices) == 1 for c in text_chunks)
    assert text_chunks[-1].choices[0].finish_reason == "stop"
    done = list(oai.completions.create(model="echo", prompt="usage too", stream=True,
                                       stream_options={"include_usage": True}))
    assert done[-1].choices == [] and done[-1].usage is not None
    plain = list(oai.completions.create(model="echo", prompt="no usage", stream=True))
    assert all(c.usage is None and c.choices for c in plain)


def test_with_include_usage_every_other_chunk_has_a_null_usage(oai: openai.OpenAI) -> None:
    # OpenAI documents it: "All other chunks will also include a usage field, but with a
    # null value"; they had no usage field at all, so a raw reader testing for the key
    # took every chunk for the usage chunk, or none.
    usage: Any = {"include_usage": True}
    chat = oai.chat.completions.with_streaming_response.create(
        model="echo", messages=[{"role": "user", "content": "raw usage"}], stream=True,
        stream_options=usage)
    legacy = oai.completions.with_streaming_response.create(
        model="echo", prompt="raw usage", stream=True, stream_options=usage)
    plain = oai.completions.with_streaming_response.create(
        model="echo", prompt="no usage asked", stream=True)
    for call, asked in ((chat, True), (legacy, True), (plain, False)):
        with call as response:
            events = [json.loads(line[6:]) for line in response.iter_lines()
                      if line.startswith("data: {")]
        if not asked:
            assert all("usage" not in event for event in events)
            continue
        *chunks, last = events
        assert last["choices"] == [] and last["usage"]["total_tokens"] > 0
        assert chunks and all("usage" in c and c["usage"] is None for c in chunks)


def test_a_prompt_with_unicode_line_separators_streams_as_whole_data_lines(
        oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    # U+2028, U+2029 and U+0085 end a line for str.splitlines, which the SDKs' raw
    # `iter_lines()` follows: sent raw in the JSON, a data line was cut in two there and
    # the chunk lost (JSONDecodeError). JSON escapes them; SSE still ends lines at \n only.
    prompt = "before\u2028middle\u2029after\x85end"
    calls = [
        oai.chat.completions.with_streaming_response.create(
            model="echo", messages=[{"role": "user", "content": prompt}], stream=True),
        oai.completions.with_streaming_response.create(model="echo", prompt=prompt, stream=True),
        claude.messages.with_streaming_response.create(
            model="echo", max_tokens=64, stream=True,
            messages=[{"role": "user", "content": prompt}]),
    ]
    for call in calls:
        with call as response:
            lines = [line for line in response.iter_lines() if line]
        assert all(line.startswith(("data: ", "event: ")) for line in lines), lines
        events = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
        text = "".join(_streamed_text(event) for event in events)
        assert prompt in text


def _streamed_text(event: dict[str, Any]) -> str:
    """The text one streamed event of chat, completions or messages carries."""
    if event.get("type") == "content_block_delta":
        return str(event["delta"].get("text", ""))
    choice = (event.get("choices") or [{}])[0]
    return str(choice.get("text") or (choice.get("delta") or {}).get("content") or "")


def test_openai_asks_for_one_choice_or_is_told_why_not(oai: openai.OpenAI) -> None:
    reply = oai.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "one"}], n=1
    )
    assert len(reply.choices) == 1
    with pytest.raises(openai.BadRequestError) as info:
        oai.chat.completions.create(model="echo", messages=[{"role": "user", "content": "x"}], n=2)
    assert "'n' must be 1" in str(info.value)
    with pytest.raises(openai.BadRequestError):
        oai.completions.create(model="echo", prompt="x", n=3)


def test_openai_responses(oai: openai.OpenAI) -> None:
    reply = oai.responses.create(model="echo", input="responses sdk plain")
    assert "responses sdk plain" in reply.output_text
    events = list(oai.responses.create(model="echo", input="responses sdk stream", stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert "responses sdk stream" in deltas
    with oai.responses.stream(model="echo", input="responses helper") as helper:
        final = helper.get_final_response()
    assert "responses helper" in final.output_text


def test_openai_error_is_raised_as_bad_request(oai: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.completions.create(model="echo", prompt="x", max_tokens=10**9)
    assert "max_tokens" in str(info.value)


def test_anthropic_messages(claude: anthropic.Anthropic) -> None:
    reply = claude.messages.create(
        model="echo", max_tokens=64, messages=[{"role": "user", "content": "claude plain"}]
    )
    assert reply.id.startswith("msg_") and reply.stop_reason == "end_turn"
    assert "claude plain" in reply.content[0].text  # type: ignore[union-attr]
    # Nothing is cached, and the reply says so as Anthropic's API does (None: not said).
    cached = (reply.usage.cache_creation_input_tokens, reply.usage.cache_read_input_tokens)
    assert cached == (0, 0)
    raw = claude.messages.create(
        model="echo", max_tokens=64, stream=True,
        messages=[{"role": "user", "content": "claude raw stream"}],
    )
    kinds = [event.type for event in raw]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    with claude.messages.stream(
        model="echo", max_tokens=64, system="be brief",
        messages=[{"role": "user", "content": "claude helper stream"}],
    ) as stream:
        text = stream.get_final_text()
        usage = stream.get_final_message().usage
    assert "claude helper stream" in text and "system: be brief" in text
    assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)


def test_anthropic_error_shape(claude: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.BadRequestError) as info:
        claude.messages.create(model="echo", max_tokens=0,
                               messages=[{"role": "user", "content": "x"}])
    assert "max_tokens" in str(info.value)


def test_unknown_routes_and_methods_are_errors_the_sdks_can_read(
    oai: openai.OpenAI, claude: anthropic.Anthropic, stack: Stack
) -> None:
    # FastAPI's {"detail": "Not Found"} is neither API's shape: the OpenAI SDK's
    # error then said only "Error code: 404".
    with pytest.raises(openai.NotFoundError) as found:
        oai.embeddings.create(model="echo", input="x")
    assert found.value.message.endswith("Not Found: POST /v1/embeddings")
    assert found.value.type == "invalid_request_error"
    with pytest.raises(anthropic.NotFoundError) as missing:
        claude.messages.batches.retrieve("batch_1")
    assert missing.value.body == {"type": "error", "error": {
        "type": "not_found_error", "message": "Not Found: GET /v1/messages/batches/batch_1"},
        "request_id": missing.value.request_id}
    wrong = httpx.get(stack.url + "/v1/chat/completions", headers={"x-request-id": "m-405"})
    assert wrong.status_code == 405 and wrong.headers["allow"] == "POST"
    assert wrong.headers["x-request-id"] == "m-405" and "x-server-request-id" in wrong.headers
    assert wrong.json()["error"]["message"] == "Method Not Allowed: GET /v1/chat/completions"
    put = httpx.put(stack.url + "/v1/messages")
    assert put.status_code == 405 and put.json()["type"] == "error"


def test_models_retrieve_answers_the_listed_model_and_404s_the_others(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    # The route was missing: models.retrieve("echo"), the model models.list names,
    # raised NotFoundError.
    listed = [m.id for m in oai.models.list()]
    assert listed == ["echo"]
    model = oai.models.retrieve("echo")
    assert (model.id, model.object, model.owned_by) == ("echo", "model", "ridtrace")
    raw = oai.models.with_raw_response.retrieve("echo", extra_headers={"x-request-id": "m-1"})
    assert raw.headers["x-request-id"] == "m-1" and "x-server-request-id" in raw.headers
    info = claude.models.retrieve("echo")
    assert (info.id, info.type, info.display_name) == ("echo", "model", "echo")
    assert info.created_at is not None and info.created_at.year == 1970
    page = claude.models.list()
    assert [m.id for m in page.data] == ["echo"] and page.has_more is False
    assert page.data[0].type == "model" and page.last_id == "echo"
    for missing in ("gpt-missing", "org/some-model"):
        with pytest.raises(openai.NotFoundError) as info:
            oai.models.retrieve(missing)
        assert info.value.code == "model_not_found" and info.value.param == "model"
        assert info.value.message.endswith(f"The model '{missing}' does not exist")


def test_the_anthropic_sdk_gets_its_own_error_shape_and_id_outside_messages(
    claude: anthropic.Anthropic, stack: Stack
) -> None:
    # Only /v1/messages answered in Anthropic's shape with request-id: the Anthropic
    # SDK's models.retrieve of a missing model raised with type invalid_request_error
    # (Anthropic's API says not_found_error) and request_id None, nothing to quote.
    with pytest.raises(anthropic.NotFoundError) as missing:
        claude.models.retrieve("gpt-missing")
    headers = missing.value.response.headers
    assert missing.value.type == "not_found_error"
    assert missing.value.api_message == "The model 'gpt-missing' does not exist"
    assert missing.value.request_id == headers["x-server-request-id"]
    assert claude.models.with_raw_response.list().headers["request-id"]
    with pytest.raises(anthropic.NotFoundError) as unknown:
        claude.beta.files.list()
    assert unknown.value.type == "not_found_error" and unknown.value.request_id
    # The OpenAI SDK (no anthropic-version) keeps OpenAI's shape on the same paths.
    plain = httpx.get(stack.url + "/v1/models/gpt-missing")
    assert plain.json()["error"]["code"] == "model_not_found"
    assert "request-id" not in plain.headers


def test_anthropic_model_pages_follow_their_cursors_and_limit(
    claude: anthropic.Anthropic, oai: openai.OpenAI
) -> None:
    # after_id / before_id were ignored: the page after the last model listed it again,
    # so a client paging until a page came back empty never stopped; limit 0 was served.
    assert [m.id for m in claude.models.list(limit=1)] == ["echo"]
    after = claude.models.list(after_id="echo")
    assert after.data == [] and after.has_more is False and after.last_id is None
    assert claude.models.list(before_id="echo").data == []
    for limit in (0, 1001):
        with pytest.raises(anthropic.BadRequestError) as refused:
            claude.models.list(limit=limit)
        assert refused.value.type == "invalid_request_error"
        assert "'limit'" in (refused.value.api_message or "")
    assert [m.id for m in oai.models.list()] == ["echo"]


def test_a_model_id_with_a_slash_is_retrieved(tmp_path: Path) -> None:
    env = {"RIDTRACE_FRONTEND_MODEL": "org/echo-7b", "RIDTRACE_WORKER_MODEL": "org/echo-7b"}
    with start_stack(tmp_path, workers=[[]], env=env) as stack:
        oai = openai.OpenAI(base_url=stack.url + "/v1", api_key="k", max_retries=0)
        assert [m.id for m in oai.models.list()] == ["org/echo-7b"]
        assert oai.models.retrieve("org/echo-7b").id == "org/echo-7b"
        # Escaped or not, the slash names the same model.
        escaped = httpx.get(stack.url + "/v1/models/org%2Fecho-7b")
        assert escaped.status_code == 200 and escaped.json()["id"] == "org/echo-7b"
        with pytest.raises(openai.NotFoundError):
            oai.models.retrieve("org")
        reply = oai.chat.completions.create(messages=[{"role": "user", "content": "hi"}],
                                            model="org/echo-7b")
        assert reply.model == "org/echo-7b"


def test_conversations_with_tool_calls_and_images_are_served(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    # A tool round trip or an image in the history is an ordinary SDK conversation:
    # Anthropic's tool_use/tool_result/image blocks and OpenAI's image_url parts were
    # refused with 400 ("must be a text part"). Parts without text are left out of the
    # prompt the (text-only) engine sees; a tool result counts as its content's text.
    tools: Any = [{"name": "lookup", "description": "look up", "input_schema": {"type": "object"}}]
    reply = claude.messages.create(model="echo", max_tokens=64, tools=tools, messages=[
        {"role": "user", "content": "what is six times seven"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "use the tool", "signature": "sig"},
            {"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "6*7"}},
            {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {"q": "7*6"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "forty two"},
            {"type": "tool_result", "tool_use_id": "toolu_2",
             "content": [{"type": "text", "text": "also 42"}], "is_error": False},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgo="}},
            {"type": "text", "text": "thanks"}]},
    ])
    assert reply.content[0].text == (  # type: ignore[union-attr]
        "echo: user: what is six times seven\nassistant: let me look\n"
        "user: forty two\nalso 42\nthanks")
    chat = oai.chat.completions.create(model="echo", messages=[{"role": "user", "content": [
        {"type": "text", "text": "describe"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}])
    assert chat.choices[0].message.content == "echo: user: describe"
    # A part that is not a part at all is still the caller's mistake.
    with pytest.raises(anthropic.BadRequestError) as bad:
        claude.messages.create(model="echo", max_tokens=8, messages=[
            {"role": "user", "content": [{"type": "text", "text": 7}]}])  # type: ignore[list-item]
    assert "messages[0].content[0]" in bad.value.message
    with pytest.raises(openai.BadRequestError):
        oai.chat.completions.create(model="echo", messages=[
            {"role": "user", "content": [42]}])  # type: ignore[list-item]


def test_a_role_the_api_does_not_take_is_refused_as_the_api_refuses_it(
    oai: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    # A "system" message in the Messages API's list (the usual slip when moving code
    # from OpenAI) was served here, so the code "worked" until it met Anthropic's API,
    # which refuses it; a misspelt chat role likewise.
    system_message: Any = [{"role": "system", "content": "be brief"},
                           {"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=8, messages=system_message)
    assert refused.value.type == "invalid_request_error"
    assert "'messages[0].role' must be one of user, assistant, not 'system'" in (
        refused.value.api_message or "")
    assert "top-level 'system'" in (refused.value.api_message or "")
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", messages=system_message)
    with pytest.raises(openai.BadRequestError) as misspelt:
        oai.chat.completions.create(model="echo", messages=[
            {"role": "usr", "content": "hi"}])  # type: ignore[misc,list-item]
    assert misspelt.value.param == "messages[0].role" and "'usr'" in misspelt.value.message
    # Every role each API documents is still served.
    chat = oai.chat.completions.create(model="echo", messages=[
        {"role": "developer", "content": "d"}, {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        # A tool message answers the call before it (OpenAI refuses one without).
        {"role": "assistant", "content": "a", "tool_calls": [{
            "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "content": "t", "tool_call_id": "call_1"},
        {"role": "function", "content": "f", "name": "fn"}])
    assert chat.choices[0].message.content == (
        "echo: developer: d\nsystem: s\nuser: u\nassistant: a\ntool: t\nfunction: f")


def test_an_empty_anthropic_message_is_refused_as_the_api_refuses_it(
    claude: anthropic.Anthropic
) -> None:
    # Anthropic's API requires content in every message but a final assistant one (a
    # prefill) and refuses an empty text block; they were answered here ("echo: user: "),
    # so code that sent them "worked" until it met the real API.
    for messages, where in (
        ([{"role": "user", "content": ""}], "messages[0].content"),
        ([{"role": "user", "content": []}], "messages[0].content"),
        ([{"role": "user"}], "messages[0].content"),
        ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""},
          {"role": "user", "content": "again"}], "messages[1].content"),
        ([{"role": "user", "content": [{"type": "text", "text": "a"},
                                       {"type": "text", "text": ""}]}], "messages[0].content[1]"),
    ):
        with pytest.raises(anthropic.BadRequestError) as refused:
            claude.messages.create(model="echo", max_tokens=8, messages=messages)  # type: ignore[arg-type]
        assert refused.value.type == "invalid_request_error"
        assert f"'{where}'" in (refused.value.api_message or ""), messages
        with pytest.raises(anthropic.BadRequestError):
            claude.messages.count_tokens(model="echo", messages=messages)  # type: ignore[arg-type]
    prefill = claude.messages.create(model="echo", max_tokens=16, messages=[
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}])
    assert prefill.content[0].text == "echo: user: hi\nassistant: "  # type: ignore[union-attr]


def test_a_responses_tool_round_trip_is_served(oai: openai.OpenAI) -> None:
    # Responses input items without a role (the model's function_call, the caller's
    # function_call_output, reasoning) were refused: "'input[1].role' must be a
    # non-empty string". A tool output counts as a `tool` message, as on chat.
    reply = oai.responses.create(model="echo", input=[
        {"role": "user", "content": "six times seven"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "mul", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "and?"},
                     {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]},
    ])
    assert reply.output_text == "echo: user: six times seven\ntool: 42\nuser: and?"
    with pytest.raises(openai.BadRequestError) as bad:
        oai.responses.create(model="echo", input=[
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"content": "no role, no type"}])  # type: ignore[list-item]
    assert "'input[1].role'" in bad.value.message


def test_logprobs_are_answered_when_asked_for(oai: openai.OpenAI) -> None:
    # `logprobs: true` was answered with `"logprobs": null`, so SDK code reading
    # choice.logprobs.content raised AttributeError. The echo engine is deterministic:
    # each token had probability 1 (log 0.0) and is its own only alternative.
    chat: Any = [{"role": "user", "content": "log me"}]
    reply = oai.chat.completions.create(model="echo", messages=chat, logprobs=True,
                                        top_logprobs=3)
    content = reply.choices[0].logprobs.content  # type: ignore[union-attr]
    assert content is not None
    assert "".join(t.token for t in content) == reply.choices[0].message.content
    assert all(t.logprob == 0.0 and t.bytes == list(t.token.encode()) for t in content)
    assert all([a.token for a in t.top_logprobs] == [t.token] for t in content)
    streamed = [c for c in oai.chat.completions.create(
        model="echo", messages=chat, logprobs=True, stream=True) if c.choices]
    tokens = [t for c in streamed if c.choices[0].logprobs and c.choices[0].logprobs.content
              for t in c.choices[0].logprobs.content]
    assert "".join(t.token for t in tokens) == "echo: user: log me"
    assert all(t.top_logprobs == [] for t in tokens)
    plain = oai.chat.completions.create(model="echo", messages=chat)
    assert plain.choices[0].logprobs is None
    with pytest.raises(openai.BadRequestError) as bad:
        oai.chat.completions.create(model="echo", messages=chat, top_logprobs=2)
    assert bad.value.param == "top_logprobs"

    done = oai.completions.create(model="echo", prompt="log me too", logprobs=2)
    lp = done.choices[0].logprobs
    assert lp is not None and "".join(lp.tokens or []) == done.choices[0].text
    assert lp.token_logprobs == [0.0] * len(lp.tokens or [])
    assert lp.top_logprobs == [{t: 0.0} for t in lp.tokens or []]
    assert lp.text_offset == [done.choices[0].text.index(t) for t in lp.tokens or []]
    chunks = [c for c in oai.completions.create(model="echo", prompt="a b", logprobs=0,
                                                stream=True) if c.choices[0].text]
    offsets = [c.choices[0].logprobs.text_offset[0] for c in chunks]  # type: ignore[union-attr,index]
    assert offsets == [0, len("echo:"), len("echo: a")]
    with pytest.raises(openai.BadRequestError):
        oai.completions.create(model="echo", prompt="x", logprobs=9)


def test_anthropic_count_tokens(claude: anthropic.Anthropic, stack: Stack) -> None:
    # messages.count_tokens raised NotFoundError: the route did not exist. It answers
    # what the same body's reply reports as usage.input_tokens.
    messages: Any = [{"role": "user", "content": "count these four words"}]
    counted = claude.messages.count_tokens(model="echo", system="be brief", messages=messages)
    reply = claude.messages.create(model="echo", max_tokens=64, system="be brief",
                                   messages=messages)
    assert counted.input_tokens == reply.usage.input_tokens == 8
    raw = claude.messages.with_raw_response.count_tokens(
        model="echo", messages=messages, extra_headers={"x-request-id": "count-1"})
    assert raw.headers["x-request-id"] == "count-1"
    assert raw.headers["request-id"] == raw.headers["x-server-request-id"]
    with pytest.raises(anthropic.BadRequestError) as bad:
        claude.messages.count_tokens(model="echo", messages=[])
    assert bad.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    wrong = httpx.post(stack.url + "/v1/messages/count_tokens", content=b"x",
                       headers={"content-type": "text/plain"})
    assert wrong.status_code == 415 and wrong.json()["type"] == "error"
    assert httpx.get(stack.url + "/v1/messages/count_tokens").status_code == 405
