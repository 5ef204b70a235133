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
    "key", "sk", "session", "sessionid", "sid", "phpsessid", "jsessionid", "awsaccesskeyid",
    "otp", "totp", "pin", "code",
})
# A word that makes any name a credential's (`password_confirmation`, `user[password]`,
# `webhook_secret`, `jwtToken`); and any word holding `apikey` (`XAPIKEY`).
_ANY_WORD = frozenset({
    "password", "passwd", "passphrase", "passcode", "secret", "secrets", "jwt", "bearer",
    "hmac", "authorization",
})
_LAST_WORD = frozenset({
    "signature", "sig", "credential", "credentials", "pwd", "pass", "auth", "cookie",
    "cookies", "assertion", "verifier",
})
# A token that names no credential, by the word before it (`page_token`) or the start of
# its one word: a position in a list, or a model's token.
_TOKEN_NOT_CREDENTIAL = frozenset({
    "page", "next", "continuation", "stop", "start", "end", "pad", "bos", "eos", "sep",
    "mask", "unk", "sync", "cursor", "pagination", "resumption", "max", "min", "first",
    "last", "num",
})
# A key that opens something, by the word before it (`signing_key`) or the start of its
# one word (`secretkey`): not `sort_key`, `cache_key`, `monkey`.
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
    while words and words[-1].isdigit():  # `api-key[0]`: an index names no other thing
        words.pop()
    if not words:
        return False
    if ("".join(words) in _WHOLE or words[-1] in _LAST_WORD
            or any(w in _ANY_WORD or w.startswith("passw") or "apikey" in w for w in words)):
        return True
    last, before = words[-1], words[-2] if len(words) > 1 else ""
    for suffix, kinds, named in (("token", _TOKEN_NOT_CREDENTIAL, False),
                                 ("key", _KEY_KINDS, True)):
        if last.endswith(suffix):
            kind = before if last == suffix else last[:-len(suffix)]
            return (kind in kinds) is named
    return False


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
