"""Per-token encoders write exactly what encoding the whole event would (issue 15)."""

from __future__ import annotations

import orjson
import pytest

from ridtrace.frontend_plugin.bodies import Parsed
from ridtrace.frontend_plugin.routes.anthropic import MESSAGES
from ridtrace.frontend_plugin.routes.base import Ids, SseTemplate, sse
from ridtrace.frontend_plugin.routes.generate import GENERATE
from ridtrace.frontend_plugin.routes.openai import CHAT, COMPLETIONS
from ridtrace.frontend_plugin.wire import ChunkEncoder, chunk_line

TEXTS = ["plain", ' quote " and \\ slash', "\n\t\x00 controls", "ünï \u2028 cödé 🦊", ""]


@pytest.mark.parametrize("text", TEXTS)
def test_chunk_encoder_matches_chunk_line(text: str) -> None:
    assert ChunkEncoder('rid-"1"')(text) == chunk_line('rid-"1"', text)


@pytest.mark.parametrize("text", TEXTS)
def test_sse_template_matches_encoding_the_whole_event(text: str) -> None:
    data = {"id": "x", "choices": [{"text": SseTemplate.HOLE, "finish_reason": None}]}
    expected = sse({"id": "x", "choices": [{"text": text, "finish_reason": None}]}, "delta")
    assert SseTemplate(data, "delta").render(text) == expected


def test_a_client_string_cannot_fake_the_hole() -> None:
    # The model name is the client's; the hole is the last occurrence and unguessable.
    fake = "\x00" + "0" * 32
    parsed = Parsed(model=fake, prompt="hi", max_tokens=3, stream=True)
    event = COMPLETIONS.renderer(parsed, Ids("rid-1", "rid-1")).delta("tok")
    data = orjson.loads(event.removeprefix(b"data: "))
    assert data["model"] == fake and data["choices"][0]["text"] == "tok"


@pytest.mark.parametrize("api", [CHAT, COMPLETIONS, MESSAGES, GENERATE], ids=lambda a: a.endpoint)
@pytest.mark.parametrize("text", TEXTS)
def test_renderer_deltas_are_whole_events(api: object, text: str) -> None:
    parsed = Parsed(model='m"odel', prompt="hi", max_tokens=3, stream=True)
    delta = api.renderer(parsed, Ids("rid-1", "client-1")).delta(text)  # type: ignore[attr-defined]
    lines = delta.split(b"\n")
    assert delta.endswith(b"\n\n")
    payload = orjson.loads(next(x for x in lines if x.startswith(b"data: ")).removeprefix(b"data: "))
    assert text in _strings(payload)
    assert SseTemplate.HOLE not in delta.decode()


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
