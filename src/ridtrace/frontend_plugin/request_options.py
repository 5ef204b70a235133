"""Request options no engine here uses, checked as the real APIs check them.

``seed``, ``user``, ``logit_bias``, ``metadata``, ``response_format`` (Responses:
``text.format``), ``tools``, ``parallel_tool_calls``, the legacy ``suffix`` and
``best_of``, Anthropic's ``metadata`` and ``thinking``: the echo engine has no use for
them, but a caller who sends ``"seed": "abc"`` or a ``logit_bias`` of 1000 has a bug the
real APIs answer with a 400 naming the field (as ``sampling.py`` does for the sampling
fields). Accepted silently, the request "worked" until it met the real API.

A ``tool_choice`` that forces a tool call is refused too, as ``n`` above 1 is: the
engines answer with text only, so the tool call the caller was promised would never
come, and code that reads ``message.tool_calls[0]`` failed on a 200 instead. So are
chat's legacy ``function_call`` naming a function (both checked in ``tool_options``), and
chat ``modalities`` that ask for audio (``message.audio`` was ``None``).

A JSON response format is the one option the engine does use: the checkers of chat,
Responses and Messages return the schema the reply must follow, from
``reply_formats``.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.anthropic_thinking import check_thinking_config
from ridtrace.frontend_plugin.anthropic_tools import check_anthropic_tools
from ridtrace.frontend_plugin.bodies import (
    InvalidRequest,
    empty_array,
    integer_in,
    kind_of,
    opt_bool,
    opt_str,
)
from ridtrace.frontend_plugin.openai_choices import check_responses_tool_choice
from ridtrace.frontend_plugin.openai_names import check_function_names
from ridtrace.frontend_plugin.reply_formats import (
    anthropic_format,
    chat_format,
    responses_format,
)
from ridtrace.frontend_plugin.tool_options import (
    TEXT_ONLY,
    check_legacy_function_call,
    check_openai_tool_choice,
    tool_choice,
    tool_list,
)
from ridtrace.tracing.identity import shown_text

__all__ = [
    "anthropic_options",
    "chat_options",
    "completion_options",
    "openai_metadata",
    "responses_options",
]

_INT64 = (-(1 << 63), (1 << 63) - 1)
MAX_BIAS = 100
"""OpenAI's bound on a ``logit_bias`` value (either sign)."""
MAX_BEST_OF = 20
"""OpenAI's limit on the legacy completions' ``best_of``."""
MAX_USER_ID_LENGTH = 256
"""Anthropic's limit on ``metadata.user_id``."""
_ANTHROPIC_TOOL_CHOICES = ("auto", "any", "tool", "none")
_MODALITIES = ("text", "audio")


def _refuse(message: str, param: str) -> InvalidRequest:
    return InvalidRequest(message, param=param)


def _object(body: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = body.get(name)
    if value is not None and not isinstance(value, dict):
        raise _refuse(f"'{name}' must be an object, not {kind_of(value)}", name)
    return value


def _common(body: dict[str, Any]) -> None:
    """``seed``, ``user`` and ``logit_bias``: on chat and legacy completions alike."""
    if body.get("seed") is not None:
        integer_in(body["seed"], param="seed", low=_INT64[0], high=_INT64[1])
    opt_str(body, "user")
    bias = _object(body, "logit_bias") or {}
    for token, value in bias.items():
        if not (token.isascii() and token.isdigit()):
            raise _refuse("'logit_bias' keys must be token ids (integers written as "
                          "strings)", "logit_bias")
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not -MAX_BIAS <= value <= MAX_BIAS):
            raise _refuse(f"'logit_bias' values must be numbers from -{MAX_BIAS} to "
                          f"{MAX_BIAS}", "logit_bias")


_MAX_METADATA = 16  # OpenAI's limits on metadata: pairs, key and value lengths
_MAX_METADATA_KEY = 64
_MAX_METADATA_VALUE = 512


def openai_metadata(body: dict[str, Any]) -> dict[str, str]:
    """OpenAI's ``metadata`` (chat and Responses), checked as OpenAI checks it; ``{}``
    when absent (a Response object repeats it)."""
    value = body.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > _MAX_METADATA or not all(
        isinstance(v, str) and len(k) <= _MAX_METADATA_KEY and len(v) <= _MAX_METADATA_VALUE
        for k, v in value.items()
    ):
        raise InvalidRequest(
            f"'metadata' must be an object of at most {_MAX_METADATA} string values "
            f"(keys up to {_MAX_METADATA_KEY} characters, values up to "
            f"{_MAX_METADATA_VALUE})", param="metadata")
    return value


def chat_options(body: dict[str, Any]) -> dict[str, Any] | None:
    """Chat Completions' options the engines do not use; the JSON schema the reply
    follows (``response_format``), if any."""
    _common(body)
    if openai_metadata(body) and not opt_bool(body, "store"):
        # Chat keeps metadata only on a stored completion (``store`` defaults to false
        # there, unlike on /v1/responses): OpenAI refuses it otherwise, the 400 that
        # frameworks tagging every call met at their first real call.
        raise _refuse("The 'metadata' parameter is only allowed when 'store' is enabled.",
                      "metadata")
    opt_bool(body, "store")
    if body.get("tools") == []:
        # Frameworks that always send their tool list send [] when there is none: OpenAI's
        # chat refuses it (its Responses API takes it), so it must not pass here.
        raise empty_array("tools")
    tools = tool_list(body, "type")
    check_function_names(tools, "tools", nested=True)
    check_openai_tool_choice(body, tools)
    if body.get("parallel_tool_calls") is not None and not tools:
        # Frameworks send it whatever a call's tools; OpenAI's chat refuses it without
        # them (its Responses API takes it, and repeats it in the Response object).
        raise _refuse("Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is "
                      "only allowed when 'tools' are specified.", "parallel_tool_calls")
    check_legacy_function_call(body)
    modalities = body.get("modalities")
    if modalities is not None and not (isinstance(modalities, list)
                                       and all(m in _MODALITIES for m in modalities)):
        raise _refuse("'modalities' must be a list of 'text' and 'audio'", "modalities")
    if modalities and "audio" in modalities:
        raise _refuse("'modalities' cannot ask for audio: the engines here answer with text "
                      "only", "modalities")
    return chat_format(body)


