"""The reply format a request asks for: text, or JSON following a schema.

A JSON response format — chat's ``response_format``, the Responses API's
``text.format``, Anthropic's ``output_config.format`` (or the older ``output_format``),
SGLang's ``sampling_params.json_schema`` — is a promise that the reply parses, so it is
the one request option the echo engine follows (``json_reply``). Each function here
checks its API's field as that API does and returns the schema the reply must follow
(``{}`` for any JSON object), or ``None`` for a text reply. A schema the engine can
build no document for is a 400 naming the field, not a reply the caller cannot parse.
"""

from __future__ import annotations

from typing import Any

import orjson

from ridtrace.frontend_plugin import json_codec
from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of
from ridtrace.frontend_plugin.json_reply import check_schema
from ridtrace.frontend_plugin.openai_names import check_openai_name
from ridtrace.frontend_plugin.strict_schemas import check_strict_schema, strict_flag

__all__ = [
    "anthropic_format",
    "chat_format",
    "check_json_mode_asked",
    "responses_format",
    "sglang_format",
]

_RESPONSE_FORMATS = ("text", "json_object", "json_schema")
_EFFORTS = ("low", "medium", "high", "xhigh", "max")
_SGLANG_GRAMMARS = ("regex", "ebnf", "structural_tag")


def _refuse(message: str, param: str) -> InvalidRequest:
    return InvalidRequest(message, param=param)


def _reply_schema(schema: Any, param: str, *, replying: bool = True) -> dict[str, Any]:
    """A JSON format's ``schema`` (``{}`` when none is given); when ``replying``, one
    the echo engine can answer: refused now with a 400 rather than by the worker as a
    502 (a count of tokens generates nothing, so needs no document)."""
    if schema is None:
        return {}
    if not isinstance(schema, dict):
        raise _refuse(f"'{param}.schema' must be an object, not {kind_of(schema)}", param)
    if not replying:
        return schema
    try:
        check_schema(schema)
    except ValueError as exc:
        raise _refuse(f"'{param}.schema' cannot be answered: {exc}", param) from None
    return schema


def check_json_mode_asked(response_format: Any, text: str, message: str, param: str) -> None:
    """OpenAI's JSON mode (a format of type ``json_object``) needs the word "json", in any
    case, in the messages ``text`` holds: without it OpenAI answers 400 ``message`` (the
    model, told nothing of JSON, may write whitespace until the token limit). A schema
    format says what to write and needs no word."""
    if (isinstance(response_format, dict) and response_format.get("type") == "json_object"
            and "json" not in text.lower()):
        raise _refuse(message, param)


def chat_format(body: dict[str, Any]) -> dict[str, Any] | None:
    """Chat Completions' ``response_format``."""
    response_format = body.get("response_format")
    if response_format is None:
        return None
    if not isinstance(response_format, dict):
        raise _refuse(f"'response_format' must be an object, not {kind_of(response_format)}",
                      "response_format")
    kind = response_format.get("type")
    if kind not in _RESPONSE_FORMATS:
        raise _refuse(f"'response_format.type' must be one of {', '.join(_RESPONSE_FORMATS)}",
                      "response_format")
    if kind != "json_schema":
        return {} if kind == "json_object" else None
    schema = response_format.get("json_schema")
    if not (isinstance(schema, dict) and isinstance(schema.get("name"), str)):
        raise _refuse("'response_format.json_schema' must be an object with a string "
                      "'name'", "response_format")
    check_openai_name(schema["name"], "response_format.json_schema.name")
    reply_schema = _reply_schema(schema.get("schema"), "response_format.json_schema")
    if strict_flag(schema, "response_format.json_schema.strict"):
        check_strict_schema(reply_schema, schema["name"], "response_format", object_root=True)
    return reply_schema


def responses_format(body: dict[str, Any], *, replying: bool = True) -> dict[str, Any] | None:
    """The Responses API's ``text.format`` (not ``replying``: a token count)."""
    # Only an object's format is looked at: a plain-string ``text`` is what one body
    # sent to every route carries for /generate, and was always served here.
    text = body.get("text")
    response_format = text.get("format") if isinstance(text, dict) else None
    if response_format is None:
        return None
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind not in _RESPONSE_FORMATS:
        raise _refuse(f"'text.format.type' must be one of {', '.join(_RESPONSE_FORMATS)}",
                      "text.format")
    if kind != "json_schema":
        return {} if kind == "json_object" else None
    if not isinstance(response_format.get("name"), str):
        raise _refuse("'text.format' of type json_schema needs a string 'name'",
                      "text.format")
    check_openai_name(response_format["name"], "text.format.name")
    reply_schema = _reply_schema(response_format.get("schema"), "text.format",
                                 replying=replying)
    if strict_flag(response_format, "text.format.strict"):
        check_strict_schema(reply_schema, response_format["name"], "text.format.schema",
                            object_root=True)
    return reply_schema


def anthropic_format(body: dict[str, Any]) -> dict[str, Any] | None:
    """``output_config`` (``effort``, ``format``) and the older top-level
    ``output_format`` the beta SDK sends: a ``format`` is ``json_schema`` with a
    ``schema``, as Anthropic's API takes it."""
    config = body.get("output_config") or {}
    if not isinstance(config, dict):
        raise _refuse(f"'output_config' must be an object, not {kind_of(config)}",
                      "output_config")
    effort = config.get("effort")
    if effort is not None and effort not in _EFFORTS:
        raise _refuse(f"'output_config.effort' must be one of {', '.join(_EFFORTS)}",
                      "output_config.effort")
    named = "output_config.format"
    output_format = config.get("format")
    if body.get("output_format") is not None:
        if output_format is not None:
            raise _refuse("give 'output_config.format' or 'output_format', not both",
                          "output_format")
        named, output_format = "output_format", body["output_format"]
    if output_format is None:
        return None
    if not isinstance(output_format, dict) or output_format.get("type") != "json_schema":
        raise _refuse(f"'{named}' must be an object whose 'type' is json_schema", named)
    if output_format.get("schema") is None:
        raise _refuse(f"'{named}.schema' is required", named)
    return _reply_schema(output_format["schema"], named)


def sglang_format(params: dict[str, Any]) -> dict[str, Any] | None:
    """SGLang's constrained decoding in ``sampling_params``: ``json_schema`` (the schema
    as a JSON string) gets a JSON reply; a ``regex``, ``ebnf`` or ``structural_tag``,
    which the echo cannot follow, is refused as a forced tool call is."""
    for name in _SGLANG_GRAMMARS:
        if params.get(name) is not None:
            raise _refuse(f"'sampling_params.{name}' cannot be followed: the echo engine "
                          "constrains its reply only to a json_schema",
                          f"sampling_params.{name}")
    text = params.get("json_schema")
    if text is None:
        return None
    param = "sampling_params.json_schema"
    try:
        schema = json_codec.loads(text) if isinstance(text, str) else None
    except orjson.JSONDecodeError:
        schema = None
    if not isinstance(schema, dict):
        raise _refuse(f"'{param}' must be a JSON schema object written as a string", param)
    return _reply_schema(schema, param)
