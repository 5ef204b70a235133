"""Settings of the frontend and the worker: frozen dataclasses, environment only in from_env()."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ridtrace.frontend_plugin.auth import check_secret, secrets_given
from ridtrace.frontend_plugin.env_values import (
    built_from,
    comma_list,
    flag,
    optional_int,
    read_prefixed,
    refuse_unknown,
    require_numbers,
)
from ridtrace.frontend_plugin.redaction import checked_worker_url, redacted_url
from ridtrace.frontend_plugin.registry import IdPolicy
from ridtrace.tracing.settings import collection_given

__all__ = ["FrontendSettings", "WorkerSettings"]


def _policy(value: str) -> IdPolicy:
    if value == "safe":
        return "safe"
    if value == "legacy":
        return "legacy"
    raise ValueError(f"id policy must be 'safe' or 'legacy', not {value!r}")


def _secrets(environ: Mapping[str, str] | None) -> dict[str, Any]:
    """The shared secrets, from their own unprefixed variables (one name for both sides)."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    if env.get("RIDTRACE_WORKER_TOKEN"):
        out["worker_token"] = env["RIDTRACE_WORKER_TOKEN"]
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontendSettings:
    """How the frontend validates, registers and dispatches inference requests.

    Attributes:
        workers: base URLs of the workers, used round-robin.
        id_policy: ``safe`` (default) or ``legacy`` (pre-fix behaviour; unsafe, see
            docs/frontend-plugin.md).
        model: the model name listed by ``/v1/models`` and used when a body names none.
        max_body_bytes: request bodies larger than this get HTTP 413.
        max_tokens_limit: largest accepted ``max_tokens``; larger values get HTTP 400.
        default_max_tokens: used when a body sets no limit (Anthropic requires one).
        connect_timeout: seconds to connect to a worker before trying another.
        first_byte_timeout: seconds to wait for a worker's response headers and for its
            first chunk.
        chunk_timeout: longest silence between two chunks of a running stream.
        total_timeout: longest a caller waits for its whole answer.
        body_timeout: longest the frontend waits for a request body to arrive in full;
            a slower one gets HTTP 408 and the connection is closed.
        max_attempts: dispatch attempts per request (Conflicts and failed workers),
            each on a different worker: never more than the workers configured. A
            worker whose host refused the connection (nothing sent) costs none.
        down_cooldown: seconds a failed worker is skipped while others are healthy.
        debug_endpoints: serve ``GET /debug/inflight`` and FastAPI's ``/docs``,
            ``/redoc`` and ``/openapi.json`` (off by default: they show the worker
            topology, lifetime counters and the API to anyone who can reach the port).
        max_connections: connection pool size towards the workers.
        api_keys: when non-empty, every route but ``/health`` (and ``/metrics`` unless
            ``metrics_require_key``) needs one of these keys, as ``Authorization:
            Bearer KEY`` or ``x-api-key: KEY``; a missing or wrong key gets 401.
        metrics_require_key: ``/metrics`` needs a key too (when ``api_keys`` is set).
        worker_token: shared secret sent to the workers as ``Authorization: Bearer``;
            must match the workers' ``worker_token``.
    """

    workers: tuple[str, ...] = ()
    id_policy: IdPolicy = "safe"
    model: str = "echo"
    max_body_bytes: int = 1 << 20
    max_tokens_limit: int = 8192
    default_max_tokens: int = 256
    connect_timeout: float = 2.0
    first_byte_timeout: float = 30.0
    chunk_timeout: float = 30.0
    total_timeout: float = 300.0
    body_timeout: float = 30.0
    max_attempts: int = 3
    down_cooldown: float = 5.0
    debug_endpoints: bool = False
    max_connections: int = 1024
    # repr=False: settings get printed and logged; secrets must not go with them.
    api_keys: tuple[str, ...] = field(default=(), repr=False)
    metrics_require_key: bool = False
    worker_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # One URL for the tuple was taken character by character ('h' is no worker URL).
        object.__setattr__(self, "workers", collection_given(self.workers, "workers"))
        # An empty secret would look configured and leave the door open.
        for key in secrets_given(self.api_keys, "api_keys"):
            check_secret(key, "an API key")
        if self.worker_token is not None:
            check_secret(self.worker_token, "the worker token")
        require_numbers(self, positive=(
            "max_body_bytes", "max_tokens_limit", "default_max_tokens", "connect_timeout",
            "first_byte_timeout", "chunk_timeout", "total_timeout", "body_timeout",
            "max_attempts",
            "max_connections",
        ), non_negative=("down_cooldown",))
        seen: dict[tuple[str, str, int, str], str] = {}
        for url in self.workers:
            parts = checked_worker_url(url)  # a bad URL fails here, not as every request's 500
            # One worker listed twice (``http://w:8101`` and ``http://w:8101/``) would
            # be retried after refusing an id it already holds, and refuse it again.
            place = (parts.scheme, parts.hostname or "",
                     parts.port or (443 if parts.scheme == "https" else 80),
                     parts.path.rstrip("/"))
            if place in seen:
                raise ValueError(f"worker {redacted_url(url)!r} is listed twice "
                                 f"(also as {redacted_url(seen[place])!r})")
            seen[place] = url
        if self.default_max_tokens > self.max_tokens_limit:
            raise ValueError(
                f"default_max_tokens ({self.default_max_tokens}) exceeds max_tokens_limit "
                f"({self.max_tokens_limit})"
            )

    def __repr__(self) -> str:
        # The generated repr, but a worker URL's password goes the way of the keys: the
        # settings get printed and logged (and shown by a failing test's assertion).
        shown = (
            (f.name, tuple(map(redacted_url, self.workers)) if f.name == "workers"
             else getattr(self, f.name))
            for f in fields(self) if f.repr
        )
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown)})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> FrontendSettings:
        """Build settings from ``RIDTRACE_FRONTEND_*`` variables (unset ones keep defaults).

        ``..._WORKERS`` is a comma list of URLs; ``..._ID_POLICY`` is ``safe``/``legacy``;
        the others are named after the attributes (``RIDTRACE_FRONTEND_TOTAL_TIMEOUT``).
        The secrets have their own names: ``RIDTRACE_API_KEYS`` (comma list) and
        ``RIDTRACE_WORKER_TOKEN`` (shared with ``WorkerSettings.from_env``). A non-empty
        ``RIDTRACE_FRONTEND_*`` variable that names no field raises ValueError, and so does
        a ``RIDTRACE_API_*`` one other than ``RIDTRACE_API_KEYS`` (``RIDTRACE_API_KEY``).
        """
        fields: dict[str, Callable[[str], Any]] = {
            "workers": comma_list,
            "id_policy": _policy,
            "model": str,
            "max_body_bytes": int,
            "max_tokens_limit": int,
            "default_max_tokens": int,
            "connect_timeout": float,
            "first_byte_timeout": float,
            "chunk_timeout": float,
            "total_timeout": float,
            "body_timeout": float,
            "max_attempts": int,
            "down_cooldown": float,
            "debug_endpoints": flag,
            "max_connections": int,
            "metrics_require_key": flag,
        }
        refuse_unknown(environ, "RIDTRACE_FRONTEND_", fields, elsewhere={
            "API_KEYS": "RIDTRACE_API_KEYS", "WORKER_TOKEN": "RIDTRACE_WORKER_TOKEN"})
        # ``RIDTRACE_API_KEY=sk-…`` (singular, as ``OPENAI_API_KEY`` is) was ignored: a
        # frontend its operator meant to lock served every route without a key.
        refuse_unknown(environ, "RIDTRACE_API_", ("keys",),
                       elsewhere={"KEY": "RIDTRACE_API_KEYS"})
        values = read_prefixed(environ, "RIDTRACE_FRONTEND_", fields) | _secrets(environ)
        keys = read_prefixed(environ, "RIDTRACE_", {"api_keys": comma_list})
        if "api_keys" in keys and not keys["api_keys"]:
            # " " or ",": meant to require keys, would have served everyone without one.
            raise ValueError("RIDTRACE_API_KEYS is set but holds no key (a comma list)")
        return built_from(cls, "RIDTRACE_FRONTEND_", values | keys)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSettings:
    """How a worker runs the echo engine, plus fault-injection knobs for tests.

    Attributes:
        id_policy: ``safe`` refuses a ``request_id`` already in flight with HTTP 409;
            ``legacy`` accepts duplicates (pre-fix).
        model: the model name the worker reports.
        token_delay: seconds between two tokens.
        first_token_delay: seconds before the first token.
        gate: hold every request before its first token until ``POST /debug/gate/open``
            (or ``gate_timeout``) — lets tests make overlap certain instead of likely.
        gate_timeout: longest a request waits at a closed gate.
        hang_after_tokens: test fault: stop producing (but keep the stream open) after
            this many tokens.
        foreign_chunk_after: test fault: label the chunk after this many tokens with
            another request's id, as a worker with crossed wires would.
        max_body_bytes: largest accepted work envelope.
        body_timeout: longest the worker waits for a work envelope to arrive in full;
            a slower one gets HTTP 408 and the connection is closed.
        max_tokens_limit: largest accepted ``max_tokens``.
        debug_endpoints: serve ``GET /debug/inflight`` (off by default).
        worker_token: when set, every route but ``/health`` (and ``/metrics``) needs
            ``Authorization: Bearer <worker_token>``; others get 401.
        baggage_attributes: W3C baggage entries copied onto the worker's span as
            ``baggage.<name>`` attributes (only these names; values vetted like client
            ids), so what a caller put in baggage can be seen on the worker.
    """

    id_policy: IdPolicy = "safe"
    model: str = "echo"
    token_delay: float = 0.0
    first_token_delay: float = 0.0
    gate: bool = False
    gate_timeout: float = 60.0
    hang_after_tokens: int | None = None
    foreign_chunk_after: int | None = None
    max_body_bytes: int = 4 << 20
    body_timeout: float = 30.0
    max_tokens_limit: int = 1 << 16
    debug_endpoints: bool = False
    worker_token: str | None = field(default=None, repr=False)
    baggage_attributes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # ("tenant") without its comma: each character was looked for as a baggage key.
        object.__setattr__(self, "baggage_attributes",
                           collection_given(self.baggage_attributes, "baggage_attributes"))
        if self.worker_token is not None:
            check_secret(self.worker_token, "the worker token")
        require_numbers(
            self, positive=("gate_timeout", "max_body_bytes", "body_timeout",
                            "max_tokens_limit"),
            non_negative=("token_delay", "first_token_delay", "hang_after_tokens",
                          "foreign_chunk_after"),
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WorkerSettings:
        """Build settings from ``RIDTRACE_WORKER_*`` variables (unset ones keep defaults).

        ``RIDTRACE_WORKER_TOKEN`` is the shared token (the frontend reads the same name);
        ``RIDTRACE_WORKER_BAGGAGE_ATTRIBUTES`` is a comma list. A non-empty
        ``RIDTRACE_WORKER_*`` variable that names no field (nor the token) raises ValueError.
        """
        fields: dict[str, Callable[[str], Any]] = {
            "id_policy": _policy,
            "model": str,
            "token_delay": float,
            "first_token_delay": float,
            "gate": flag,
            "gate_timeout": float,
            "hang_after_tokens": optional_int,
            "foreign_chunk_after": optional_int,
            "max_body_bytes": int,
            "body_timeout": float,
            "max_tokens_limit": int,
            "debug_endpoints": flag,
            "baggage_attributes": comma_list,
        }
        # RIDTRACE_WORKER_TOKEN, the secret both sides read, shares the prefix.
        refuse_unknown(environ, "RIDTRACE_WORKER_", [*fields, "token"])
        values = read_prefixed(environ, "RIDTRACE_WORKER_", fields) | _secrets(environ)
        return built_from(cls, "RIDTRACE_WORKER_", values)
