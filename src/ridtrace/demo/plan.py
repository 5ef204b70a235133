"""The demo's traffic: who sends what, with which ids, and what each caller saw."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

__all__ = ["ROUTES", "CallResult", "PlannedCall", "make_plan", "verdict", "with_own_traces"]

ROUTES: tuple[str, ...] = (
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/responses",
    "/v1/messages",
    "/inference/v1/generate",
    "/generate",
)
# Pre-fix, these routes took the in-flight id from the deprecated headers; the native
# generate routes took it from x-request-id or the body.
_OPENAI_STYLE = frozenset(ROUTES[:4])
SHARED_CLIENT_IDS: tuple[str, ...] = ("rollout-7", "rollout-8", "rollout-9")


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One request of the demo traffic."""

    index: int
    route: str
    stream: bool
    prompt: str
    headers: dict[str, str]
    body_client_id: str | None
    disconnect: bool
    trace_id: str


@dataclass(slots=True)
class CallResult:
    """What one caller observed."""

    call: PlannedCall
    status: int = 0
    text: str = ""
    error: str | None = None
    server_request_id: str | None = None
    disconnected: bool = False
    foreign_prompts: list[str] = field(default_factory=list)


def make_plan(count: int, *, seed: int = 7, disconnect_share: float = 0.05) -> list[PlannedCall]:
    """A reproducible mix: every route, streaming and not, shared client ids, old headers.

    Two in three calls share one of three client ids (the seed's collision); on the
    OpenAI/Anthropic routes a third of those send it as a deprecated header too, which
    the pre-fix frontend took as the in-flight id. A few streaming calls hang up early.
    """
    rng = random.Random(seed)
    plan = []
    for index in range(count):
        route = ROUTES[index % len(ROUTES)]
        stream = (index // len(ROUTES)) % 2 == 0
        prompt = f"prompt-{index:05d}-{rng.getrandbits(32):08x}"
        headers: dict[str, str] = {}
        body_client_id = None
        if rng.random() < 2 / 3:
            client_id = rng.choice(SHARED_CLIENT_IDS)
            if route in _OPENAI_STYLE:
                headers["x-request-id"] = client_id
                if rng.random() < 1 / 3:
                    headers[rng.choice(("x-dynamo-request-id", "request-id"))] = client_id
            elif rng.random() < 0.5:
                headers["x-request-id"] = client_id
            else:
                body_client_id = client_id
        disconnect = stream and rng.random() < disconnect_share
        # The caller's own trace id travels in traceparent, so each finding in the logs
        # can be matched to the exact call that saw (or caused) it.
        trace_id = f"{rng.getrandbits(128):032x}"
        headers["traceparent"] = f"00-{trace_id}-{rng.getrandbits(64) | 1:016x}-01"
        plan.append(
            PlannedCall(index, route, stream, prompt, headers, body_client_id, disconnect, trace_id)
        )
    return plan


def with_own_traces(plan: list[PlannedCall]) -> list[PlannedCall]:
    """The same calls under trace ids of their own, fresh at every call of this function.

    The plan is seeded so both policies get the same traffic, but its trace ids must
    not repeat: exported to one Jaeger, the legacy and the safe call (and every earlier
    demo run's) were one trace, with two root spans of one span id, so the request the
    demo says to search for showed beside another run's spans.
    """
    rng = random.SystemRandom()
    fresh = []
    for call in plan:
        trace_id = f"{rng.getrandbits(128) | 1:032x}"
        traceparent = f"00-{trace_id}-{rng.getrandbits(64) | 1:016x}-01"
        headers = {**call.headers, "traceparent": traceparent}
        fresh.append(replace(call, headers=headers, trace_id=trace_id))
    return fresh


def verdict(results: list[CallResult]) -> None:
    """Mark every answer that carries another caller's prompt (a crossed stream)."""
    prompts = {result.call.prompt for result in results}
    for result in results:
        if result.text:
            result.foreign_prompts = sorted(
                p for p in prompts if p != result.call.prompt and p in result.text
            )


def is_own_output(result: CallResult) -> bool:
    """A 200 whose text contains the caller's own prompt and nobody else's."""
    return (
        result.status == 200
        and result.error is None
        and result.call.prompt in result.text
        and not result.foreign_prompts
    )
