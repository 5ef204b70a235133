"""A request's ``tools`` and its ``tool_choice``, checked as the real APIs check them.

The engines answer with text only, so a choice that forces a tool call (OpenAI's
``required`` or a named tool, chat's legacy ``function_call`` naming a function) is
refused: the tool call the caller was promised would never come, and code that reads
``message.tool_calls[0]`` failed on a 200. `request_options` checks each API's options
with these.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of, opt_bool
from ridtrace.frontend_plugin.openai_names import check_function_names

__all__ = [
    "TEXT_ONLY",
    "check_legacy_function_call",
    "check_openai_tool_choice",
    "tool_choice",
    "tool_list",
]

TEXT_ONLY = "the engines here answer with text only and cannot be made to call a tool"
"""Why a choice that forces a tool call is refused, in each such refusal."""
_CHAT_TOOL_CHOICES = ("none", "auto", "required")


def _refuse(message: str, param: str) -> InvalidRequest:
    return InvalidRequest(message, param=param)


def tool_list(body: dict[str, Any], named: str, field: str = "tools") -> list[Any]:
    """The ``tools`` list (each an object with ``named``'s string, OpenAI's ``type`` or
    Anthropic's ``name``; chat's legacy ``functions`` as ``field``); ``[]`` when absent."""
    tools = body.get(field)
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _refuse(f"'{field}' must be a list of {field}, not {kind_of(tools)}", field)
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get(named), str):
            raise _refuse(f"'{field}[{index}]' must be an object with a string '{named}'",
                          f"{field}[{index}]")
    return tools


def tool_choice(body: dict[str, Any], tools: list[Any]) -> Any:
    """The request's ``tool_choice``, refused without ``tools`` to choose from."""
    choice = body.get("tool_choice")
    if choice is not None and not tools:
        raise _refuse("'tool_choice' is only allowed when 'tools' are specified",
                      "tool_choice")
    return choice


def check_legacy_function_call(body: dict[str, Any]) -> None:
    """Chat's deprecated ``functions`` and ``function_call`` (the SDKs still send them),
    checked as ``tools`` and ``tool_choice`` are: a call naming a function forces it."""
    functions = tool_list(body, "name", "functions")
    check_function_names(functions, "functions", nested=False)
    call = body.get("function_call")
    if call is None:
        return
    if not functions:
        raise _refuse("'function_call' is only allowed when 'functions' are specified",
                      "function_call")
    if isinstance(call, dict) and isinstance(call.get("name"), str):
        raise _refuse(f"'function_call' cannot force a function call: {TEXT_ONLY}",
                      "function_call")
    if call not in ("none", "auto"):
        raise _refuse("'function_call' must be 'none', 'auto' or an object with a string "
                      "'name'", "function_call")


def check_openai_tool_choice(body: dict[str, Any], tools: list[Any], *, replying: bool = True
                             ) -> None:
    """OpenAI's ``tool_choice`` (chat and Responses): a mode or an object, and when
    ``replying`` never one that forces a call (``required``, a named tool, allowed tools
    in ``required`` mode)."""
    opt_bool(body, "parallel_tool_calls")
    choice = tool_choice(body, tools)
    if isinstance(choice, str):
        if choice not in _CHAT_TOOL_CHOICES:
            raise _refuse(f"'tool_choice' must be one of {', '.join(_CHAT_TOOL_CHOICES)} "
                          "or an object", "tool_choice")
        forced = choice == "required"
    elif isinstance(choice, dict):
        # Chat nests the allowed tools' mode, Responses does not.
        allowed = choice.get("allowed_tools")
        mode = allowed.get("mode") if isinstance(allowed, dict) else choice.get("mode")
        forced = choice.get("type") != "allowed_tools" or mode == "required"
    elif choice is None:
        forced = False
    else:
        raise _refuse(f"'tool_choice' must be a string or an object, not {kind_of(choice)}",
                      "tool_choice")
    if forced and replying:
        raise _refuse(f"'tool_choice' cannot force a tool call: {TEXT_ONLY}", "tool_choice")
