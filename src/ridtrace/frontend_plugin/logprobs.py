"""OpenAI's ``logprobs``: asked for, checked, and answered as the echo engine knows them.

The echo engine is deterministic: every token it produces had probability 1, so each
token's log probability is ``0.0`` and it is its own only top alternative (every other
token had probability 0, whose logarithm JSON cannot carry: the list holds one entry,
whatever ``top_logprobs`` asked). Answering ``"logprobs": null`` to a caller that asked
for them broke the SDK code that reads them (``choice.logprobs.content`` raised
``AttributeError``); the real API always answers them.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, integer_in, opt_bool

__all__ = [
    "MAX_COMPLETION_LOGPROBS",
    "MAX_TOP_LOGPROBS",
    "chat_logprobs",
    "chat_token_logprobs",
    "completion_logprobs",
    "completion_token_logprobs",
]

MAX_TOP_LOGPROBS = 20
"""OpenAI's limit on chat ``top_logprobs``."""
MAX_COMPLETION_LOGPROBS = 5
"""OpenAI's limit on the legacy completions ``logprobs``."""


def _count(body: dict[str, Any], name: str, high: int) -> int | None:
    value = body.get(name)
    return None if value is None else integer_in(value, param=name, low=0, high=high)


def chat_logprobs(body: dict[str, Any]) -> int | None:
    """Chat's ``logprobs`` / ``top_logprobs``: ``None`` when not asked, else how many top
    alternatives. ``top_logprobs`` without ``logprobs: true`` is a 400, as OpenAI's."""
    top = _count(body, "top_logprobs", MAX_TOP_LOGPROBS)
    if not opt_bool(body, "logprobs"):
        if top is not None:
            raise InvalidRequest("'top_logprobs' needs 'logprobs' set to true",
                                 param="top_logprobs")
        return None
    return top or 0


def completion_logprobs(body: dict[str, Any]) -> int | None:
    """Legacy completions' ``logprobs`` (0-5): ``None`` when not asked."""
    return _count(body, "logprobs", MAX_COMPLETION_LOGPROBS)


def _entry(token: str) -> dict[str, Any]:
    # surrogatepass: a lone surrogate the prompt carried has no UTF-8 bytes; these are
    # its WTF-8 ones, as the fingerprints take it.
    return {"token": token, "logprob": 0.0, "bytes": list(token.encode("utf-8", "surrogatepass"))}


def chat_token_logprobs(tokens: list[str], top: int) -> dict[str, Any]:
    """A chat choice's ``logprobs`` for ``tokens``."""
    content = [{**_entry(t), "top_logprobs": [_entry(t)] if top else []} for t in tokens]
    return {"content": content, "refusal": None}


def completion_token_logprobs(tokens: list[str], top: int, offset: int = 0) -> dict[str, Any]:
    """A completion choice's ``logprobs`` for ``tokens`` starting at ``offset`` in the text."""
    offsets = []
    for token in tokens:
        offsets.append(offset)
        offset += len(token)
    return {
        "tokens": tokens,
        "token_logprobs": [0.0] * len(tokens),
        "top_logprobs": [{t: 0.0} for t in tokens] if top else None,
        "text_offset": offsets,
    }
