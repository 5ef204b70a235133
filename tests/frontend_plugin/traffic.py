"""Requests for the six routes and extraction of the text each response delivered."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

ROUTES = ("chat", "completions", "responses", "messages", "generate", "sglang")
PATHS = {
    "chat": "/v1/chat/completions",
    "completions": "/v1/completions",
    "responses": "/v1/responses",
    "messages": "/v1/messages",
    "generate": "/inference/v1/generate",
    "sglang": "/generate",
}


@dataclass
class Result:
    route: str
    stream: bool
    marker: str
    status: int
    text: str
    error: str | None
    body: Any = None

    @property
    def own(self) -> bool:
        """200, no error, and the delivered text contains this caller's prompt."""
        return self.status == 200 and self.error is None and self.marker in self.text


def build(route: str, marker: str, client_id: str | None, stream: bool) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Path, headers and JSON body; the client id goes where that route reads it."""
    headers: dict[str, str] = {}
    if client_id is not None:
        headers["x-request-id"] = client_id
    body: dict[str, Any] = {"stream": stream}
    if route in ("chat", "completions", "responses", "messages") and client_id is not None:
        # The deprecated headers were the in-flight key on these routes before the fix.
        headers["x-dynamo-request-id"] = client_id
        headers["request-id"] = client_id
    if route == "chat":
        body["messages"] = [{"role": "user", "content": marker}]
    elif route == "completions":
        body["prompt"] = marker
    elif route == "responses":
        body["input"] = marker
    elif route == "messages":
        body.update(max_tokens=64, messages=[{"role": "user", "content": marker}])
    elif route == "generate":
        body["prompt"] = marker
        if client_id is not None:
            body["request_id"] = client_id
    else:
        body["text"] = marker
        if client_id is not None:
            body["rid"] = client_id
    return PATHS[route], headers, body


def _sse(raw: bytes) -> list[tuple[str | None, Any]]:
    events: list[tuple[str | None, Any]] = []
    for block in raw.split(b"\n\n"):
        event, data = None, None
        for line in block.split(b"\n"):
            if line.startswith(b"event: "):
                event = line[7:].decode()
            elif line.startswith(b"data: "):
                data = line[6:]
        if data is None:
            continue
        events.append((event, data.decode() if data == b"[DONE]" else orjson.loads(data)))
    return events


def extract(route: str, stream: bool, raw: bytes) -> tuple[str, str | None, Any]:
    """(delivered text, error message or None, parsed body/events)."""
    if not stream:
        body = orjson.loads(raw)
        if body.get("error"):
            err = body["error"]
            return "", str(err.get("message") if isinstance(err, dict) else err), body
        if route == "chat":
            return body["choices"][0]["message"]["content"], None, body
        if route == "completions":
            return body["choices"][0]["text"], None, body
        if route == "responses":
            return body["output"][0]["content"][0]["text"], None, body
        if route == "messages":
            return body["content"][0]["text"], None, body
        return body["text"], None, body
    events = _sse(raw)
    text, error = "", None
    for event, data in events:
        if not isinstance(data, dict):
            continue
        if "error" in data or event == "error":
            err = data.get("error") or data
            error = str(err.get("message") if isinstance(err, dict) else err)
            continue
        if route == "chat":
            text += data["choices"][0]["delta"].get("content") or ""
        elif route == "completions":
            text += data["choices"][0]["text"]
        elif route == "responses":
            if data["type"] == "response.output_text.delta":
                text += data["delta"]
        elif route == "messages":
            if data["type"] == "content_block_delta":
                text += data["delta"]["text"]
        elif route == "generate":
            text += data["text"]
        else:
            text = data["text"]  # SGLang streams the cumulative text
    return text, error, events


async def call(
    client: httpx.AsyncClient, base: str, route: str, marker: str,
    client_id: str | None, stream: bool,
) -> Result:
    path, headers, body = build(route, marker, client_id, stream)
    response = await client.post(base + path, headers=headers, json=body)
    if response.status_code != 200:
        try:
            _, error, parsed = extract(route, False, response.content)
        except Exception:
            error, parsed = response.text, None
        return Result(route, stream, marker, response.status_code, "", error or "?", parsed)
    text, error, parsed = extract(route, stream, response.content)
    return Result(route, stream, marker, 200, text, error, parsed)


COLLIDING_CLIENT_IDS = ("1", "shared-client-id", "7f3c2a9e-0000-4000-8000-000000000001")


def start_colliding_calls(client: Any, url: str, n: int) -> list[asyncio.Task[Result]]:
    """`n` calls over every route, streaming and not, three client ids shared by all."""
    return [
        asyncio.create_task(
            call(client, url, ROUTES[i % 6], f"prompt-{i}-marker", COLLIDING_CLIENT_IDS[i % 3],
                 stream=(i // 6) % 2 == 0)
        )
        for i in range(n)
    ]
