"""Prompt-caching breakpoints (``cache_control``) on the Messages API, checked as
Anthropic's API checks them.

The engines cache nothing, but the breakpoints go on to the real API unchanged: it
takes at most :data:`MAX_BREAKPOINTS` blocks marked with ``cache_control`` in one
request (tools, ``system`` blocks and message blocks together), each ``ephemeral`` with
a ``ttl`` of ``5m`` or ``1h`` when one is given. Code that marks each turn of a growing
conversation passes the limit a few turns in; it was served here and refused there
(400), as was a ``ttl`` of ``10m``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest

__all__ = ["MAX_BREAKPOINTS", "check_cache_control"]

MAX_BREAKPOINTS = 4
"""Anthropic's limit on blocks with ``cache_control`` in one request."""
_TTLS = ("5m", "1h")


def check_cache_control(body: dict[str, Any]) -> None:
    """Refuse a ``cache_control`` that is not an ``ephemeral`` object with a ``ttl`` of
    ``5m`` or ``1h``, and more than :data:`MAX_BREAKPOINTS` marked blocks. The shapes
    of ``tools``, ``system`` and ``messages`` are checked elsewhere: only what they
    are made of is walked here."""
    if body.get("cache_control") is not None:  # the request-wide one: no block of its own
        _check_one(body["cache_control"], "cache_control")
    marked = 0
    for where, block in _blocks(body):
        if isinstance(block, dict) and block.get("cache_control") is not None:
            _check_one(block["cache_control"], f"{where}.cache_control")
            marked += 1
    if marked > MAX_BREAKPOINTS:
        raise InvalidRequest(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may "
                             f"be provided. Found {marked}.", param="cache_control")


def _check_one(value: Any, where: str) -> None:
    if (not isinstance(value, dict) or value.get("type") != "ephemeral"
            or value.get("ttl", "5m") not in _TTLS):
        raise InvalidRequest(f"'{where}' must be {{\"type\": \"ephemeral\"}}, with a 'ttl' of "
                             f"{' or '.join(_TTLS)} if any", param=where)


def _blocks(body: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every block that can carry ``cache_control``, with where it is."""
    for name in ("tools", "system"):
        if isinstance(body.get(name), list):
            yield from ((f"{name}[{i}]", item) for i, item in enumerate(body[name]))
    messages = body.get("messages")
    for index, message in enumerate(messages if isinstance(messages, list) else ()):
        content = message.get("content") if isinstance(message, dict) else None
        for number, block in enumerate(content if isinstance(content, list) else ()):
            where = f"messages[{index}].content[{number}]"
            yield where, block
            inner = block.get("content") if isinstance(block, dict) else None
            if isinstance(inner, list):  # a tool_result's own blocks
                yield from ((f"{where}.content[{i}]", item) for i, item in enumerate(inner))
