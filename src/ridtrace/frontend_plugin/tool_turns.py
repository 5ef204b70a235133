"""A conversation's tool turns (chat messages, Responses input items, Messages
``tool_use`` blocks), checked as OpenAI and Anthropic check them.

The engines never call a tool, but an agent loop sends its history back with the
model's calls (chat's ``tool_calls``, Responses' ``function_call`` items) and a result
answering each. Dropping a result, sending ``arguments`` as an object, or a result
without its call id are the usual agent-loop bugs, and the real API refuses each with a
400; served here, a loop tested against the frontend broke at its first real call.
"""

from __future__ import annotations

import re
from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, empty_array, kind_of
from ridtrace.frontend_plugin.openai_names import check_openai_name
from ridtrace.tracing.identity import shown_text

__all__ = ["check_function_call_items", "check_tool_turns", "check_tool_uses"]

_SHOWN_ID = 64  # a call id is the caller's text: capped in the messages it appears in
# Anthropic's pattern for tool_use ids (and the tool_use_id of their results): another
# provider's call ids ("functions.name:0") or MCP-namespaced ones are refused there.
_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")


def check_tool_turns(messages: list[Any]) -> None:
    """Refuse tool calls OpenAI refuses: a call without a string ``id`` or ``type``, a
    ``function`` call without its ``function`` object, without a ``function.name``
    OpenAI takes or with ``function.arguments`` that are not a string, a call no
    ``tool`` message answers before the next other message (or the end), and a ``tool``
    message without a ``tool_call_id``, with no assistant ``tool_calls`` before it, or
    answering a call the assistant message before it did not make.
    ``messages`` has been read by ``chat_prompt`` (objects with a role)."""
    # The last assistant's calls, while tool messages follow: a set, as each tool
    # message scanned a list of them (O(n²) in one message's calls).
    calls: frozenset[str] | None = None
    pending: dict[str, None] = {}  # those not answered yet, in order
    asked_at = ""
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise InvalidRequest(
                    f"Missing parameter 'tool_call_id': messages with role 'tool' must have "
                    f"a 'tool_call_id' ('{where}')", param=f"{where}.tool_call_id")
            if calls is None:
                # Its call was cut from the history (a message window kept the result
                # and dropped the assistant turn before it), or never made. OpenAI's
                # wording, its spelling included.
                raise InvalidRequest(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls' ('{where}')", param=f"{where}.role")
            if call_id not in calls:
                raise InvalidRequest(
                    f"Invalid parameter: 'tool_call_id' of '{shown_text(call_id, _SHOWN_ID)}' "
                    f"not found in 'tool_calls' of previous message ('{where}')",
                    param=f"{where}.tool_call_id")
            pending.pop(call_id, None)
            continue
        _all_answered(pending, asked_at)
        calls = None
        if message.get("role") == "assistant" and message.get("tool_calls") is not None:
            asked_at = f"{where}.tool_calls"
            ids = _call_ids(message["tool_calls"], asked_at)
            calls, pending = frozenset(ids), dict.fromkeys(ids)
    _all_answered(pending, asked_at)


def _all_answered(pending: dict[str, None], asked_at: str) -> None:
    if pending:
        unanswered = ", ".join(shown_text(i, _SHOWN_ID) for i in list(pending)[:8])
        raise InvalidRequest(
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {unanswered}", param=asked_at)


def _call_ids(tool_calls: Any, where: str) -> list[str]:
    if not isinstance(tool_calls, list):
        raise InvalidRequest(f"'{where}' must be a list of tool calls, not "
                             f"{kind_of(tool_calls)}", param=where)
    if not tool_calls:
        # A reply without calls kept with its calls defaulted to [] (leave the field out,
        # or null): OpenAI refuses it, and with it every later turn of the conversation.
        raise empty_array(where)
    ids = []
    for index, call in enumerate(tool_calls):
        at = f"{where}[{index}]"
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
            raise InvalidRequest(f"'{at}' must be an object with a string 'id'", param=at)
        kind = call.get("type")
        if not isinstance(kind, str) or not kind:
            raise InvalidRequest(f"Missing required parameter: '{at}.type'.", param=f"{at}.type")
        function = call.get("function")
        if kind == "function" and not isinstance(function, dict):
            raise InvalidRequest(f"Missing required parameter: '{at}.function' (an object "
                                 "with the function's name and arguments).",
                                 param=f"{at}.function")
        if isinstance(function, dict):  # the model's call sent back, named as OpenAI takes
            check_openai_name(function.get("name"), f"{at}.function.name")
        if isinstance(function, dict) and not isinstance(function.get("arguments"), str):
            raise InvalidRequest(
                f"Invalid type for '{at}.function.arguments': expected a string (the "
                f"arguments as JSON text), but got {kind_of(function.get('arguments'))} "
                "instead", param=f"{at}.function.arguments")
        ids.append(call["id"])
    return ids


def check_function_call_items(items: list[Any]) -> None:
    """Refuse Responses ``input`` items OpenAI refuses (nothing is stored here, so every
    call is in the input): a ``function_call`` without a string ``call_id``, without a
    ``name`` OpenAI takes (a model's "functions.get_me" sent back), with
    ``arguments`` that are not a string, or with no ``function_call_output`` after it,
    and an output whose ``call_id`` no ``function_call`` in the input has."""
    called: dict[str, int] = {}
    answered: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) and "role" not in item else None
        if kind not in ("function_call", "function_call_output"):
            continue
        where = f"input[{index}]"
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidRequest(f"Missing required parameter: '{where}.call_id'.",
                                 param=f"{where}.call_id")
        if kind == "function_call_output":
            answered.add(call_id)
            continue
        check_openai_name(item.get("name"), f"{where}.name")
        if not isinstance(item.get("arguments"), str):
            raise InvalidRequest(
                f"Invalid type for '{where}.arguments': expected a string (the arguments "
                f"as JSON text), but got {kind_of(item.get('arguments'))} instead",
                param=f"{where}.arguments")
        called[call_id] = index
        answered.discard(call_id)  # an output counts only after its call
    for index, item in enumerate(items):
        kind = item.get("type") if isinstance(item, dict) and "role" not in item else None
        if kind == "function_call_output" and item["call_id"] not in called:
            raise InvalidRequest(
                "No tool call found for function call output with call_id "
                f"{shown_text(item['call_id'], _SHOWN_ID)}.", param=f"input[{index}]")
    for call_id, index in called.items():
        if call_id not in answered:
            raise InvalidRequest(
                f"No tool output found for function call {shown_text(call_id, _SHOWN_ID)}.",
                param=f"input[{index}]")


def check_tool_uses(messages: list[Any]) -> None:
    """Refuse ``tool_use`` / ``tool_result`` blocks Anthropic's API refuses: a
    ``tool_use`` without a string ``id`` or ``name``, or whose ``input`` is no object, an id (or a
    result's ``tool_use_id``) with characters Anthropic's pattern does not take, an id
    another ``tool_use`` of the request already has, one the next
    message answers with no ``tool_result``, a ``tool_result`` without a
    ``tool_use_id``, for an id the message before did not use (its call trimmed from
    the history, a result sent twice, an id made up beside the real answers), or after
    another block of its message (results come first). A final assistant turn is a
    prefill and needs no results. ``messages`` has been read by ``chat_prompt``."""
    pending: dict[str, None] = {}  # the previous assistant turn's tool_use ids
    used: set[str] = set()  # every tool_use id so far: Anthropic wants each one unique
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        content = message.get("content")
        blocks = [b if isinstance(b, dict) else {} for b in content] if isinstance(
            content, list) else []
        answered = _tool_results(blocks, where, pending)
        unanswered = [i for i in pending if i not in answered]
        if unanswered:
            shown = ", ".join(shown_text(i, _SHOWN_ID) for i in unanswered[:8])
            raise InvalidRequest(
                f"'{where}.content': `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {shown}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message.",
                param=f"{where}.content")
        pending = {}
        if message.get("role") == "assistant":
            pending = dict.fromkeys(_tool_use_ids(blocks, where, used))


def _tool_results(blocks: list[dict[str, Any]], where: str, pending: dict[str, None]
                  ) -> set[str]:
    answered: set[str] = set()
    others = False  # a block that is no tool_result came first
    for number, block in enumerate(blocks):
        at = f"{where}.content[{number}]"
        if block.get("type") != "tool_result":
            others = True
            continue
        use_id = block.get("tool_use_id")
        if not isinstance(use_id, str) or not use_id:
            raise InvalidRequest(f"'{at}.tool_use_id' must be a non-empty string",
                                 param=f"{at}.tool_use_id")
        _check_id_pattern(use_id, f"{at}.tool_use_id")
        if use_id not in pending:  # the message before made no such call
            raise InvalidRequest(
                f"'{at}': unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{shown_text(use_id, _SHOWN_ID)}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message.", param=at)
        if others:
            raise InvalidRequest(f"'{at}': `tool_result` blocks must come first in a "
                                 "message's content, before any other block", param=at)
        answered.add(use_id)
    return answered


def _tool_use_ids(blocks: list[dict[str, Any]], where: str, used: set[str]) -> list[str]:
    ids = []
    for number, block in enumerate(blocks):
        if block.get("type") != "tool_use":
            continue
        at = f"{where}.content[{number}]"
        if not isinstance(block.get("id"), str) or not block["id"]:
            raise InvalidRequest(f"'{at}.id' must be a non-empty string", param=f"{at}.id")
        _check_id_pattern(block["id"], f"{at}.id")
        if block["id"] in used:  # a result could not tell which call it answers
            raise InvalidRequest(f"'{at}': `tool_use` ids must be unique: "
                                 f"{shown_text(block['id'], _SHOWN_ID)}", param=at)
        used.add(block["id"])
        if not isinstance(block.get("name"), str) or not block["name"]:
            # The call names its tool; a loop that kept only id and input was served.
            raise InvalidRequest(f"'{at}.name' must be a non-empty string (the tool "
                                 "called)", param=f"{at}.name")
        if not isinstance(block.get("input"), dict):
            raise InvalidRequest(f"'{at}.input' must be an object (the tool's input), not "
                                 f"{kind_of(block.get('input'))}", param=f"{at}.input")
        ids.append(block["id"])
    return ids


def _check_id_pattern(tool_use_id: str, where: str) -> None:
    if _TOOL_USE_ID.fullmatch(tool_use_id) is None:
        raise InvalidRequest(
            f"'{where}': '{shown_text(tool_use_id, _SHOWN_ID)}' must be letters, digits, "
            "underscores and dashes (the pattern ^[a-zA-Z0-9_-]+$)", param=where)
