"""A deterministic echo engine: the reply contains the caller's prompt, token by token.

The reply to ``prompt`` is ``"echo: " + prompt``, cut into whitespace-delimited tokens
(each token carries the whitespace before it, so the tokens concatenate back to the
exact reply). A prompt of *n* words is echoed in full when ``max_tokens >= n + 1``;
a smaller limit cuts the reply and reports ``finish_reason == "length"``. Stop
sequences cut what the limit lets through before the first one it contains
(``finish_reason == "stop"``), as a real engine stops generating there. Because the
reply names its prompt, a caller can check that the output it got is its own.

A caller that asked for JSON (a ``json_schema``; ``{}`` for any JSON object) gets a JSON
document carrying that text reply instead (:mod:`ridtrace.frontend_plugin.json_reply`),
cut into tokens the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ridtrace.frontend_plugin.json_reply import json_document

__all__ = ["EchoEngine", "cut_at_stop", "echo_reply", "echo_tokens", "generate"]

# A token's visible part; its whitespace is whatever lies between it and the previous
# one. Not one pattern for both (``\s*\S+``): at each position of a whitespace run the
# engine took the whole rest of the run and backtracked through it, so a prompt of
# spaces cost quadratic time (40 000 of them, 12 s; a 1 MiB body, hours of a worker's
# event loop, on every worker the request was retried on).
_WORD = re.compile(r"\S+")
PREFIX = "echo: "


def cut_at_stop(reply: str, stop: Sequence[str]) -> tuple[str, str | None]:
    """``reply`` up to (not including) the earliest stop sequence in it, and that one."""
    earliest: tuple[int, str] | None = None
    for sequence in stop:
        at = reply.find(sequence)
        if at >= 0 and (earliest is None or at < earliest[0]):
            earliest = (at, sequence)
    return (reply, None) if earliest is None else (reply[:earliest[0]], earliest[1])


def echo_reply(prompt: str, json_schema: dict[str, Any] | None = None) -> str:
    """The whole reply to ``prompt``, before any token limit or stop sequence."""
    text = PREFIX + prompt
    return text if json_schema is None else json_document(json_schema, text)


def echo_tokens(
    prompt: str, max_tokens: int, stop: Sequence[str] = (),
    json_schema: dict[str, Any] | None = None,
) -> tuple[list[str], str]:
    """The tokens the engine streams for ``prompt`` and the finish reason."""
    tokens, finish_reason, _ = generate(prompt, max_tokens, stop, json_schema)
    return tokens, finish_reason


def generate(
    prompt: str, max_tokens: int, stop: Sequence[str] = (),
    json_schema: dict[str, Any] | None = None,
) -> tuple[list[str], str, str | None]:
    """:func:`echo_tokens` and the stop sequence that ended the reply (``None`` when
    none did).

    Stop sequences are looked for in what the token limit lets the engine produce, as a
    real engine checks its output as it goes: one that only a longer reply would reach,
    or that begins within the limit and ends past it, never ends the reply. They were
    looked for in the whole reply first, so such a reply was cut at a sequence it never
    produced and reported ``stop`` (``stop_sequence``) where the limit ended it.
    """
    tokens, cut = _first_tokens(echo_reply(prompt, json_schema), max_tokens)
    if stop:
        text, sequence = cut_at_stop("".join(tokens), stop)
        if sequence is not None:
            return _first_tokens(text, max_tokens)[0], "stop", sequence
    return tokens, "length" if cut else "stop", None


def _first_tokens(reply: str, max_tokens: int) -> tuple[list[str], bool]:
    """The first ``max_tokens`` tokens of ``reply``, and whether the limit cut it.

    Only those tokens are ever cut out: a 1 MiB prompt of one-letter words is half a
    million tokens, and splitting all of them (to keep a few) cost a worker ~30 MB and
    ~50 ms of its event loop per request.
    """
    tokens: list[str] = []
    end = 0
    for match in _WORD.finditer(reply):
        if len(tokens) == max_tokens:
            return tokens, True
        tokens.append(reply[end:match.end()])
        end = match.end()
    if end < len(reply):  # trailing whitespace: keep it so the reply is exact
        if len(tokens) == max_tokens:
            return tokens, True
        tokens.append(reply[end:])
    return tokens, False


class EchoEngine:
    """Streams :func:`echo_tokens` with configurable pacing and test faults.

    Args:
        token_delay: seconds between tokens.
        first_token_delay: seconds before the first token.
        gate: when given, every stream waits for this event (at most ``gate_timeout``
            seconds) before its first token.
        hang_after_tokens: stop after this many tokens and wait forever (a hung engine).
    """

    def __init__(
        self,
        *,
        token_delay: float = 0.0,
        first_token_delay: float = 0.0,
        gate: asyncio.Event | None = None,
        gate_timeout: float = 60.0,
        hang_after_tokens: int | None = None,
    ) -> None:
        self.token_delay = token_delay
        self.first_token_delay = first_token_delay
        self.gate = gate
        self.gate_timeout = gate_timeout
        self.hang_after_tokens = hang_after_tokens

    async def stream(
        self, prompt: str, max_tokens: int, stop: Sequence[str] = (),
        json_schema: dict[str, Any] | None = None,
    ) -> AsyncIterator[str]:
        """Yield the reply's tokens; the finish reason is :func:`echo_tokens`'s."""
        async for batch in self.batches(prompt, max_tokens, stop, json_schema):
            for token in batch:
                yield token

    def ready_now(self) -> bool:
        """True when a reply is ready the moment it is asked for: no gate to wait at,
        no delay, no hang. The worker then writes the whole reply at once, with no
        generator, task or disconnect watcher (issue 15)."""
        return (
            (self.gate is None or self.gate.is_set())
            and self.first_token_delay <= 0
            and self.token_delay <= 0
            and self.hang_after_tokens is None
        )

    async def batches(
        self, prompt: str, max_tokens: int, stop: Sequence[str] = (),
        json_schema: dict[str, Any] | None = None,
    ) -> AsyncIterator[list[str]]:
        """Yield the reply's tokens in batches of those ready at the same time.

        Without a token delay every token is ready at once, as a batch step of a real
        engine would be; the worker then writes them in one go instead of one write
        per token (issue 15). With a delay (or a hang), one token per batch.
        """
        tokens, _ = echo_tokens(prompt, max_tokens, stop, json_schema)
        if self.gate is not None and not self.gate.is_set():
            # A timeout opens the way anyway: a forgotten gate must not hang forever.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.gate.wait(), self.gate_timeout)
        if self.first_token_delay > 0:
            await asyncio.sleep(self.first_token_delay)
        hang = self.hang_after_tokens
        if self.token_delay <= 0 and (hang is None or hang >= len(tokens)):
            if tokens:
                yield tokens
            return
        for index, token in enumerate(tokens):
            if hang is not None and index >= hang:
                await asyncio.Event().wait()  # never set: the fault being simulated
            if index and self.token_delay > 0:
                await asyncio.sleep(self.token_delay)
            yield [token]
