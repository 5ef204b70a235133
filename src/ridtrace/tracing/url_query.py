"""A request's query string as its server span's ``url.query``: the HTTP semantic
conventions require it of a server span that received one, with credentials redacted."""

from __future__ import annotations

from urllib.parse import unquote

from ridtrace.tracing.identity import shown_text

__all__ = ["MAX_SHOWN_QUERY", "shown_query"]

# The client's text, capped as the path is.
MAX_SHOWN_QUERY = 1024

# Values replaced by REDACTED: the keys the conventions name (presigned URLs), those
# FastAPI's own telemetry adds, and the names API keys and tokens travel under in a query
# string (ridtrace's frontend takes its keys from headers only, but a client that sends
# one in the URL should not find it in every trace backend it is exported to). Keys are
# compared lower-cased, with `-` read as `_`.
_SENSITIVE_KEYS = frozenset(key.lower().replace("-", "_") for key in (
    "AWSAccessKeyId", "Signature", "sig", "X-Goog-Signature", "X-Amz-Signature",
    "X-Amz-Credential", "X-Amz-Security-Token",
    "key", "auth", "pwd",
))
# And every key with one of these in its name: the header names ridtrace's own keys
# travel under (`x-api-key`, `authorization`), `openai_api_key`, `client_secret`,
# `access-token`, `password`. Exact names alone let those through.
_SENSITIVE_PARTS = ("api_key", "apikey", "token", "secret", "password", "passwd",
                    "authorization", "credential", "signature", "private_key")


def _sensitive(key: str) -> bool:
    name = unquote(key.replace("+", " ")).lower().replace("-", "_")
    return name in _SENSITIVE_KEYS or any(part in name for part in _SENSITIVE_PARTS)


def shown_query(raw: bytes) -> str:
    """``raw`` (the ASGI ``query_string``) as sent, still percent-encoded, each sensitive
    key's value replaced by ``REDACTED``; capped and escaped as the path is."""
    text = raw.decode("latin-1")
    parts = text.split("&")
    for index, part in enumerate(parts):
        key, sep, _ = part.partition("=")
        if sep and _sensitive(key):
            parts[index] = f"{key}=REDACTED"
    return shown_text("&".join(parts), MAX_SHOWN_QUERY)
