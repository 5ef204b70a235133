"""Chat Completions' options of a fixed set of values, checked as OpenAI checks them.

The echo engine has no use for ``reasoning_effort``, ``service_tier`` or ``verbosity``,
so they went unread: a typo (``"hgih"``), another API's value or a number was a 200
here and a 400 at OpenAI, and a request tested against the frontend broke at its first
real call. The values are those the official SDK's types list; ``safety_identifier`` and
``prompt_cache_key`` are strings there.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of, opt_str
from ridtrace.tracing.identity import shown_text

__all__ = ["check_chat_choices"]

_CHOICES = {
    "reasoning_effort": ("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "service_tier": ("auto", "default", "flex", "scale", "priority", "fast"),
    "verbosity": ("low", "medium", "high"),
}
_STRINGS = ("safety_identifier", "prompt_cache_key")


def _supported(values: tuple[str, ...]) -> str:
    # OpenAI's wording: "'low', 'medium', and 'high'".
    quoted = [f"'{value}'" for value in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}"


def check_chat_choices(body: dict[str, Any]) -> None:
    """Refuse a ``reasoning_effort``, ``service_tier`` or ``verbosity`` OpenAI does not
    take (``null`` is not set), and a ``safety_identifier`` or ``prompt_cache_key`` that
    is not a string."""
    for name, values in _CHOICES.items():
        value = body.get(name)
        if value is None or value in values:
            continue
        # The value is the client's: capped and escaped before it is logged.
        shown = shown_text(value, 64) if isinstance(value, str) else kind_of(value)
        raise InvalidRequest(f"Invalid value: '{shown}'. Supported values are: "
                             f"{_supported(values)}.", param=name, code="invalid_value")
    for name in _STRINGS:
        opt_str(body, name)
