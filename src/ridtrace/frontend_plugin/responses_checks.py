"""Checks of a Responses API body that no other route shares: the stored responses and
prompts it names, what it asks to ``include``, ``truncation``, the smallest
``max_output_tokens`` and ``stream_options``."""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import (
    MAX_MODEL_LENGTH,
    InvalidRequest,
    integer_in,
    kind_of,
    opt_str,
)
from ridtrace.frontend_plugin.logprobs import MAX_TOP_LOGPROBS
from ridtrace.frontend_plugin.sampling import stream_options_need_stream
from ridtrace.tracing.identity import shown_text

__all__ = [
    "check_output_token_floor",
    "check_stream_options",
    "refuse_background",
    "refuse_stored_responses",
    "responses_logprobs",
    "responses_truncation",
]

_TRUNCATIONS = ("auto", "disabled")
# The smallest max_output_tokens OpenAI's Responses API takes.
_MIN_OUTPUT_TOKENS = 16


def refuse_stored_responses(body: dict[str, Any]) -> None:
    """Refuse ``previous_response_id`` (and a stored ``prompt``, below) as OpenAI
    refuses an id it does not hold: no response is stored here, so none is ever found.
    Ignored, it answered the new input alone as if the earlier turns had never been,
    and clients that recover from ``previous_response_not_found`` by sending the whole
    conversation never did. OpenAI refuses the two history sources together first."""
    if body.get("previous_response_id") is not None and body.get("conversation") is not None:
        raise InvalidRequest("Mutually exclusive parameters: Ensure you are only providing "
                             "one of: 'previous_response_id' or 'conversation'.",
                             code="mutually_exclusive_parameters")
    previous = opt_str(body, "previous_response_id")
    if previous is not None:
        shown = shown_text(previous, MAX_MODEL_LENGTH)  # the client's: capped, escaped
        raise InvalidRequest(f"Previous response with id '{shown}' not found.",
                             param="previous_response_id", code="previous_response_not_found")
    # A prompt template is stored on OpenAI's platform, never here: ignored, its
    # instructions and messages were dropped and the input answered without them.
    prompt = body.get("prompt")
    if prompt is not None:
        named = prompt.get("id") if isinstance(prompt, dict) else None
        if not isinstance(named, str):
            raise InvalidRequest("'prompt' must be an object with a string 'id'", param="prompt")
        raise InvalidRequest(f"Prompt with id '{shown_text(named, MAX_MODEL_LENGTH)}' not found.",
                             param="prompt", status=404)


def refuse_background(body: dict[str, Any]) -> None:
    """Refuse ``background: true`` as OpenAI refuses a parameter a model does not take.
    A background response is fetched later (``responses.retrieve``, ``cancel``, a
    stream resumed with ``starting_after``), and nothing is stored here: it was answered
    at once with its id, and every later call with that id was a bare 404, so code
    written against background mode passed its first call and broke on its second. Run
    after ``responses_options``, which has checked that it is a boolean."""
    if body.get("background"):
        raise InvalidRequest("Unsupported parameter: 'background' is not supported with "
                             "this model.", param="background", code="unsupported_parameter")


_LOGPROBS_INCLUDE = "message.output_text.logprobs"
# What OpenAI's ``include`` takes (the SDK's ``ResponseIncludable``).
_INCLUDABLE = (
    "file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
    "message.input_image.image_url", "computer_call_output.output.image_url",
    "code_interpreter_call.outputs", "reasoning.encrypted_content", _LOGPROBS_INCLUDE,
)


def responses_logprobs(body: dict[str, Any]) -> int | None:
    """How many top alternatives each token's logprobs list, when ``include`` asks for
    them (``None`` otherwise). They were always ``[]``: a caller that asked for them, as
    on chat, read nothing. (See ``logprobs.py`` for what the echo engine answers.)"""
    include = body.get("include")
    if include is not None and (
        not isinstance(include, list) or not all(isinstance(i, str) for i in include)
    ):
        raise InvalidRequest("'include' must be a list of strings", param="include")
    for value in include or ():
        # Taken unchecked, a misspelt value was answered without what it asked for.
        if value not in _INCLUDABLE:
            raise InvalidRequest(f"Invalid value: '{shown_text(value, 64)}'. Supported values "
                                 f"are: {', '.join(repr(i) for i in _INCLUDABLE)}.",
                                 param="include")
    top = body.get("top_logprobs")
    if top is not None:
        top = integer_in(top, param="top_logprobs", low=0, high=MAX_TOP_LOGPROBS)
    return (top or 0) if include is not None and _LOGPROBS_INCLUDE in include else None


def responses_truncation(body: dict[str, Any]) -> str:
    """``truncation`` as OpenAI takes it (``disabled`` when not set). Unchecked, a value
    OpenAI refuses was answered, and the Response object said ``null`` whatever was
    asked. (The echo engine has no context window, so nothing is ever cut.)"""
    value = body.get("truncation")
    if value is None:
        return "disabled"
    if value not in _TRUNCATIONS:
        shown = shown_text(value, 64) if isinstance(value, str) else kind_of(value)
        raise InvalidRequest(f"Invalid value: '{shown}'. Supported values are: 'auto' and "
                             "'disabled'.", param="truncation")
    return str(value)


def check_output_token_floor(body: dict[str, Any]) -> None:
    """Refuse an integer ``max_output_tokens`` below 16 as OpenAI does (its
    ``integer_below_min_value``). It was served, cut at that many tokens: a request tested
    here with a small limit (a cheap probe, a one-word classification) broke at its first
    call to OpenAI. Other types and the upper bound are ``max_tokens_of``'s to check."""
    value = body.get("max_output_tokens")
    if isinstance(value, int) and not isinstance(value, bool) and value < _MIN_OUTPUT_TOKENS:
        raise InvalidRequest("Invalid 'max_output_tokens': integer below minimum value. "
                             f"Expected a value >= {_MIN_OUTPUT_TOKENS}, but got {value} "
                             "instead.", param="max_output_tokens",
                             code="integer_below_min_value")


def check_stream_options(body: dict[str, Any], stream: bool) -> None:
    """Refuse ``stream_options`` on a request that does not stream ("Only set this when
    you set ``stream: true``", the SDK says, as of chat's, which OpenAI refuses so), and
    options that are no object or whose ``include_obfuscation`` is no boolean. They were
    taken unread in any shape, so the mistake first showed at OpenAI."""
    options = body.get("stream_options")
    if options is None:
        return
    if not isinstance(options, dict):
        raise InvalidRequest(f"Invalid type for 'stream_options': expected an object, but "
                             f"got {kind_of(options)} instead.", param="stream_options",
                             code="invalid_type")
    obfuscation = options.get("include_obfuscation")
    if obfuscation is not None and not isinstance(obfuscation, bool):
        param = "stream_options.include_obfuscation"
        raise InvalidRequest(f"Invalid type for '{param}': expected a boolean, but got "
                             f"{kind_of(obfuscation)} instead.", param=param,
                             code="invalid_type")
    stream_options_need_stream(body, stream)
