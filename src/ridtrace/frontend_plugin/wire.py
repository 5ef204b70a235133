"""The frontend↔worker wire format: a JSON work envelope in, NDJSON chunks out.

Every chunk names the ``request_id`` it was produced for, so the frontend can refuse a
chunk that belongs to someone else (defense in depth behind the registry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ridtrace.frontend_plugin import json_codec
from ridtrace.frontend_plugin.bodies import (
    MAX_MODEL_LENGTH,
    InvalidRequest,
    check_nesting,
    json_error,
)
from ridtrace.frontend_plugin.json_reply import check_schema
from ridtrace.frontend_plugin.sampling import MAX_STOP_LENGTH, MAX_STOP_SEQUENCES
from ridtrace.tracing.identity import DEFAULT_MAX_CLIENT_ID_LENGTH, validate_client_id

__all__ = [
    "CLIENT_KEEP_ALIVE_SECONDS",
    "SERVER_KEEP_ALIVE_SECONDS",
    "WORK_PATH",
    "ChunkEncoder",
    "WorkRequest",
    "chunk_line",
    "done_line",
    "error_line",
]

WORK_PATH = "/v1/work"
"""Where workers accept work envelopes."""

# A pooled connection the server closes for idleness just as the client reuses it
# fails with a ReadError before any byte of the answer (seen on a fresh-clone demo run:
# httpx and uvicorn both default to 5 s). Clients therefore drop idle connections well
# before `ridtrace serve` would.
SERVER_KEEP_ALIVE_SECONDS = 15
"""How long `ridtrace serve` keeps an idle connection open."""
CLIENT_KEEP_ALIVE_SECONDS = 2.0
"""How long ridtrace's own HTTP clients keep an idle pooled connection."""

