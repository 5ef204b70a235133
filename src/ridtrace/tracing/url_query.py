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
# read as its words (split at `-`, `_`, `.`, brackets and camelCase steps, lower-cased):
# by its words and not its letters, so that `max_tokens`, `tokenizer` and `page_token`,
# what a trace of an inference call is read for, stay as sent. Where a name could be
# either, it is hidden: a value shown is in every trace backend for good.
_WHOLE = frozenset({
    "key", "auth", "pwd", "pass", "sk", "session", "sessionid", "apikey", "awsaccesskeyid",
    "cookie", "otp",
})
# A word that makes any name a credential's (`password_confirmation`, `user[password]`,
# `webhook_secret`, `jwtToken`).
_ANY_WORD = frozenset({
    "password", "passwd", "passphrase", "secret", "secrets", "jwt", "bearer", "hmac",
    "apikey", "authorization",
})
_LAST_WORD = frozenset({"token", "signature", "sig", "credential"})
# A last word `token` that names no credential: a position in a list, or a model's token.
_TOKEN_NOT_CREDENTIAL = frozenset({
    "page", "next", "continuation", "stop", "start", "end", "pad", "bos", "eos", "sep",
    "mask", "unk", "sync", "cursor",
})
# A last word `key` after one of these: a key that opens something (`signing_key`).
_KEY_KINDS = frozenset({
    "api", "access", "auth", "secret", "private", "subscription", "account", "client",
    "master", "signing", "shared", "encryption", "session", "sas", "storage", "consumer",
    "app", "license", "functions", "service", "admin", "write", "read", "ingest", "webhook",
})
_CAMEL_STEPS = (re.compile(r"(?<=[a-z0-9])(?=[A-Z])"), re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])"))
_WORD_BREAK = re.compile(r"[-_.\[\]\s]+")


def _sensitive(key: str) -> bool:
    name = unquote(key.replace("+", " "))
    for step in _CAMEL_STEPS:
        name = step.sub("_", name)
    words = [word for word in _WORD_BREAK.split(name.lower()) if word]
    if not words:
        return False
    last, before = words[-1], words[-2] if len(words) > 1 else ""
    return ("".join(words) in _WHOLE
            or any(word in _ANY_WORD or word.startswith("passw") for word in words)
            or (last in _LAST_WORD and not (last == "token" and before in _TOKEN_NOT_CREDENTIAL))
            or (last == "key" and before in _KEY_KINDS))


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
