"""Names OpenAI takes, checked as it checks them: function tools' and JSON formats'
(and a function tool's ``parameters``, which its name check walks past).

The engines never call a tool and need no format name, but a caller's definitions are
sent on to the real API unchanged: a function or a ``json_schema`` format named
``get weather``, or a chat tool without its ``function`` object, was served here and
refused there (400), so definitions tested against the frontend broke at the first
real call.
"""

from __future__ import annotations

import re
from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of
from ridtrace.frontend_plugin.strict_schemas import check_strict_schema, strict_flag
from ridtrace.tracing.identity import shown_text

__all__ = ["MAX_OPENAI_NAME", "check_function_names", "check_message_names",
           "check_openai_name"]

MAX_OPENAI_NAME = 64
"""OpenAI's limit on a function's or a response format's name."""
_NAME = re.compile(r"[a-zA-Z0-9_-]+")


def check_function_names(tools: list[Any], field: str, *, nested: bool) -> None:
    """Refuse a function tool in ``tools`` (the list at ``field``) without a name OpenAI
    takes (:func:`check_openai_name`), with ``parameters`` that are no object or a schema
    of something other than an object, or, when ``strict``, with parameters OpenAI's
    strict mode refuses.
    ``nested``: Chat Completions' shape, the name in ``function``; else the Responses
    shape (or chat's legacy ``functions``), the name on the tool itself. Tools of other
    types are not looked at."""
    for index, tool in enumerate(tools):
        if tool.get("type", "function") != "function":  # legacy functions have no type
            continue
        where, holder = f"{field}[{index}]", tool
        if nested:
            holder = tool.get("function")
            if not isinstance(holder, dict):
                raise InvalidRequest(f"Missing required parameter: '{where}.function'.",
                                     param=f"{where}.function")
            where += ".function"
        check_openai_name(holder.get("name"), where + ".name")
        # The schema as its JSON text (json.dumps of a definition read from a file) is
        # the usual slip; OpenAI refuses it, and so does this.
        parameters = holder.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            raise InvalidRequest(
                f"Invalid type for '{where}.parameters': expected an object (a JSON "
                f"schema), but got {kind_of(parameters)} instead.", param=where + ".parameters")
        if parameters and parameters.get("type") != "object":
            # A function's arguments are one JSON object; an MCP tool's schema without
            # its type is the usual slip. (``{}`` is the empty parameter list.)
            got = shown_text(str(parameters.get("type")), 64)
            raise InvalidRequest(
                f"Invalid schema for function '{shown_text(holder['name'], 64)}': schema must "
                f"be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'.",
                param=where + ".parameters", code="invalid_function_parameters")
        if strict_flag(holder, where + ".strict") and parameters is not None:
            # Strict mode holds parameters to a strict format's rules: OpenAI refuses the
            # whole call for a tool that breaks them, so it must not be served here.
            check_strict_schema(parameters, holder["name"], where + ".parameters",
                                of="function", code="invalid_function_parameters")


def check_openai_name(name: Any, param: str) -> None:
    """Refuse ``name`` (at ``param``) unless it is 1-64 letters, digits, ``_`` and ``-``."""
    if not isinstance(name, str) or not name:
        raise InvalidRequest(f"Missing required parameter: '{param}'.", param=param)
    if len(name) > MAX_OPENAI_NAME or _NAME.fullmatch(name) is None:
        raise InvalidRequest(
            f"Invalid '{param}': '{shown_text(name, MAX_OPENAI_NAME)}' must be 1 to "
            f"{MAX_OPENAI_NAME} letters, digits, underscores and dashes", param=param)


def check_message_names(messages: list[Any]) -> None:
    """Refuse a chat message ``name`` OpenAI refuses: a participant's name, written as a
    person's ("John Doe") or an agent's ("planner.v2"), must match its pattern there
    (400 "string does not match pattern"), so a multi-agent chat served here broke at
    its first real call. ``messages`` has been read by ``chat_prompt``."""
    for index, message in enumerate(messages):
        name = message.get("name")
        if name is None:
            continue
        param = f"messages[{index}].name"
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            shown = f"'{shown_text(name, MAX_OPENAI_NAME)}'" if isinstance(name, str) else (
                kind_of(name))
            raise InvalidRequest(f"Invalid '{param}': {shown} must be letters, digits, "
                                 "underscores and dashes (the pattern ^[a-zA-Z0-9_-]+$)",
                                 param=param)