_STR_FIELDS = ("request_id", "endpoint", "model", "prompt")
# Fields a worker writes on its log lines and span, or keys its in-flight table by: held
# to the rules the frontend applies before it sends them (a minted or vetted id, a route
# name), so a caller of /v1/work other than the frontend cannot put megabytes, line
# breaks or terminal escapes into them.
_ID_FIELDS = ("request_id", "endpoint", "session_id")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkRequest:
    """What the frontend asks a worker to do for one request.

    Attributes:
        request_id: the frontend's internal id (the in-flight key).
        x_request_id: the client's correlation id, if any.
        endpoint: the frontend route kind (``chat_completions``, ``generate`` …).
        model: model name.
        prompt: normalised prompt text (docs/log-schema.md, Fingerprints).
        max_tokens: generation limit.
        session_id: SGLang session key (the client's ``rid``), when given.
        stop: stop sequences: the reply ends before the first one it would contain.
        json_schema: the caller asked for JSON: the schema the reply follows (``{}``
            for any JSON object); ``None`` for text.
    """

    request_id: str
    x_request_id: str | None
    endpoint: str
    model: str
    prompt: str
    max_tokens: int
    session_id: str | None = None
    stop: tuple[str, ...] = ()
    json_schema: dict[str, Any] | None = None

    def to_json(self) -> bytes:
        """Serialise for the request body."""
        return json_codec.dumps(
            {
                "request_id": self.request_id,
                "x_request_id": self.x_request_id,
                "endpoint": self.endpoint,
                "model": self.model,
                "prompt": self.prompt,
                "max_tokens": self.max_tokens,
                "session_id": self.session_id,
                "stop": self.stop,
                "json_schema": self.json_schema,
            }
        )

    @classmethod
    def from_json(
        cls, data: bytes, *, max_id_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH
    ) -> WorkRequest:
        """Parse and check an envelope; raises ``ValueError`` naming the bad field.

        `max_id_length`: the worker's ``max_client_id_length``. Under the legacy policy
        the request_id is the client's id, which a frontend configured for longer ids
        (RIDTRACE_MAX_CLIENT_ID_LENGTH) accepts and sends on.
        """
        try:
            raw: Any = json_codec.loads(data)
        except orjson.JSONDecodeError as exc:
            # As the frontend words it: orjson calls any byte that is not UTF-8
            # "surrogates not allowed" at line 1 column 1, wherever it is.
            raise ValueError(json_error(data, exc)) from None
        if not isinstance(raw, dict):
            raise ValueError("envelope must be a JSON object")
        try:
            # As the frontend's bodies: refused past 200 levels, as the message names.
            check_nesting(raw, data)
        except InvalidRequest as exc:
            raise ValueError(exc.message) from None
        for name in _STR_FIELDS:
            if not isinstance(raw.get(name), str):
                raise ValueError(f"{name} must be a string")
        for name in ("x_request_id", "session_id"):
            if raw.get(name) is not None and not isinstance(raw[name], str):
                raise ValueError(f"{name} must be a string or null")
        # Never below the default: a body's rid (session_id) is held to it whatever the
        # frontend's setting.
        longest = max(max_id_length, DEFAULT_MAX_CLIENT_ID_LENGTH)
        for name in _ID_FIELDS:
            if raw.get(name) is not None and validate_client_id(raw[name], longest) is None:
                raise ValueError(f"{name} must be 1-{longest} printable ASCII characters")
        # Spaces alone are no id, as the frontend refuses a body's (an id in flight
        # under "   " was answered under a minted id no line carries), nor a route's name.
        for name in _ID_FIELDS:
            if raw.get(name) is not None and not raw[name].strip(" "):
                raise ValueError(f"{name} must be 1-{longest} printable ASCII characters "
                                 "(not only spaces)")
        model = raw["model"]
        if len(model) > MAX_MODEL_LENGTH or not model.isprintable():
            raise ValueError(f"model must be at most {MAX_MODEL_LENGTH} printable characters")
        stop = raw.get("stop") or []  # absent from an older frontend's envelope
        # The frontend's limits: the engine searches the reply for every stop string, so
        # 20 000 of them in one 2 MB envelope held a worker's event loop for minutes.
        if (
            not isinstance(stop, list) or len(stop) > MAX_STOP_SEQUENCES
            or not all(isinstance(s, str) and 0 < len(s) <= MAX_STOP_LENGTH for s in stop)
        ):
            raise ValueError(
                f"stop must be a list of at most {MAX_STOP_SEQUENCES} strings of "
                f"1-{MAX_STOP_LENGTH} characters"
            )
        json_schema = raw.get("json_schema")  # absent from an older frontend's envelope
        if json_schema is not None:
            if not isinstance(json_schema, dict):
                raise ValueError("json_schema must be an object or null")
            try:
                check_schema(json_schema)
            except ValueError as exc:
                raise ValueError(f"json_schema: {exc}") from None
        max_tokens = raw.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ValueError("max_tokens must be a positive integer")
        return cls(
            request_id=raw["request_id"],
            x_request_id=raw.get("x_request_id"),
            endpoint=raw["endpoint"],
            model=raw["model"],
            prompt=raw["prompt"],
            max_tokens=max_tokens,
            session_id=raw.get("session_id"),
            stop=tuple(stop),
            json_schema=json_schema,
        )


class ChunkEncoder:
    """:func:`chunk_line` for one request, encoding only the token per call."""

    __slots__ = ("_prefix",)

    def __init__(self, request_id: str) -> None:
        self._prefix = b'{"request_id":' + orjson.dumps(request_id) + b',"text":'

    def __call__(self, text: str) -> bytes:
        """The same bytes as ``chunk_line(request_id, text)``."""
        try:
            return self._prefix + orjson.dumps(text) + b"}\n"
        except TypeError:  # a lone surrogate the prompt carried (json_codec)
            return self._prefix + json_codec.dumps(text) + b"}\n"


def chunk_line(request_id: str, text: str) -> bytes:
    """One generated token."""
    return json_codec.dumps({"request_id": request_id, "text": text}, newline=True)


def done_line(
    request_id: str, *, finish_reason: str, tokens: int, prompt_tokens: int,
    stop_sequence: str | None = None,
) -> bytes:
    """The last line of a successful stream (``stop_sequence``: the one that ended it)."""
    done: dict[str, object] = {
        "request_id": request_id,
        "done": True,
        "finish_reason": finish_reason,
        "tokens": tokens,
        "prompt_tokens": prompt_tokens,
    }
    if stop_sequence is not None:
        done["stop_sequence"] = stop_sequence
    return json_codec.dumps(done, newline=True)


def error_line(request_id: str, message: str) -> bytes:
    """The last line of a stream the worker could not finish."""
    return json_codec.dumps({"request_id": request_id, "error": message}, newline=True)
