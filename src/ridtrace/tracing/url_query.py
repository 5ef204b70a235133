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
# one in the URL should not find it in every trace backend it is exported to).
_SENSITIVE_KEYS = frozenset(key.lower() for key in (
    "AWSAccessKeyId", "Signature", "sig", "X-Goog-Signature", "X-Amz-Signature",
    "X-Amz-Credential", "X-Amz-Security-Token",
    "key", "api_key", "api-key", "apikey", "access_token", "token",
))


def shown_query(raw: bytes) -> str:
    """``raw`` (the ASGI ``query_string``) as sent, still percent-encoded, each sensitive
    key's value replaced by ``REDACTED``; capped and escaped as the path is."""
    text = raw.decode("latin-1")
    parts = text.split("&")
    for index, part in enumerate(parts):
        key, sep, _ = part.partition("=")
        if sep and unquote(key.replace("+", " ")).lower() in _SENSITIVE_KEYS:
            parts[index] = f"{key}=REDACTED"
    return shown_text("&".join(parts), MAX_SHOWN_QUERY)
