"""Echo engine, fingerprints, prompt normalisation, body validation, settings."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import tracemalloc
from hashlib import blake2b

import httpx
import pytest
from starlette.responses import PlainTextResponse

from ridtrace import RequestTracingMiddleware
from ridtrace.fingerprint import fingerprint
from ridtrace.frontend_plugin import (
    AnthropicRequestId,
    EchoEngine,
    FrontendSettings,
    WorkerSettings,
    echo_tokens,
)
from ridtrace.frontend_plugin.bodies import InvalidRequest, body_client_id, vetted_body_client_id
from ridtrace.frontend_plugin.host_check import allowed_hosts_for, host_of
from ridtrace.frontend_plugin.prompts import chat_prompt
from ridtrace.frontend_plugin.routes import APIS
from ridtrace.frontend_plugin.wire import WorkRequest

SETTINGS = FrontendSettings()
SPECS = {api.endpoint: api for api in APIS}


def test_fingerprint_is_16_hex_of_blake2b_8() -> None:
    assert fingerprint("héllo") == blake2b("héllo".encode(), digest_size=8).hexdigest()
    assert len(fingerprint("")) == 16


def test_echo_tokens_rebuild_the_reply_exactly() -> None:
    tokens, reason = echo_tokens("a  b\nc ", 100)
    assert "".join(tokens) == "echo: a  b\nc " and reason == "stop"
    cut, reason = echo_tokens("one two three", 2)
    assert "".join(cut) == "echo: one" and reason == "length"


def test_echo_tokens_keep_every_whitespace_run_with_the_token_after_it() -> None:
    tokens, reason = echo_tokens("\t a \u3000\n b  ", 100)
    assert tokens == ["echo:", " \t a", " \u3000\n b", "  "] and reason == "stop"
    assert echo_tokens("   ", 1) == (["echo:"], "length")


def test_echo_tokens_cut_only_the_tokens_they_return() -> None:
    # Half a million one-letter words: all of them split (to keep 16) cost ~30 MB.
    prompt = "a " * 500_000
    tracemalloc.start()
    try:
        tokens, reason = echo_tokens(prompt, 16)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (len(tokens), reason) == (16, "length") and "".join(tokens) == "echo:" + " a" * 15
    assert peak < 1 << 20, peak  # well under the prompt itself (1 MB)
    # The edges: exactly as many words as allowed, with and without trailing blanks.
    assert echo_tokens("x y", 3) == (["echo:", " x", " y"], "stop")
    assert echo_tokens("x y ", 3) == (["echo:", " x", " y"], "length")
    assert echo_tokens("x y ", 4) == (["echo:", " x", " y", " "], "stop")


def test_engine_streams_with_a_gate() -> None:
    async def main() -> list[str]:
        gate = asyncio.Event()
        engine = EchoEngine(token_delay=0.001, gate=gate)
        task = asyncio.create_task(_collect(engine.stream("hi there", 10)))
        await asyncio.sleep(0.01)
        assert not task.done()  # held at the gate
        gate.set()
        return await task

    assert "".join(asyncio.run(main())) == "echo: hi there"


async def _collect(stream: object) -> list[str]:
    return [t async for t in stream]  # type: ignore[attr-defined]


def test_chat_prompt_normalisation() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]
    assert chat_prompt(messages, system="be brief") == "system: be brief\nuser: hi\nassistant: a\nb"


@pytest.mark.parametrize(
    ("endpoint", "body", "needle"),
    [
        ("chat_completions", {"messages": "hi"}, "messages"),
        ("chat_completions", {"messages": [{"role": "user", "content": 3}]}, "content"),
        ("chat_completions", {"messages": [{"role": "user", "content": "x"}], "max_tokens": 10**9},
         "max_tokens"),
        ("chat_completions", {"messages": [{"role": "user", "content": "x"}], "stream": "yes"},
         "stream"),
        ("completions", {"prompt": {"a": 1}}, "prompt"),
        ("completions", {"prompt": "x", "max_tokens": 0}, "max_tokens"),
        ("completions", {"prompt": "x", "max_tokens": True}, "max_tokens"),
        ("responses", {"input": 5}, "input"),
        ("messages", {"messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        ("generate", {"prompt": "x", "sampling_params": {"max_tokens": -1}}, "max_tokens"),
        ("generate", {}, "prompt"),
        ("sglang_generate", {"text": ["a", "b"]}, "text"),
        ("sglang_generate", {"text": "x", "rid": 7}, "rid"),
        # Text given as token ids was served as the prompt: a clear 400 instead.
        ("generate", {"token_ids": "abc"}, "token_ids"),
        ("generate", {"token_ids": ["abc"]}, "token_ids"),
        ("sglang_generate", {"input_ids": "abc"}, "input_ids"),
        ("sglang_generate", {"input_ids": ["abc"]}, "input_ids"),
    ],
)
def test_invalid_bodies_name_the_problem(endpoint: str, body: dict[str, object], needle: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        SPECS[endpoint].parse(body, SETTINGS)
    assert needle in info.value.message


def test_body_client_id_accepts_printable_ascii() -> None:
    assert body_client_id({"rid": "abc-1"}, "rid") == "abc-1"
    assert body_client_id({}, "rid") is None
    assert vetted_body_client_id("abc-1", "rid") == "abc-1"
    for bad, limit in (("a\nb", 128), ("bad\x01rid", 128), ("", 128), ("r" * 129, 128),
                       ("sixteen-chars-id", 10)):
        with pytest.raises(InvalidRequest, match=f"'rid' must be 1-{limit} printable"):
            vetted_body_client_id(bad, "rid", limit)


def test_a_body_id_of_spaces_only_is_refused_as_an_empty_one() -> None:
    """A header of spaces is no id; a body id of spaces was taken and returned, then on
    no log line, span or header (their id drops the spaces)."""
    for blank in (" ", "   "):
        with pytest.raises(InvalidRequest, match="not only spaces"):
            vetted_body_client_id(blank, "rid")
    assert vetted_body_client_id(" pad ", "rid") == " pad "  # returned as sent


def test_the_spaces_around_a_body_id_do_not_count_to_its_length() -> None:
    """They are not part of the id (its correlation id drops them): a 128-character id
    between two spaces was refused as longer than 128."""
    padded = " " + "a" * 128 + " "
    assert vetted_body_client_id(padded, "request_id") == padded  # returned as sent
    with pytest.raises(InvalidRequest, match="must be 1-128 printable"):
        vetted_body_client_id(" " + "a" * 129 + " ", "request_id")


def test_token_id_prompts_join_with_commas() -> None:
    parsed = SPECS["generate"].parse({"token_ids": [1, 2, 3]}, SETTINGS)
    assert parsed.prompt == "1,2,3"
    parsed = SPECS["sglang_generate"].parse({"input_ids": [4, 5], "rid": "s1"}, SETTINGS)
    assert parsed.prompt == "4,5" and parsed.session_id == "s1"


def test_work_envelope_round_trip_and_checks() -> None:
    work = WorkRequest(request_id="r", x_request_id=None, endpoint="generate", model="m",
                       prompt="p", max_tokens=3, session_id="s")
    assert WorkRequest.from_json(work.to_json()) == work
    for bad in (b"[]", b"{", b'{"request_id": 1}'):
        with pytest.raises(ValueError):
            WorkRequest.from_json(bad)
    # Spaces alone are none of its ids, the route's name included (held to one rule).
    for name in ("request_id", "endpoint", "session_id"):
        blank = json.loads(work.to_json()) | {name: "   "}
        with pytest.raises(ValueError, match=f"{name} .*not only spaces"):
            WorkRequest.from_json(json.dumps(blank).encode())


def test_settings_from_env() -> None:
    fe = FrontendSettings.from_env({
        "RIDTRACE_FRONTEND_WORKERS": "http://a:1, http://b:2",
        "RIDTRACE_FRONTEND_ID_POLICY": "legacy",
        "RIDTRACE_FRONTEND_TOTAL_TIMEOUT": "9.5",
    })
    assert fe.workers == ("http://a:1", "http://b:2") and fe.id_policy == "legacy"
    assert fe.total_timeout == 9.5
    worker = WorkerSettings.from_env({"RIDTRACE_WORKER_HANG_AFTER_TOKENS": "3",
                                      "RIDTRACE_WORKER_GATE": "true"})
    assert worker.hang_after_tokens == 3 and worker.gate
    with pytest.raises(ValueError):
        FrontendSettings.from_env({"RIDTRACE_FRONTEND_ID_POLICY": "yolo"})


def test_the_foreign_chunk_check_has_no_off_switch() -> None:
    # DESIGN: a foreign chunk is never forwarded. RIDTRACE_FRONTEND_CHECK_CHUNK_IDS=0,
    # documented nowhere, forwarded another request's chunks under the safe policy with
    # no stream.foreign_chunk line, no metric and no word at start-up.
    with pytest.raises(ValueError, match="RIDTRACE_FRONTEND_CHECK_CHUNK_IDS"):
        FrontendSettings.from_env({"RIDTRACE_FRONTEND_CHECK_CHUNK_IDS": "0"})
    assert "check_chunk_ids" not in {f.name for f in dataclasses.fields(FrontendSettings)}


def test_engine_batches_tokens_that_are_ready_together() -> None:
    async def collect(engine: EchoEngine) -> list[list[str]]:
        return [batch async for batch in engine.batches("a b c", 10)]

    together = asyncio.run(collect(EchoEngine()))
    assert together == [["echo:", " a", " b", " c"]]  # one write for the whole reply
    paced = asyncio.run(collect(EchoEngine(token_delay=0.001)))
    assert paced == [["echo:"], [" a"], [" b"], [" c"]]


def test_engine_batches_stop_at_a_hang() -> None:
    async def first_two(engine: EchoEngine) -> list[list[str]]:
        out: list[list[str]] = []
        agen = engine.batches("a b c", 10)
        out.append(await anext(agen))
        out.append(await anext(agen))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(agen), 0.2)  # the simulated hang
        return out

    assert asyncio.run(first_two(EchoEngine(hang_after_tokens=2))) == [["echo:"], [" a"]]


def test_deadline_turns_its_own_expiry_into_timeout_error() -> None:
    from ridtrace.frontend_plugin.timers import Deadline

    async def run() -> tuple[bool, str]:
        with pytest.raises(TimeoutError), Deadline(0.01):
            await asyncio.sleep(5)
        with Deadline(5):
            await asyncio.sleep(0)
        await asyncio.sleep(0.02)  # no stray cancellation is left behind
        task = asyncio.current_task()
        return task is not None and task.cancelling() == 0, "ok"

    assert asyncio.run(run()) == (True, "ok")


def test_watchdog_cancels_after_a_silence_but_not_while_chunks_flow() -> None:
    import time

    from ridtrace.frontend_plugin.timers import Watchdog

    async def run() -> tuple[str | None, int]:
        loop = asyncio.get_running_loop()
        # A timeout 12 ticks long: a loaded machine (2 cores, 3 test runs) once stretched
        # a 20 ms sleep past a 50 ms timeout.
        dog = Watchdog(0.25, time.monotonic() + 10)
        chunks = 0
        try:
            for _ in range(16):  # 16 x 20 ms: longer than the timeout in all, never silent
                await asyncio.sleep(0.02)
                dog.last = loop.time()
                chunks += 1
            await asyncio.sleep(5)  # silence
        except asyncio.CancelledError:
            dog.absorb()
        finally:
            dog.stop()
        return dog.expired, chunks

    assert asyncio.run(run()) == ("chunk", 16)


@pytest.mark.parametrize(("header", "host"), [
    (b"127.0.0.1:8000", "127.0.0.1"), (b"LocalHost", "localhost"), (b"localhost.:80", "localhost"),
    (b"[::1]:8000", "::1"), (b"[::1]", "::1"), (b"gateway.internal", "gateway.internal"),
    (b"[::1", None), (b"[::1]x", None), (b"a:b", None), (b":80", None), (b"h\xc3\xa9", None),
    (b"localhost:", "localhost"), (b"u@h", None), (b"a b", None), (b"", None), (b"::1", None),
    # A port past 65535 names no port at all (it was taken as this server's); leading
    # zeros are digits like any.
    (b"localhost:99999", None), (b"[::1]:65536", None), (b"127.0.0.1:" + b"9" * 5000, None),
    (b"localhost:65535", "localhost"), (b"localhost:0", "localhost"),
    (b"localhost:" + b"0" * 5000 + b"80", "localhost"),
])
def test_the_host_of_a_host_header(header: bytes, host: str | None) -> None:
    assert host_of(header) == host


def test_which_hosts_a_server_answers_for() -> None:
    assert allowed_hosts_for("127.0.0.1", ()) == {"localhost", "127.0.0.1", "::1"}
    assert allowed_hosts_for("::1", ["Gateway.Internal"]) == {
        "localhost", "127.0.0.1", "::1", "gateway.internal"}
    assert allowed_hosts_for("127.0.0.1", ["*"]) is None  # the check turned off
    assert allowed_hosts_for("0.0.0.0", ()) is None  # reached from anywhere: any name
    assert allowed_hosts_for("0.0.0.0", ["api.example"]) == {"api.example"}


def test_the_anthropic_request_id_follows_the_app_under_a_mount_prefix() -> None:
    app = RequestTracingMiddleware(AnthropicRequestId(PlainTextResponse("ok")))

    async def fetch(path: str, root: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app, root_path=root)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            return await c.post(root + path)

    for root in ("", "/api"):
        messages = asyncio.run(fetch("/v1/messages", root))
        assert messages.headers["request-id"] == messages.headers["x-server-request-id"]
        chat = asyncio.run(fetch("/v1/chat/completions", root))
        assert "request-id" not in chat.headers


class _CountingPrompt(str):
    splits = 0

    def split(self, *args: object, **kwargs: object) -> list[str]:  # type: ignore[override]
        type(self).splits += 1
        return super().split(*args, **kwargs)  # type: ignore[arg-type]


def test_the_sglang_stream_counts_the_prompts_tokens_once_not_per_event() -> None:
    # Every event's meta_info split the whole prompt again: with a 1 MB prompt, 2.6 ms
    # per event, 21 s of the frontend's event loop (everyone else's requests waiting)
    # over the 8192 events one request may ask for.
    from ridtrace.frontend_plugin.pump import Finished
    from ridtrace.frontend_plugin.routes.base import Ids

    parsed = SPECS["sglang_generate"].parse({"text": "one two three"}, SETTINGS)
    parsed.prompt = _CountingPrompt(parsed.prompt)
    renderer = SPECS["sglang_generate"].renderer(parsed, Ids("rid-x", "rid-x"))
    for _ in range(50):
        renderer.delta(" w")
    events = renderer.finish(Finished("stop", 50, 3), " w" * 50)
    assert _CountingPrompt.splits <= 1
    assert b'"prompt_tokens":3' in events


def test_an_integer_past_64_bits_is_out_of_range_not_a_non_integer() -> None:
    # orjson reads 18446744073709551616 as a float: "'max_tokens' must be an integer,
    # not number" for an integer. The body as the route reads it.
    from ridtrace.frontend_plugin import json_codec

    body = json_codec.loads(b'{"prompt": "x", "max_tokens": 18446744073709551616}')
    with pytest.raises(InvalidRequest, match="'max_tokens' must be between 1 and"):
        SPECS["completions"].parse(body, SETTINGS)
    body = json_codec.loads(b'{"prompt": "x", "max_tokens": 2.5}')
    with pytest.raises(InvalidRequest, match="must be an integer, not number"):
        SPECS["completions"].parse(body, SETTINGS)
