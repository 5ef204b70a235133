"""Tool definitions on the Messages API, checked as Anthropic's API checks them.

The engines never call a tool, but a caller's definitions go on to the real API
unchanged: a custom tool named ``server/tool`` (as MCP clients namespace them) or
``get weather``, one without its ``input_schema``, or two tools of one name were served
here and refused there (400), so definitions tested against the frontend broke at the
first real call (as OpenAI's function names did: ``openai_names.py``).
"""

from __future__ import annotations

import re
from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of
from ridtrace.tracing.identity import shown_text

__all__ = ["MAX_TOOL_NAME", "check_anthropic_tools"]

MAX_TOOL_NAME = 128
"""Anthropic's limit on a custom tool's name (``^[a-zA-Z0-9_-]{1,128}$``)."""
_NAME = re.compile(r"[a-zA-Z0-9_-]+")


def check_anthropic_tools(tools: list[dict[str, Any]]) -> None:
    """Refuse a custom tool (no ``type``, or ``custom``) whose name is not 1-128
    letters, digits, ``_`` and ``-``, or whose ``input_schema`` is missing or not an
    object schema, and two tools of one name. Server tools (``web_search_…``,
    ``bash_…``) have names of Anthropic's own and no schema. ``tools`` are objects with
    a string ``name`` (``request_options`` checked that)."""
    seen: dict[str, int] = {}
    for index, tool in enumerate(tools):
        where, name = f"tools[{index}]", tool["name"]
        if tool.get("type") in (None, "custom"):
            _check_custom(tool, where)
        if name in seen:
            raise InvalidRequest(
                f"'tools': tool names must be unique: '{shown_text(name, MAX_TOOL_NAME)}' is "
                f"tools[{seen[name]}] and {where}", param="tools")
        seen[name] = index


def _check_custom(tool: dict[str, Any], where: str) -> None:
    name = tool["name"]
    if len(name) > MAX_TOOL_NAME or _NAME.fullmatch(name) is None:
        raise InvalidRequest(
            f"'{where}.name': '{shown_text(name, MAX_TOOL_NAME)}' must be 1 to "
            f"{MAX_TOOL_NAME} letters, digits, underscores and dashes (the pattern "
            f"^[a-zA-Z0-9_-]{{1,{MAX_TOOL_NAME}}}$)", param=f"{where}.name")
    schema = tool.get("input_schema")
    if schema is None:
        raise InvalidRequest(f"'{where}.input_schema' is required: a custom tool's input "
                             "is described by a JSON schema", param=f"{where}.input_schema")
    if not isinstance(schema, dict):
        raise InvalidRequest(f"'{where}.input_schema' must be an object (a JSON schema), "
                             f"not {kind_of(schema)}", param=f"{where}.input_schema")
    if schema.get("type") != "object":
        raise InvalidRequest(f"'{where}.input_schema.type' must be 'object': a tool's "
                             "input is an object", param=f"{where}.input_schema.type")
