"""OpenAI's options of a fixed set of values (chat and Responses), checked as OpenAI does.

The echo engine has no use for ``reasoning_effort``, ``service_tier``, ``verbosity`` or
``prompt_cache_retention``, so they went unread: a typo (``"hgih"``), another API's
value or a number was a 200 here and a 400 at OpenAI, and a request tested against the
frontend broke at its first real call. The values are those the official SDK's types
list; ``safety_identifier`` and ``prompt_cache_key`` are strings there. A tool's
``type`` is one of such a set too, and so is an ``allowed_tools`` tool choice's
``mode``. The Responses API nests the same values (``reasoning.effort``,
``text.verbosity``) and was as blind to them.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of, opt_str
from ridtrace.tracing.identity import shown_text

__all__ = [
    "chat_choices_echoed",
    "check_chat_choices",
    "check_responses_choices",
    "check_responses_tool_choice",
    "responses_choices_echoed",
]

_CHOICES = {
    "reasoning_effort": ("none", "minimal", "low", "medium", "high", "xhigh", "max"),
    "service_tier": ("auto", "default", "flex", "scale", "priority", "fast"),
    "verbosity": ("low", "medium", "high"),
    "prompt_cache_retention": ("in_memory", "24h"),
}
_STRINGS = ("safety_identifier", "prompt_cache_key")
# The Responses API's tiers are chat's and one more (the SDK's ``ServiceTier``).
_RESPONSES_SERVICE_TIERS = (*_CHOICES["service_tier"], "ultrafast")
_REASONING_SUMMARIES = ("auto", "concise", "detailed")
# Which earlier turns' reasoning the model sees again (the SDK's ``Reasoning.context``).
_REASONING_CONTEXTS = ("auto", "current_turn", "all_turns")
# The object tool choices of the Responses API (the SDK's ``ToolChoice``): the named
# ones, then those that pick a tool by its type alone.
_NAMED_TOOL_CHOICES = ("function", "custom")
_RESPONSES_TOOL_CHOICES = (
    *_NAMED_TOOL_CHOICES, "allowed_tools", "mcp", "programmatic_tool_calling",
    "apply_patch", "shell", "file_search", "web_search_preview", "computer",
    "computer_use_preview", "computer_use", "web_search_preview_2025_03_11",
    "image_generation", "code_interpreter",
)
# The Responses API's option objects that hold a field of a fixed set of values (the
# SDK's ``PromptCacheOptions``, ``BackgroundOptions``, ``Image`` and ``AccessPrograms``).
_RESPONSES_NESTED_CHOICES = {
    ("prompt_cache_options", "mode"): ("implicit", "explicit"),
    ("prompt_cache_options", "ttl"): ("30m", "12h"),
    ("background_options", "completion_window"): ("soonest", "2h", "8h"),
    ("image", "context_compression"): ("auto", "enabled", "disabled"),
    ("access_programs", "cyber"): ("standard", "daybreak_blue", "daybreak_red"),
}
_TOOL_TYPES = ("function", "custom")
# The Responses API's tool types (the SDK's ``ToolParam``): functions, then built-ins.
_RESPONSES_TOOL_TYPES = (
    *_TOOL_TYPES, "namespace", "file_search", "computer", "computer_use_preview",
    "web_search", "web_search_2025_08_26", "web_search_preview",
    "web_search_preview_2025_03_11", "mcp", "code_interpreter", "programmatic_tool_calling",
    "image_generation", "local_shell", "shell", "tool_search", "apply_patch",
)
_ALLOWED_TOOLS_MODES = ("auto", "required")


def _supported(values: tuple[str, ...]) -> str:
    # OpenAI's wording: "'low', 'medium', and 'high'", "'function' and 'custom'".
    quoted = [f"'{value}'" for value in values]
    last = " and " if len(quoted) == 2 else ", and "
    return ", ".join(quoted[:-1]) + last + quoted[-1]


def _invalid_value(value: Any, values: tuple[str, ...], param: str) -> InvalidRequest:
    # The value is the client's: capped and escaped before it is logged.
    shown = shown_text(value, 64) if isinstance(value, str) else kind_of(value)
    return InvalidRequest(f"Invalid value: '{shown}'. Supported values are: "
                          f"{_supported(values)}.", param=param, code="invalid_value")


def check_chat_choices(body: dict[str, Any]) -> None:
    """Refuse a ``reasoning_effort``, ``service_tier``, ``verbosity`` or
    ``prompt_cache_retention`` OpenAI does not take (``null`` is not set), a
    ``safety_identifier`` or ``prompt_cache_key`` that is not a string, a tool type and
    an ``allowed_tools`` choice OpenAI's chat does not take. Run after
    ``chat_options``, which has read ``tools``."""
    _check_tool_types(body.get("tools") or [])
    _check_allowed_tools(body.get("tool_choice"))
    for name, values in _CHOICES.items():
        _check_one_of(body.get(name), values, name)
    for name in _STRINGS:
        opt_str(body, name)


def chat_choices_echoed(body: dict[str, Any]) -> dict[str, Any]:
    """What a chat completion (and each of its chunks) repeats of the options
    :func:`check_chat_choices` checked: the ``service_tier`` that served it, when the
    request set one (``default`` for ``auto``), as OpenAI's does. It was left out, so a
    client reading back the tier it was billed at read ``None``."""
    tier = body.get("service_tier")
    return {} if tier is None else {"service_tier": "default" if tier == "auto" else tier}


def _invalid_type(param: str, value: Any) -> InvalidRequest:
    return InvalidRequest(f"Invalid type for '{param}': expected an object, but got "
                          f"{kind_of(value)} instead.", param=param, code="invalid_type")


def _check_one_of(value: Any, values: tuple[str, ...], param: str) -> None:
    if value is not None and value not in values:
        raise _invalid_value(value, values, param)


def check_responses_choices(body: dict[str, Any]) -> None:
    """Refuse a ``reasoning`` (or a ``text`` other than a plain string) that is no
    object, a ``reasoning`` whose ``effort``, ``summary`` or ``context`` OpenAI does not
    take or whose ``mode`` is no string, a
    ``service_tier``, ``prompt_cache_retention`` or ``text.verbosity`` it does not take,
    a ``safety_identifier`` or ``prompt_cache_key`` that is not a string and a
    ``max_tool_calls`` that is not an integer (``null`` is not set), and an
    ``allowed_tools`` ``tool_choice`` without a ``mode`` OpenAI takes or a ``tools``
    list, a tool of a type the Responses API does not have, and a
    ``prompt_cache_options``, ``background_options``, ``image`` or ``access_programs``
    that is no object or holds a value OpenAI does not take, as
    :func:`check_chat_choices` does for chat's fields. Run after ``responses_options``,
    which has read ``tools``."""
    reasoning = body.get("reasoning")
    if reasoning is not None:
        if not isinstance(reasoning, dict):
            # Chat's ``"reasoning_effort": "high"`` moved over as ``"reasoning": "high"``.
            raise _invalid_type("reasoning", reasoning)
        _check_one_of(reasoning.get("effort"), _CHOICES["reasoning_effort"],
                      "reasoning.effort")
        for name in ("summary", "generate_summary"):  # the older name is still taken
            _check_one_of(reasoning.get(name), _REASONING_SUMMARIES, f"reasoning.{name}")
        _check_one_of(reasoning.get("context"), _REASONING_CONTEXTS, "reasoning.context")
        mode = reasoning.get("mode")  # any string: OpenAI names new modes as they come
        if mode is not None and not isinstance(mode, str):
            raise InvalidRequest(f"Invalid type for 'reasoning.mode': expected a string, but "
                                 f"got {kind_of(mode)} instead.", param="reasoning.mode",
                                 code="invalid_type")
    _check_one_of(body.get("service_tier"), _RESPONSES_SERVICE_TIERS, "service_tier")
    _check_one_of(body.get("prompt_cache_retention"), _CHOICES["prompt_cache_retention"],
                  "prompt_cache_retention")
    text = body.get("text")  # a plain string is left alone (see responses_format)
    if isinstance(text, dict):
        _check_one_of(text.get("verbosity"), _CHOICES["verbosity"], "text.verbosity")
    elif text is not None and not isinstance(text, str):
        raise _invalid_type("text", text)
    for name in _STRINGS:
        opt_str(body, name)
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        # The flat shape: a bad mode was served as a choice that forces nothing, and
        # chat's nested shape passed by its nested mode; OpenAI refuses both.
        _check_allowed_tools_fields(choice, "tool_choice")
    _check_tool_types(body.get("tools") or [], _RESPONSES_TOOL_TYPES)
    for (name, field), values in _RESPONSES_NESTED_CHOICES.items():
        options = body.get(name)
        if options is not None and not isinstance(options, dict):
            raise _invalid_type(name, options)
        _check_one_of((options or {}).get(field), values, f"{name}.{field}")
    calls = body.get("max_tool_calls")
    if calls is not None and (not isinstance(calls, int) or isinstance(calls, bool)):
        raise InvalidRequest(f"'max_tool_calls' must be an integer, not {kind_of(calls)}",
                             param="max_tool_calls")


def _check_tool_types(tools: list[Any], types: tuple[str, ...] = _TOOL_TYPES) -> None:
    """Refuse a tool of a type other than ``types`` (chat's: ``function`` and ``custom``):
    a Responses built-in tool (``web_search_preview``) on chat, or a misspelt type on
    either, was served here as a tool the engine would never call, and OpenAI refuses
    it. ``tools`` has been read by ``chat_options`` or ``responses_options`` (objects
    with a string ``type``)."""
    for index, tool in enumerate(tools):
        if tool["type"] not in types:
            raise _invalid_value(tool["type"], types, f"tools[{index}].type")


def _check_allowed_tools(choice: Any) -> None:
    """Refuse an ``allowed_tools`` ``tool_choice`` without chat's nested object (the
    Responses API's flat shape, the usual slip), with a ``mode`` other than ``auto`` and
    ``required`` or with ``tools`` that are no list: it was served here as a choice that
    forces nothing, and OpenAI's chat refuses it. A ``required`` mode is refused by
    ``chat_options`` as any forced call is."""
    if not isinstance(choice, dict) or choice.get("type") != "allowed_tools":
        return
    allowed = choice.get("allowed_tools")
    if not isinstance(allowed, dict):
        raise InvalidRequest("Missing required parameter: 'tool_choice.allowed_tools'.",
                             param="tool_choice.allowed_tools")
    _check_allowed_tools_fields(allowed, "tool_choice.allowed_tools")


def _check_allowed_tools_fields(allowed: dict[str, Any], where: str) -> None:
    """An allowed-tools choice's ``mode`` and ``tools``, in the object at ``where``
    (chat's nested ``allowed_tools``, the Responses API's ``tool_choice`` itself)."""
    mode = allowed.get("mode")
    if mode not in _ALLOWED_TOOLS_MODES:
        param = f"{where}.mode"
        if mode is None:
            raise InvalidRequest(f"Missing required parameter: '{param}'.", param=param)
        raise _invalid_value(mode, _ALLOWED_TOOLS_MODES, param)
    if not isinstance(allowed.get("tools"), list):
        raise InvalidRequest(f"'{where}.tools' must be a list of tools",
                             param=f"{where}.tools")


def check_responses_tool_choice(choice: Any, tools: list[Any]) -> None:
    """Refuse an object ``tool_choice`` of a type the Responses API does not have, and a
    ``function`` or ``custom`` one without a ``name`` or naming no tool of its type in
    ``tools`` (objects with a string ``type``), as OpenAI does. ``input_tokens`` counted
    them (it counts a call that forces a tool), and ``/v1/responses`` refused them only
    as forced calls: a typo was then fixed into the next 400 at OpenAI. Without
    ``tools``, any ``tool_choice`` is refused as such."""
    if not isinstance(choice, dict) or not tools:
        return
    kind = choice.get("type")
    if kind not in _RESPONSES_TOOL_CHOICES:
        raise _invalid_value(kind, _RESPONSES_TOOL_CHOICES, "tool_choice.type")
    if kind not in _NAMED_TOOL_CHOICES:
        return
    name = choice.get("name")
    if not isinstance(name, str):
        raise InvalidRequest("Missing required parameter: 'tool_choice.name'.",
                             param="tool_choice.name")
    if not any(tool["type"] == kind and tool.get("name") == name for tool in tools):
        raise InvalidRequest(f"Tool choice '{kind}' not found in 'tools' parameter.",
                             param="tool_choice")


def responses_choices_echoed(body: dict[str, Any]) -> dict[str, Any]:
    """What a Response object repeats of the options :func:`check_responses_choices`
    checked (and ``top_logprobs``, 0 when not set, and ``background``), as OpenAI's does:
    it said ``null`` whatever was sent, so a client reading back the effort it ran with
    read nothing. The ``service_tier`` is the one that served it, as OpenAI's says:
    ``default`` when none or ``auto`` was asked."""
    reasoning = body.get("reasoning") or {}
    tier = body.get("service_tier")
    return {
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "max_tool_calls": body.get("max_tool_calls"),
        "top_logprobs": body.get("top_logprobs") or 0,
        "service_tier": "default" if tier in (None, "auto") else tier,
        "background": bool(body.get("background")),
        "prompt_cache_retention": body.get("prompt_cache_retention"),
        **{name: body.get(name) for name in _STRINGS},
    }
