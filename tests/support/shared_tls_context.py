"""One default TLS context for every httpx client the suite's own process makes.

httpx builds a client's SSL context when the client is made, loading the whole CA
bundle (``SSL_CERT_FILE`` or certifi's) each time: ~50 ms of CPU on a quiet machine
for every ``httpx.get``, every SDK client of a fixture, every poll of a wait loop made
with ``httpx.get`` — the suite makes thousands, nearly all to plain-http loopback
servers that never use the context. A context with the default settings is built once
per bundle and shared (an `ssl.SSLContext` is safe to share; httpx changes it only when
given ``cert=``, which is left as httpx does it). Only the test processes are affected:
the servers and commands under test build their clients as users' do.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

import httpx._transports.default as httpx_transports

_create = httpx_transports.create_ssl_context


@functools.lru_cache(maxsize=8)
def _default_context(trust_env: bool, cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return _create(verify=True, cert=None, trust_env=trust_env)


def _create_ssl_context(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and not cert:
        return _default_context(trust_env, os.environ.get("SSL_CERT_FILE"),
                                os.environ.get("SSL_CERT_DIR"))
    return _create(verify=verify, cert=cert, trust_env=trust_env)


def share_default_tls_context() -> None:
    httpx_transports.create_ssl_context = _create_ssl_context  # type: ignore[assignment]
