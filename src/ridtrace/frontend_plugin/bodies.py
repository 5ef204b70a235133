"""Request-body validation shared by the inference routes (prompt text:
`frontend_plugin.prompts`).

Every check raises :class:`InvalidRequest` naming the offending field, so a malformed
body is answered with a 4xx before anything is registered or dispatched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ridtrace.tracing import annotate_request, annotate_span, metrics, validate_client_id
from ridtrace.tracing.identity import DEFAULT_MAX_CLIENT_ID_LENGTH

__all__ = [
    "MAX_NESTING",
    "InvalidRequest",
    "Parsed",
    "body_client_id",
    "check_nesting",
    "empty_array",
    "integer_in",
    "json_error",
    "kind_of",
    "model_name",
    "nested_deeper_than",
    "not_an_object",
    "opt_bool",
    "opt_str",
    "require_object",
    "token_limit",
    "vetted_body_client_id",
]


class InvalidRequest(Exception):
    """A client error in the body; ``param`` names the field when there is one, ``code``
    is the API's error code when it has one."""

    def __init__(self, message: str, *, param: str | None = None, status: int = 400,
                 code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.code = code


def empty_array(param: str) -> InvalidRequest:
    """OpenAI's refusal of an empty array where it wants at least one item (code
    ``empty_array``), in its words."""
    return InvalidRequest(f"Invalid '{param}': empty array. Expected an array with minimum "
                          "length 1, but got an empty array instead.", param=param,
                          code="empty_array")


@dataclass(slots=True, kw_only=True)
class Parsed:
    """What a route needs from a valid body."""

    model: str
    prompt: str
    max_tokens: int
    stream: bool
    body_client_id: str | None = None
    session_id: str | None = None
    # OpenAI's ``stream_options.include_usage``: a last chunk with the usage, no choices.
    include_usage: bool = False
    # Stop sequences (OpenAI's ``stop``, Anthropic's ``stop_sequences``): the reply ends
    # before the first one it would contain.
    stop: tuple[str, ...] = ()
    # OpenAI's logprobs: None when not asked for, else how many top alternatives.
    logprobs: int | None = None
    # A JSON response format: the schema the reply follows ({} for any JSON object).
    json_schema: dict[str, Any] | None = None
    # Request fields the response object repeats as sent (the Responses API's
    # instructions, temperature, metadata...).
    echoed: dict[str, Any] = field(default_factory=dict)
    # A prompt of token ids: how many (the worker counts their comma-joined prompt as
    # one word); None for text, whose tokens the worker counts.
    prompt_tokens: int | None = None


def json_error(body: bytes, exc: ValueError) -> str:
    """The message for a body the JSON parser refused.

    orjson reports any byte that is not UTF-8 (a Latin-1 ``é``, a UTF-16 body) as
    "str is not valid UTF-8: surrogates not allowed" at line 1 column 1, wherever the
    byte is: the caller is told what it is and where instead. A body nested past
    orjson's own limit (1024 levels) is told what one past :data:`MAX_NESTING` is, as
    the docs say: it was told orjson's "depth limit exceeded" instead.
    """
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as bad:
        return (f"invalid JSON body: not valid UTF-8 "
                f"(byte 0x{body[bad.start]:02x} at offset {bad.start})")
    if str(exc).startswith("depth limit exceeded"):
        return _TOO_DEEP
    return f"invalid JSON body: {exc}"


MAX_NESTING = 200
"""Deepest nesting of objects and arrays taken in a body (or a JSON schema). orjson
reads 1024 levels but writes 254: a Responses call echoes its ``tools`` and a JSON
schema travels to the worker, and a body nested deeper than the frontend could write
back was a 500. A schema the reply builder can follow (``json_reply.MAX_DEPTH``) nests
far less."""


_TOO_DEEP = f"invalid JSON body: nested deeper than {MAX_NESTING} levels"


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` has objects or arrays nested more than ``limit`` levels deep."""
    if not isinstance(value, (dict, list)):
        return False
    # One level at a time, with no object made per container: a stack of (child,
    # depth) pairs made a tuple for each, and a 1 MiB body of 300 000 empty arrays
    # held the event loop (every other request) for over half a second, mostly in the
    # garbage collector those tuples kept starting.
    level: list[Any] = [value]
    for _ in range(limit):
        below: list[Any] = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, (dict, list)):
                    below.append(child)
        if not below:
            return False
        level = below
    return True


def check_nesting(raw: dict[str, Any], body: bytes) -> None:
    """Refuse a body nested deeper than :data:`MAX_NESTING` levels (``body``, its bytes,
    spares the walk when it has too few brackets to be)."""
    if (body.count(b"{") + body.count(b"[") > MAX_NESTING
            and nested_deeper_than(raw, MAX_NESTING)):
        raise InvalidRequest(_TOO_DEEP)


def require_object(raw: Any) -> dict[str, Any]:
    """The body must be a JSON object."""
    if not isinstance(raw, dict):
        raise InvalidRequest(f"request body must be a JSON object, not {kind_of(raw)}")
    return raw


def opt_str(body: dict[str, Any], name: str, default: str | None = None) -> str | None:
    """An optional string field."""
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidRequest(f"'{name}' must be a string, not {kind_of(value)}", param=name)
    return value


MAX_MODEL_LENGTH = 256
"""Longest model name accepted: the name is echoed in every chunk and written on the
request's log lines, so it is held to a cap like any client-chosen string."""


def model_name(body: dict[str, Any], default: str) -> str:
    """The ``model`` field: ``default`` when absent or empty; otherwise printable text
    of at most :data:`MAX_MODEL_LENGTH` characters (no control characters)."""
    value = opt_str(body, "model")
    if not value:
        return default
    if len(value) > MAX_MODEL_LENGTH or not value.isprintable():
        raise InvalidRequest(
            f"'model' must be at most {MAX_MODEL_LENGTH} printable characters "
            "(no control characters)",
            param="model",
        )
    return value


def opt_bool(body: dict[str, Any], name: str) -> bool:
    """An optional boolean field (``false`` when absent)."""
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidRequest(f"'{name}' must be a boolean, not {kind_of(value)}", param=name)
    return value


def stream_usage(body: dict[str, Any]) -> bool:
    """OpenAI's ``stream_options.include_usage`` (``false`` when absent)."""
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise InvalidRequest(
            f"'stream_options' must be an object, not {kind_of(options)}", param="stream_options"
        )
    value = options.get("include_usage")
    if value is not None and not isinstance(value, bool):
        raise InvalidRequest(
            f"'stream_options.include_usage' must be a boolean, not {kind_of(value)}",
            param="stream_options",
        )
    return bool(value)


def single_choice(body: dict[str, Any], param: str = "n") -> None:
    """OpenAI's ``n`` (``sampling_params.n`` on the generate routes, SGLang's): one
    choice per request is what the engines produce.

    ``param`` names the field in the error; ``body`` is the object holding ``n``.
    """
    value = body.get("n")
    if value is None or (value == 1 and isinstance(value, int) and not isinstance(value, bool)):
        return
    # The value is the client's: shown only when it is short (the message is logged).
    shown = repr(value) if isinstance(value, (int, float)) else kind_of(value)
    raise InvalidRequest(
        f"'{param}' must be 1: one choice per request is supported, got {shown}", param=param)


def token_limit(
    value: Any, *, param: str, limit: int, default: int, required: bool = False
) -> int:
    """A token limit: an integer from 1 to ``limit``; ``default`` when absent."""
    if value is None:
        if required:
            raise InvalidRequest(f"'{param}' is required", param=param)
        return default
    return integer_in(value, param=param, low=1, high=limit)


_BEYOND_64_BITS = float(1 << 64)


def integer_in(value: Any, *, param: str, low: int, high: int) -> int:
    """``value`` when it is an integer (not a boolean) from ``low`` to ``high``."""
    if isinstance(value, float) and value.is_integer() and abs(value) >= _BEYOND_64_BITS:
        # orjson reads an integer past 64 bits as a float: it was "not an integer".
        raise InvalidRequest(
            f"'{param}' must be between {low} and {high}, got {value:g}", param=param)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequest(f"'{param}' must be an integer, not {kind_of(value)}", param=param)
    if not low <= value <= high:
        raise InvalidRequest(
            f"'{param}' must be between {low} and {high}, got {value}", param=param
        )
    return value


def body_client_id(body: dict[str, Any], name: str) -> str | None:
    """A client id from the body (``request_id`` / ``rid``) as sent, when a string.

    Vetted like the header by `vetted_body_client_id`, against the limit the request's
    tracing settings hold, which the body's parser does not know.
    """
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"'{name}' must be a string, not {kind_of(value)}", param=name)
    return value


def vetted_body_client_id(
    value: str, name: str, max_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH
) -> str:
    """A body's client id checked as the header is (1 to `max_length` printable ASCII).

    Unlike a bad header (dropped silently, the request still served), a bad body id is
    the body's content and is refused: the route promises to return it verbatim. The
    limit is the tracing settings' ``max_client_id_length``: held to 128 whatever they
    said, a body carried onto every line an id the header could not.
    """
    # The spaces around an id are not part of it, as around a header's: its length is
    # the id's (a 128-character id between two spaces was refused as too long).
    # Spaces only: an empty id, as a header of spaces is. Taken, it was returned to the
    # caller and then on no log line, span or header, where the correlation id drops
    # the spaces.
    core = value.strip(" ")
    blank = bool(value) and not core
    checked = None if blank else validate_client_id(core, max_length)
    if checked is None:
        # Refused with the request, and still a client id not used: counted by its
        # reason as a refused header id is, or the rejected-ids panel misses it.
        metrics.client_id_rejected(
            metrics.REASON_EMPTY if blank else metrics.rejection_reason(core, max_length))
        # And flagged as a refused header id is, on `request.end` and the span: the
        # metric counted it, and no line or span said which request it was.
        annotate_request(x_request_id_rejected=True)
        annotate_span(x_request_id_rejected=True)
        raise InvalidRequest(
            f"'{name}' must be 1-{max_length} printable ASCII characters "
            f"({'not only spaces' if blank else 'no control characters'})",
            param=name,
        )
    return value  # returned to the caller as sent


def kind_of(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string", int: "integer", float: "number"}.get(
        type(value), type(value).__name__
    )


def not_an_object(where: str, value: Any) -> InvalidRequest:
    """OpenAI's 400 for a value at `where` that should be an object."""
    sent = kind_of(value)
    article = "an" if sent[0] in "aeiou" else "a"  # OpenAI's wording
    return InvalidRequest(f"Invalid type for '{where}': expected an object, but got {article} "
                          f"{sent} instead.", param=where)
