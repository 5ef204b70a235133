"""The Responses API through the official openai SDK: the event sequence and the
Response object a stream ends with, on real processes."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from tests.frontend_plugin.conftest import Stack

STARTED = ["response.created", "response.in_progress", "response.output_item.added",
           "response.content_part.added"]
ENDED = ["response.output_text.done", "response.content_part.done",
         "response.output_item.done"]
# Longer than the smallest max_output_tokens OpenAI takes (16): cut at 16 tokens, the
# reply's "echo: user:" and the input's first 14 words.
LONG_INPUT = " ".join(f"w{i}" for i in range(20))
LONG_INPUT_CUT = "echo: user: " + " ".join(f"w{i}" for i in range(14))


def test_a_streamed_response_has_the_api_event_sequence(oai: openai.OpenAI) -> None:
    events = list(oai.responses.create(model="echo", input="one two three", stream=True))
    kinds = [e.type for e in events]
    deltas = kinds[len(STARTED):-len(ENDED) - 1]
    assert kinds[:len(STARTED)] == STARTED and kinds[-len(ENDED) - 1:-1] == ENDED
    assert deltas and set(deltas) == {"response.output_text.delta"}
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    completed: Any = events[-1]
    assert completed.response.output_text == text == "echo: user: one two three"
    assert completed.response.status == "completed"
    assert completed.response.id == events[0].response.id  # type: ignore[union-attr]


def test_the_response_object_repeats_what_the_request_set(oai: openai.OpenAI) -> None:
    # The object said temperature 1.0, top_p 1.0, no instructions and no metadata
    # whatever the caller sent, a max_output_tokens the caller never set (the server's
    # default), and no completed_at once completed; OpenAI's repeats the request.
    asked: Any = {"instructions": "be brief", "temperature": 0.2, "top_p": 0.5,
                  "metadata": {"job": "nightly-42"}}
    reply = oai.responses.create(model="echo", input="repeat me", **asked)
    with oai.responses.stream(model="echo", input="repeat me", **asked) as stream:
        final = stream.get_final_response()
    for response in (reply, final):
        assert response.output_text == "echo: system: be brief\nuser: repeat me"
        assert (response.instructions, response.temperature, response.top_p,
                response.metadata) == ("be brief", 0.2, 0.5, {"job": "nightly-42"})
        assert response.max_output_tokens is None
        assert response.completed_at is not None
        assert response.completed_at >= response.created_at
    plain = oai.responses.create(model="echo", input="defaults", max_output_tokens=64)
    assert (plain.instructions, plain.temperature, plain.top_p, plain.metadata,
            plain.max_output_tokens) == (None, 1.0, 1.0, {}, 64)


def test_the_response_object_repeats_the_tool_and_text_settings(oai: openai.OpenAI) -> None:
    # It said tools [], tool_choice auto and parallel_tool_calls true whatever the
    # request set, and had no text or user: a client reading back which tools a
    # response ran with (as OpenAI's object tells) read the defaults.
    tools: Any = [{"type": "function", "name": "lookup", "parameters": {}, "strict": False}]
    asked: Any = {"tools": tools, "tool_choice": "none", "parallel_tool_calls": False,
                  "text": {"format": {"type": "json_object"}}, "user": "user-7"}
    # (JSON mode needs the word in the input, as OpenAI requires.)
    reply = oai.responses.create(model="echo", input="tools as json", **asked)
    with oai.responses.stream(model="echo", input="tools as json", **asked) as stream:
        final = stream.get_final_response()
    for response in (reply, final):
        assert [tool.name for tool in response.tools] == ["lookup"]  # type: ignore[union-attr]
        assert (response.tool_choice, response.parallel_tool_calls) == ("none", False)
        assert response.text is not None and response.text.format is not None
        assert response.text.format.type == "json_object" and response.user == "user-7"
    plain = oai.responses.create(model="echo", input="defaults")
    assert (plain.tools, plain.tool_choice, plain.parallel_tool_calls) == ([], "auto", True)
    assert plain.text is not None and plain.text.format is not None
    assert plain.text.format.type == "text"


def test_a_response_cut_by_the_token_limit_is_incomplete_item_and_all(
    oai: openai.OpenAI
) -> None:
    # Its message item said "completed" while the response said "incomplete". The
    # smallest limit OpenAI takes is 16: the input outruns it.
    reply = oai.responses.create(model="echo", input=LONG_INPUT, max_output_tokens=16)
    assert (reply.status, reply.output_text) == ("incomplete", LONG_INPUT_CUT)
    assert reply.incomplete_details is not None
    assert reply.incomplete_details.reason == "max_output_tokens"
    assert [item.status for item in reply.output] == ["incomplete"]  # type: ignore[union-attr]
    assert reply.completed_at is None
    events: list[Any] = list(oai.responses.create(
        model="echo", input=LONG_INPUT, max_output_tokens=16, stream=True))
    assert events[-1].type == "response.incomplete"
    assert events[-2].type == "response.output_item.done"
    assert events[-2].item.status == events[-1].response.output[0].status == "incomplete"


@pytest.mark.parametrize("metadata", [
    "not an object", {"n": 1}, {f"k{i}": "v" for i in range(17)}, {"k" * 65: "v"},
    {"k": "v" * 513},
])
def test_metadata_is_checked_as_openai_checks_it(oai: openai.OpenAI, metadata: Any) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="x", metadata=metadata)
    assert info.value.param == "metadata"


def test_logprobs_are_answered_when_include_asks_for_them(oai: openai.OpenAI) -> None:
    # They were always []: a caller asking for them (as on chat) read nothing. The echo
    # engine is deterministic: each token had probability 1 (see test_sdks_e2e).
    asked: Any = {"include": ["message.output_text.logprobs"], "top_logprobs": 2}
    reply = oai.responses.create(model="echo", input="log me", **asked)
    part: Any = reply.output[0].content[0]  # type: ignore[union-attr]
    assert "".join(t.token for t in part.logprobs) == part.text == "echo: user: log me"
    assert all(t.logprob == 0.0 and [a.token for a in t.top_logprobs] == [t.token]
               for t in part.logprobs)
    events: list[Any] = list(oai.responses.create(model="echo", input="log me", stream=True,
                                                  **asked))
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert all([t.token for t in e.logprobs] == [e.delta] for e in deltas)
    done = next(e for e in events if e.type == "response.output_text.done")
    final = events[-1].response.output[0].content[0]
    assert [t.token for t in done.logprobs] == [t.token for t in final.logprobs] == [
        e.delta for e in deltas]
    plain = oai.responses.create(model="echo", input="log me", top_logprobs=2)
    assert plain.output[0].content[0].logprobs == []  # type: ignore[union-attr]
    with pytest.raises(openai.BadRequestError) as bad:
        oai.responses.create(model="echo", input="x", top_logprobs=21, **{
            "include": asked["include"]})
    assert bad.value.param == "top_logprobs"


def test_a_previous_response_id_is_not_found_as_openai_answers_an_unknown_one(
    oai: openai.OpenAI
) -> None:
    # Nothing is stored here, so no earlier response can be continued. The id was
    # ignored: the reply answered the new input alone, as if the earlier turns had never
    # been, and a client that recovers from previous_response_not_found by sending the
    # whole conversation never learnt it had to.
    first = oai.responses.create(model="echo", input="remember seven")
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as info:
            oai.responses.create(model="echo", input="what number", stream=stream,
                                 previous_response_id=first.id)
        assert (info.value.code, info.value.param) == (
            "previous_response_not_found", "previous_response_id")
        assert info.value.message.endswith(f"Previous response with id '{first.id}' not found.")
    with pytest.raises(openai.BadRequestError):
        oai.responses.create(model="echo", input="x", previous_response_id=7)  # type: ignore[arg-type]


def test_input_tokens_are_counted_as_the_reply_reports_them(
    oai: openai.OpenAI, stack: Stack
) -> None:
    # responses.input_tokens.count raised NotFoundError: the route did not exist (as
    # messages.count_tokens once did). It answers the reply's usage.input_tokens.
    asked: Any = {"instructions": "be brief",
                  "input": [{"role": "user", "content": "count these four words"}]}
    counted = oai.responses.input_tokens.count(model="echo", **asked)
    reply = oai.responses.create(model="echo", **asked)
    assert reply.usage is not None
    assert (counted.object, counted.input_tokens) == (
        "response.input_tokens", reply.usage.input_tokens)
    raw = oai.responses.input_tokens.with_raw_response.count(
        model="echo", input="x", extra_headers={"x-request-id": "count-2"})
    assert raw.headers["x-request-id"] == "count-2" and "x-server-request-id" in raw.headers
    with pytest.raises(openai.BadRequestError) as bad:
        oai.responses.input_tokens.count(model="echo", input=[])
    assert bad.value.param == "input"
    assert httpx.get(stack.url + "/v1/responses/input_tokens").status_code == 405


def test_truncation_is_checked_and_repeated_as_openai_does(oai: openai.OpenAI) -> None:
    # The Response object said truncation null whatever was asked (OpenAI's says
    # "disabled" unless "auto" was asked), and a value OpenAI refuses was answered.
    asked = oai.responses.create(model="echo", input="x", truncation="auto")
    with oai.responses.stream(model="echo", input="x", truncation="auto") as stream:
        streamed = stream.get_final_response()
    plain = oai.responses.create(model="echo", input="x")
    assert (asked.truncation, streamed.truncation, plain.truncation) == (
        "auto", "auto", "disabled")
    for wrong in ("sideways", 1):
        with pytest.raises(openai.BadRequestError) as bad:
            oai.responses.create(model="echo", input="x", truncation=wrong)  # type: ignore[arg-type]
        assert bad.value.param == "truncation"


def test_include_takes_only_the_values_openai_knows(oai: openai.OpenAI) -> None:
    # Any string was taken: a misspelt value (here the chat-style "logprobs") was
    # answered without what it meant to ask for, where OpenAI answers 400.
    for wrong in (["logprobs"], ["message.output_text.logprobs", "nonsense"]):
        with pytest.raises(openai.BadRequestError) as bad:
            oai.responses.create(model="echo", input="x", include=wrong)  # type: ignore[list-item]
        assert bad.value.param == "include" and f"'{wrong[-1]}'" in bad.value.message
    reply = oai.responses.create(model="echo", input="x", include=[
        "reasoning.encrypted_content", "message.input_image.image_url"])
    assert reply.status == "completed"


@pytest.mark.parametrize("field", ["store", "background"])
def test_store_and_background_must_be_booleans(oai: openai.OpenAI, field: str) -> None:
    # A string ("false", as a form or an env var gives it) was taken: chat checks
    # store's type, and OpenAI refuses both with 400 naming the field.
    with pytest.raises(openai.BadRequestError) as bad:
        oai.responses.create(model="echo", input="x", **{field: "false"})  # type: ignore[arg-type]
    assert bad.value.param == field
    assert oai.responses.create(model="echo", input="x", **{field: False}).status == "completed"


def test_background_mode_is_refused_as_openai_refuses_a_parameter(oai: openai.OpenAI) -> None:
    # It was answered at once, completed, with an id no later call could use: the SDK's
    # responses.retrieve(id) (what background mode is for) and cancel(id) got bare 404s.
    # Nothing is stored here, so the request is refused up front, streamed or not.
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as bad:
            oai.responses.create(model="echo", input="x", background=True, stream=stream)
        assert (bad.value.param, bad.value.code) == ("background", "unsupported_parameter")
        assert "'background' is not supported" in bad.value.message


@pytest.mark.parametrize("limit", [1, 15, 0])
def test_a_max_output_tokens_below_16_is_refused_as_openai_refuses_it(
    oai: openai.OpenAI, limit: int
) -> None:
    # It was served: a request tested here with a small limit (a cheap probe, a short
    # classification) broke at its first call to OpenAI, which takes 16 and up.
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="echo", input="short", max_output_tokens=limit)
    assert (info.value.param, info.value.code) == ("max_output_tokens",
                                                   "integer_below_min_value")
    assert info.value.message.endswith(
        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, "
        f"but got {limit} instead.")
    reply = oai.responses.create(model="echo", input="short", max_output_tokens=16)
    assert (reply.status, reply.max_output_tokens) == ("completed", 16)


def test_stream_options_are_taken_only_on_a_stream_as_on_chat(oai: openai.OpenAI) -> None:
    # "Only set this when you set stream: true" (the SDK), as chat's stream_options, which
    # OpenAI refuses on a request that does not stream; here they were taken unread, in
    # any shape, so a caller's mistake never showed before its first real call.
    for stream in (None, False):
        with pytest.raises(openai.BadRequestError) as info:
            oai.responses.create(model="echo", input="x", stream=stream,  # type: ignore[arg-type]
                                 stream_options={"include_obfuscation": False})
        assert info.value.param == "stream_options", info.value.body
    for options, param in [("yes", "stream_options"),
                           ({"include_obfuscation": "no"}, "stream_options.include_obfuscation")]:
        with pytest.raises(openai.BadRequestError) as info:
            list(oai.responses.create(model="echo", input="x", stream=True,
                                      extra_body={"stream_options": options}))
        assert info.value.param == param, info.value.body
    events = list(oai.responses.create(model="echo", input="x", stream=True,
                                       stream_options={"include_obfuscation": False}))
    assert events[-1].type == "response.completed"
