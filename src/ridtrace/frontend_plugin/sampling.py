"""Sampling parameters: checked like every other field, even where the engine ignores them.

The echo engine does not sample, but a caller who sends ``"temperature": "hot"`` or
``"stop": 12`` has a bug the real APIs report with a 400 naming the field. Accepting
them silently told such a caller that its request was fine, so a deployment switching
from the echo engine to a real one would start failing requests that "always worked".
Ranges are the APIs' own (OpenAI: temperature 0-2; Anthropic: 0-1).
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of, single_choice

__all__ = [
    "MAX_STOP_SEQUENCES",
    "anthropic_sampling",
    "generate_sampling",
    "openai_sampling",
    "stream_options_need_stream",
]

MAX_STOP_SEQUENCES = 4
"""OpenAI's limit on ``stop`` entries (Anthropic's ``stop_sequences`` is held to it too:
every stop string is searched in every reply)."""
MAX_STOP_LENGTH = 256
"""Longest stop string accepted (the client's, so capped like a model name)."""


def _number(body: dict[str, Any], name: str, low: float, high: float,
            param: str | None = None) -> None:
    value = body.get(name)
    param = param or name
    if value is None:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InvalidRequest(f"'{param}' must be a number, not {kind_of(value)}", param=param)
    if not low <= value <= high:
        raise InvalidRequest(f"'{param}' must be between {low:g} and {high:g}, got {value}",
                             param=param)


def stop_strings(value: Any, param: str, *, single_allowed: bool) -> tuple[str, ...]:
    """A list of at most :data:`MAX_STOP_SEQUENCES` non-empty strings (or one string,
    when ``single_allowed``, as OpenAI's ``stop``); ``()`` when absent."""
    if value is None:
        return ()
    if single_allowed and isinstance(value, str):
        value = [value]
    shape = "a string or a list of strings" if single_allowed else "a list of strings"
    if not isinstance(value, list):
        raise InvalidRequest(f"'{param}' must be {shape}, not {kind_of(value)}", param=param)
    if len(value) > MAX_STOP_SEQUENCES:
        raise InvalidRequest(f"'{param}' may hold at most {MAX_STOP_SEQUENCES} sequences, "
                             f"got {len(value)}", param=param)
    for item in value:
        if not isinstance(item, str) or not item or len(item) > MAX_STOP_LENGTH:
            raise InvalidRequest(
                f"'{param}' must be {shape} of 1-{MAX_STOP_LENGTH} characters each",
                param=param)
    return tuple(value)


def openai_sampling(body: dict[str, Any], *, penalties_and_stop: bool = True
                    ) -> tuple[str, ...]:
    """Check OpenAI's sampling fields; the ``stop`` strings.

    The Responses API (``penalties_and_stop=False``) has only ``temperature`` and
    ``top_p`` of these.
    """
    _number(body, "temperature", 0, 2)
    _number(body, "top_p", 0, 1)
    if not penalties_and_stop:
        return ()
    _number(body, "presence_penalty", -2, 2)
    _number(body, "frequency_penalty", -2, 2)
    return stop_strings(body.get("stop"), "stop", single_allowed=True)


def anthropic_sampling(body: dict[str, Any]) -> tuple[str, ...]:
    """Check the Messages API's sampling fields; the ``stop_sequences``."""
    _number(body, "temperature", 0, 1)
    _number(body, "top_p", 0, 1)
    top_k = body.get("top_k")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool)
                              or top_k < 0):
        raise InvalidRequest("'top_k' must be a non-negative integer", param="top_k")
    stops = stop_strings(body.get("stop_sequences"), "stop_sequences", single_allowed=False)
    # A newline stop from completions-era code: Anthropic's API refuses it (400).
    if any(not stop.strip() for stop in stops):
        raise InvalidRequest("'stop_sequences': each stop sequence must contain "
                             "non-whitespace", param="stop_sequences")
    return stops


def generate_sampling(params: dict[str, Any], prefix: str) -> tuple[str, ...]:
    """Check a native/SGLang ``sampling_params`` object; its ``stop`` strings."""
    # SGLang answers n > 1 with as many outputs; one, with 200, was a silent wrong answer.
    single_choice(params, f"{prefix}.n")
    _number(params, "temperature", 0, 2, f"{prefix}.temperature")
    _number(params, "top_p", 0, 1, f"{prefix}.top_p")
    _number(params, "min_p", 0, 1, f"{prefix}.min_p")
    _number(params, "presence_penalty", -2, 2, f"{prefix}.presence_penalty")
    _number(params, "frequency_penalty", -2, 2, f"{prefix}.frequency_penalty")
    _number(params, "repetition_penalty", 0, 2, f"{prefix}.repetition_penalty")
    # SGLang and vLLM: -1 (vLLM also 0) turns top-k off, any other value is a count.
    top_k = params.get("top_k")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool)
                              or top_k < -1):
        raise InvalidRequest(f"'{prefix}.top_k' must be an integer, -1 or 0 to turn it off",
                             param=f"{prefix}.top_k")
    return stop_strings(params.get("stop"), f"{prefix}.stop", single_allowed=True)


def stream_options_need_stream(body: dict[str, Any], stream: bool) -> None:
    """OpenAI refuses ``stream_options`` on a request that does not stream (400): the
    options would be silently ignored, and a caller expecting a usage chunk gets none."""
    if body.get("stream_options") is not None and not stream:
        raise InvalidRequest("'stream_options' is only allowed when 'stream' is true",
                             param="stream_options")
