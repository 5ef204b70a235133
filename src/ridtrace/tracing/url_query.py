"""A request's query string as its server span's ``url.query``: the HTTP semantic
conventions require it of a server span that received one, with credentials redacted."""

from __future__ import annotations

import re
from urllib.parse import unquote

from ridtrace.tracing.identity import shown_text

__all__ = ["MAX_SHOWN_QUERY", "shown_query"]

# The client's text, capped as the path is.
MAX_SHOWN_QUERY = 1024

# Values replaced by REDACTED: the keys the conventions name (presigned URLs), those
# FastAPI's own telemetry adds, and the names API keys and tokens travel under in a query
# string (ridtrace's frontend takes its keys from headers only, but a client that sends
# one in the URL should not find it in every trace backend it is exported to). A name is
# read as its words (split at `-`, `_`, `.` and a camelCase step, lower-cased): by its
# words and not its letters, so that `max_tokens`, `tokenizer` and `page_token`, what a
# trace of an inference call is read for, stay as sent.
_WHOLE = frozenset({
    "key", "token", "sig", "auth", "pwd", "pass", "jwt", "sk", "session", "sessionid",
    "apikey", "awsaccesskeyid",
})
_LAST_WORD = frozenset({
    "password", "passwd", "pwd", "passphrase", "secret", "apikey", "jwt", "bearer", "hmac",
    "signature", "sig", "credential", "credentials", "authorization", "auth",
})
_LAST_TWO_WORDS = frozenset({
    "api_key", "access_key", "auth_key", "secret_key", "private_key", "subscription_key",
    "account_key", "client_key", "master_key", "access_token", "auth_token", "id_token",
    "refresh_token", "session_token", "security_token", "bearer_token", "api_token",
    "session_id",
})
_CAMEL_STEP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_BREAK = re.compile(r"[-_.\s]+")


def _sensitive(key: str) -> bool:
    name = _CAMEL_STEP.sub("_", unquote(key.replace("+", " ")))
    words = [word for word in _WORD_BREAK.split(name.lower()) if word]
    if not words:
        return False
    return ("".join(words) in _WHOLE or words[-1] in _LAST_WORD
            or "_".join(words[-2:]) in _LAST_TWO_WORDS)


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
