"""Request bodies and answer readers for each route, in the shapes those APIs use."""

from __future__ import annotations

from typing import Any

import orjson

from ridtrace.demo.plan import PlannedCall

__all__ = ["read_answer", "request_body"]

MAX_TOKENS = 32


def request_body(call: PlannedCall) -> dict[str, Any]:
    """The JSON body a client of ``call.route`` would send."""
    messages = [{"role": "user", "content": call.prompt}]
    stream = call.stream
    if call.route == "/v1/chat/completions":
        return {"model": "echo", "messages": messages, "stream": stream, "max_tokens": MAX_TOKENS}
    if call.route == "/v1/completions":
        return {"model": "echo", "prompt": call.prompt, "stream": stream, "max_tokens": MAX_TOKENS}
    if call.route == "/v1/responses":
        return {"model": "echo", "input": call.prompt, "stream": stream,
                "max_output_tokens": MAX_TOKENS}
    if call.route == "/v1/messages":
        return {"model": "echo", "messages": messages, "stream": stream, "max_tokens": MAX_TOKENS}
    if call.route == "/inference/v1/generate":
        body: dict[str, Any] = {"model": "echo", "prompt": call.prompt, "stream": stream,
                                "max_tokens": MAX_TOKENS}
        if call.body_client_id:
            body["request_id"] = call.body_client_id
        return body
    if call.route == "/generate":
        body = {"text": call.prompt, "stream": stream,
                "sampling_params": {"max_new_tokens": MAX_TOKENS}}
        if call.body_client_id:
            body["rid"] = call.body_client_id
        return body
    raise ValueError(f"unknown route {call.route}")


def _events(raw: bytes) -> list[dict[str, Any]]:
    events = []
    for line in raw.split(b"\n"):
        if line.startswith(b"data:"):
            data = line[5:].strip()
            if data and data != b"[DONE]":
                events.append(orjson.loads(data))
    return events


def _whole_text(route: str, body: dict[str, Any]) -> str:
    if route == "/v1/chat/completions":
        return str(body["choices"][0]["message"]["content"])
    if route == "/v1/completions":
        return str(body["choices"][0]["text"])
    if route == "/v1/responses":
        return "".join(
            part.get("text", "")
            for item in body.get("output", [])
            for part in item.get("content", [])
            if part.get("type") == "output_text"
        )
    if route == "/v1/messages":
        return "".join(block.get("text", "") for block in body["content"])
    return str(body["text"])


def _streamed_text(route: str, events: list[dict[str, Any]]) -> str:
    if route == "/generate":  # SGLang sends the cumulative text in every event
        return str(events[-1].get("text", "")) if events else ""
    pieces = []
    for event in events:
        if route == "/v1/chat/completions" and event.get("choices"):
            pieces.append(event["choices"][0].get("delta", {}).get("content") or "")
        elif route == "/v1/completions" and event.get("choices"):
            pieces.append(event["choices"][0].get("text") or "")
        elif route == "/v1/responses" and event.get("type") == "response.output_text.delta":
            pieces.append(event.get("delta", ""))
        elif route == "/v1/messages" and event.get("type") == "content_block_delta":
            pieces.append(event.get("delta", {}).get("text", ""))
        elif route == "/inference/v1/generate":
            pieces.append(event.get("text") or "")
    return "".join(pieces)


def read_answer(call: PlannedCall, status: int, raw: bytes) -> tuple[str, str | None]:
    """``(text, error)`` of an answer: the generated text and any error it reported."""
    if status != 200:
        return "", f"HTTP {status}: {raw[:200].decode('utf-8', 'replace')}"
    try:
        if call.stream:
            events = _events(raw)
            for event in events:
                if "error" in event or event.get("type") == "error":
                    return _streamed_text(call.route, events), f"stream error: {event}"
            return _streamed_text(call.route, events), None
        return _whole_text(call.route, orjson.loads(raw)), None
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return "", f"unreadable answer: {type(exc).__name__}: {exc}"
