"""Stop sequences through the official SDKs and the generate routes, on real processes.

They were accepted and ignored: ``stop=["there"]`` still returned "… there world", and
Anthropic's ``stop_reason`` never said ``stop_sequence``. The echo engine now ends the
reply before the first stop sequence it would contain, as a real engine stops there.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from ridtrace.frontend_plugin import echo_tokens
from ridtrace.frontend_plugin.wire import WorkRequest, done_line
from tests.frontend_plugin.conftest import Stack, start_stack

PROMPT = "alpha beta STOP gamma delta"
CHAT: Any = [{"role": "user", "content": PROMPT}]
CUT = "echo: user: alpha beta "  # the chat reply up to the stop sequence


@pytest.fixture(scope="module", params=["paced", "ready"])
def stop_stack(request: pytest.FixtureRequest, stack: Stack,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The shared stack (a token delay: the worker streams) and one whose worker has
    the whole reply at once (one body): the two ways a worker answers."""
    if request.param == "paced":
        yield stack
        return
    with start_stack(tmp_path_factory.mktemp("stop-ready"), workers=[[]]) as ready:
        yield ready


def test_openai_chat_and_completions_stop_before_the_stop_sequence(stop_stack: Stack) -> None:
    oai = openai.OpenAI(base_url=stop_stack.url + "/v1", api_key="unused", max_retries=0)
    reply = oai.chat.completions.create(model="echo", messages=CHAT, stop=["nope", "STOP"])
    assert reply.choices[0].message.content == CUT
    assert reply.choices[0].finish_reason == "stop"
    streamed = list(oai.chat.completions.create(model="echo", messages=CHAT, stop="STOP",
                                                stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == CUT
    assert streamed[-1].choices[0].finish_reason == "stop"
    completion = oai.completions.create(model="echo", prompt=PROMPT, stop="beta")
    assert completion.choices[0].text == "echo: alpha "
    # The earliest match wins, whatever the order of the list.
    first = oai.completions.create(model="echo", prompt=PROMPT, stop=["delta", "beta"])
    assert first.choices[0].text == "echo: alpha "
    # A token limit that comes first is still a length cut.
    short = oai.completions.create(model="echo", prompt=PROMPT, stop="delta", max_tokens=2)
    assert (short.choices[0].text, short.choices[0].finish_reason) == ("echo: alpha", "length")


def test_anthropic_reports_the_stop_sequence(stop_stack: Stack) -> None:
    claude = anthropic.Anthropic(base_url=stop_stack.url, api_key="unused", max_retries=0)
    message = claude.messages.create(model="echo", max_tokens=64, messages=CHAT,
                                     stop_sequences=["gamma", "STOP"])
    assert message.content[0].text == CUT  # type: ignore[union-attr]
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", "STOP")
    with claude.messages.stream(model="echo", max_tokens=64, messages=CHAT,
                                stop_sequences=["STOP"]) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == CUT  # type: ignore[union-attr]
    assert (final.stop_reason, final.stop_sequence) == ("stop_sequence", "STOP")
    plain = claude.messages.create(model="echo", max_tokens=64, messages=CHAT,
                                   stop_sequences=["absent"])
    assert (plain.stop_reason, plain.stop_sequence) == ("end_turn", None)


def test_a_stop_sequence_past_the_token_limit_never_ends_the_reply(stop_stack: Stack) -> None:
    # max_tokens 4 lets "echo: user: alpha beta" through. The stop sequences were looked
    # for in the whole reply first: one just past the limit (" STOP") or begun within it
    # ("ta STOP") cut the reply and said stop_sequence / stop, though the limit ended
    # it and the engine never produced the sequence (a caller continuing a reply the
    # limit cut stopped there instead, with "echo: user: alpha be" for "ta STOP").
    claude = anthropic.Anthropic(base_url=stop_stack.url, api_key="unused", max_retries=0)
    oai = openai.OpenAI(base_url=stop_stack.url + "/v1", api_key="unused", max_retries=0)
    whole = "echo: user: alpha beta"
    for stop in (" STOP", "ta STOP"):
        message = claude.messages.create(model="echo", max_tokens=4, messages=CHAT,
                                         stop_sequences=[stop])
        assert (message.content[0].text, message.stop_reason,  # type: ignore[union-attr]
                message.stop_sequence) == (whole, "max_tokens", None), stop
        chunks = list(oai.chat.completions.create(model="echo", messages=CHAT, stop=stop,
                                                  max_tokens=4, stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == whole
        assert chunks[-1].choices[0].finish_reason == "length", stop
    # One the limit lets through still ends the reply.
    inside = claude.messages.create(model="echo", max_tokens=4, messages=CHAT,
                                    stop_sequences=["eta"])
    assert (inside.content[0].text, inside.stop_reason,  # type: ignore[union-attr]
            inside.stop_sequence) == ("echo: user: alpha b", "stop_sequence", "eta")


def test_generate_routes_take_sampling_params_stop(stop_stack: Stack) -> None:
    with httpx.Client(base_url=stop_stack.url, timeout=30) as client:
        native = client.post("/inference/v1/generate", json={
            "prompt": PROMPT, "sampling_params": {"stop": "STOP"}}).json()
        assert (native["text"], native["finish_reason"]) == ("echo: alpha beta ", "stop")
        sglang = client.post("/generate", json={
            "text": PROMPT, "sampling_params": {"stop": ["STOP"]}}).json()
        assert sglang["text"] == "echo: alpha beta "
        assert sglang["meta_info"]["finish_reason"] == {"type": "stop", "matched": "STOP"}


def test_the_engine_and_the_wire_carry_the_stop_sequences() -> None:
    tokens, reason = echo_tokens("a b c", 10, ("b",))
    assert ("".join(tokens), reason) == ("echo: a ", "stop")
    # Only what the limit lets through is searched (see the test above).
    assert echo_tokens("a b c", 2, (" b",)) == (["echo:", " a"], "length")
    assert echo_tokens("a b c", 2, ("a b",)) == (["echo:", " a"], "length")
    assert echo_tokens("a b c", 2, (" a",)) == (["echo:"], "stop")
    work = WorkRequest(request_id="r", x_request_id=None, endpoint="completions", model="m",
                       prompt="p", max_tokens=3, stop=("x", "y"))
    assert WorkRequest.from_json(work.to_json()) == work
    # An envelope from a frontend that sends no stop sequences still parses.
    assert WorkRequest.from_json(work.to_json().replace(b'"stop":["x","y"]', b'"z":0')).stop == ()
    assert b"stop_sequence" not in done_line("r", finish_reason="stop", tokens=1, prompt_tokens=1)


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/chat/completions", {"model": "echo", "messages": CHAT, "stop": ["echo"]}),
    ("/v1/messages", {"model": "echo", "max_tokens": 16, "messages": CHAT,
                      "stop_sequences": ["echo"]}),
    ("/generate", {"text": PROMPT, "sampling_params": {"stop": "echo"}}),
])
def test_a_streamed_reply_the_stop_sequence_empties_is_still_fingerprinted(
    stop_stack: Stack, path: str, body: dict[str, Any]
) -> None:
    # The reply is empty but whole: the worker logs its fp_out, and the frontend did
    # not (it fingerprinted streams only once a piece had been sent), so `ridtrace
    # analyze` reported the worker's output as unlinked, an error, for healthy traffic.
    # Not streamed, the same reply was fingerprinted.
    response = httpx.post(stop_stack.url + path, json={**body, "stream": True}, timeout=30)
    assert response.status_code == 200, response.text
    request_id = response.headers["x-server-request-id"]
    end = stop_stack.frontend.wait_for_event(request_id, "request.end")
    done = _worker_end(stop_stack, request_id)
    assert done["tokens"] == 0 and done["outcome"] == "ok"
    assert end["outcome"] == "ok" and end.get("fp_out") == done["fp_out"], end


def _worker_end(stack: Stack, request_id: str) -> dict[str, object]:
    """The ``worker.end`` line of ``request_id``, on whichever worker served it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for worker in stack.workers:
            for line in worker.lines():
                if line.get("request_id") == request_id and line.get("event") == "worker.end":
                    return line
        time.sleep(0.02)
    raise AssertionError(f"no worker.end of {request_id}")