def responses_options(body: dict[str, Any], *, replying: bool = True) -> dict[str, Any] | None:
    """The Responses API's options the engines do not use, and ``conversation``
    (``replying``: see `tool_options.check_openai_tool_choice`; false when only counting
    tokens); the JSON schema the reply follows (``text.format``), if any."""
    conversation = body.get("conversation")
    if conversation is not None:
        # Nothing is stored here (see previous_response_id): ignored, the new input was
        # answered alone, as if the conversation's earlier turns had never been.
        named = conversation.get("id") if isinstance(conversation, dict) else conversation
        if not isinstance(named, str):
            # A wrong type is a 400 naming the field: a 404 read "Conversation with id
            # 'integer' not found", as if one of that id existed elsewhere.
            where = "conversation.id" if isinstance(conversation, dict) else "conversation"
            raise InvalidRequest(f"Invalid type for '{where}': expected a string, but got "
                                 f"{kind_of(named)} instead.", param=where)
        raise InvalidRequest(f"Conversation with id '{shown_text(named, 64)}' not found.",
                             param="conversation", status=404)
    opt_str(body, "user")
    # Unused here (nothing is stored, the reply comes at once), yet typed as OpenAI types them.
    opt_bool(body, "store")
    opt_bool(body, "background")
    tools = tool_list(body, "type")
    check_function_names(tools, "tools", nested=False)
    check_responses_tool_choice(body.get("tool_choice"), tools)
    check_openai_tool_choice(body, tools, replying=replying)
    return responses_format(body, replying=replying)


def completion_options(body: dict[str, Any], stream: bool) -> None:
    """Legacy Completions' options the engines do not use (``n`` is checked apart)."""
    _common(body)
    opt_str(body, "suffix")
    best_of = body.get("best_of")
    if best_of is not None:
        integer_in(best_of, param="best_of", low=1, high=MAX_BEST_OF)
        if best_of > 1 and stream:
            # The best of several candidates is known only once all are done.
            raise _refuse("'best_of' above 1 cannot be streamed", "best_of")


def anthropic_options(body: dict[str, Any], max_tokens: int | None) -> dict[str, Any] | None:
    """The Messages API's options the engines do not use: ``metadata``, ``thinking``,
    ``tools``, ``tool_choice``; the JSON schema the reply follows (``output_config``'s
    ``format``), if any.

    ``max_tokens`` is ``None`` for token counting (``count_tokens``), which checks the
    same options (it counted bodies ``/v1/messages`` refuses) but generates nothing: a
    ``tool_choice`` that forces a call is counted, not refused (but beside ``enabled``
    thinking, as Anthropic refuses it), and a thinking budget
    has no ``max_tokens`` to stay below.
    """
    check_thinking_config(body, max_tokens)
    _anthropic_metadata_and_tools(body, replying=max_tokens is not None)
    return anthropic_format(body)


def _anthropic_metadata_and_tools(body: dict[str, Any], *, replying: bool) -> None:
    metadata = _object(body, "metadata") or {}
    for name in metadata:
        if name != "user_id":
            # The name is the client's: capped and escaped before it is logged.
            raise _refuse(f"'metadata' takes only 'user_id', not '{shown_text(name, 64)}'",
                          "metadata")
    user_id = metadata.get("user_id")
    if user_id is not None and (not isinstance(user_id, str)
                                or len(user_id) > MAX_USER_ID_LENGTH):
        raise _refuse(f"'metadata.user_id' must be a string of at most {MAX_USER_ID_LENGTH} "
                      "characters", "metadata")
    tools = tool_list(body, "name")
    check_anthropic_tools(tools)
    choice = tool_choice(body, tools)
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in _ANTHROPIC_TOOL_CHOICES:
        raise _refuse("'tool_choice' must be an object whose 'type' is one of "
                      f"{', '.join(_ANTHROPIC_TOOL_CHOICES)}", "tool_choice")
    if kind == "tool" and (not isinstance(choice.get("name"), str) or not choice["name"]):
        raise _refuse("'tool_choice.name' is required: the tool a choice of type 'tool' "
                      "forces", "tool_choice.name")
    # Anthropic's API takes only a boolean; "true" (a string) was served here.
    if not isinstance(choice.get("disable_parallel_tool_use", False), bool):
        raise _refuse("'tool_choice.disable_parallel_tool_use' must be a boolean",
                      "tool_choice.disable_parallel_tool_use")
    thinking = body.get("thinking")
    if kind in ("any", "tool") and isinstance(thinking, dict) and thinking.get(
            "type") == "enabled":  # refused there on count_tokens too, where it was counted
        raise _refuse("Thinking may not be enabled when tool_choice forces tool use "
                      "(only 'auto' and 'none' go with thinking)", "tool_choice")
    if replying and kind in ("any", "tool"):
        raise _refuse(f"'tool_choice' cannot force a tool call: {TEXT_ONLY}", "tool_choice")
