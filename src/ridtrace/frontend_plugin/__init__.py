"""ridtrace.frontend_plugin: an inference frontend that cannot cross streams.

An in-flight registry keyed by the server-minted ``request_id`` that refuses duplicates
(:class:`DuplicateRequestId`) and frees every entry however its caller ends; six
inference routes (OpenAI chat/completions/responses, Anthropic messages, native and
SGLang-style generate) as a mountable router; dispatch to workers with Conflict-aware
retry; the worker app; and a deterministic echo engine. See docs/frontend-plugin.md.

Each name is imported when first asked for: a worker (``create_worker_app``) runs
without FastAPI, which the frontend's names bring in, and a worker process then starts
in well over a third less CPU time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ridtrace.lazy_names import lazy_names

if TYPE_CHECKING:
    from ridtrace.fingerprint import fingerprint
    from ridtrace.frontend_plugin.app import AnthropicRequestId, create_frontend_app
    from ridtrace.frontend_plugin.auth import SharedSecretMiddleware
    from ridtrace.frontend_plugin.dispatch import Dispatcher, DispatchError, WorkerPool
    from ridtrace.frontend_plugin.engine import EchoEngine, echo_tokens
    from ridtrace.frontend_plugin.frontend import Frontend, InferenceCall
    from ridtrace.frontend_plugin.registry import (
        DROPPED,
        DuplicateRequestId,
        IdPolicy,
        InflightRegistry,
    )
    from ridtrace.frontend_plugin.routes import create_router
    from ridtrace.frontend_plugin.settings import FrontendSettings, WorkerSettings
    from ridtrace.frontend_plugin.wire import WorkRequest
    from ridtrace.frontend_plugin.worker import create_worker_app

# Where each public name lives.
_HOMES = {
    "fingerprint": "ridtrace.fingerprint",
    "AnthropicRequestId": "ridtrace.frontend_plugin.app",
    "create_frontend_app": "ridtrace.frontend_plugin.app",
    "SharedSecretMiddleware": "ridtrace.frontend_plugin.auth",
    "Dispatcher": "ridtrace.frontend_plugin.dispatch",
    "DispatchError": "ridtrace.frontend_plugin.dispatch",
    "WorkerPool": "ridtrace.frontend_plugin.dispatch",
    "EchoEngine": "ridtrace.frontend_plugin.engine",
    "echo_tokens": "ridtrace.frontend_plugin.engine",
    "Frontend": "ridtrace.frontend_plugin.frontend",
    "InferenceCall": "ridtrace.frontend_plugin.frontend",
    "DROPPED": "ridtrace.frontend_plugin.registry",
    "DuplicateRequestId": "ridtrace.frontend_plugin.registry",
    "IdPolicy": "ridtrace.frontend_plugin.registry",
    "InflightRegistry": "ridtrace.frontend_plugin.registry",
    "create_router": "ridtrace.frontend_plugin.routes",
    "FrontendSettings": "ridtrace.frontend_plugin.settings",
    "WorkerSettings": "ridtrace.frontend_plugin.settings",
    "WorkRequest": "ridtrace.frontend_plugin.wire",
    "create_worker_app": "ridtrace.frontend_plugin.worker",
}

__all__ = [
    "DROPPED",
    "AnthropicRequestId",
    "DispatchError",
    "Dispatcher",
    "DuplicateRequestId",
    "EchoEngine",
    "Frontend",
    "FrontendSettings",
    "IdPolicy",
    "InferenceCall",
    "InflightRegistry",
    "SharedSecretMiddleware",
    "WorkRequest",
    "WorkerPool",
    "WorkerSettings",
    "create_frontend_app",
    "create_router",
    "create_worker_app",
    "echo_tokens",
    "fingerprint",
]


# Hidden from type checkers: a module `__getattr__` makes every name, a misspelt one
# too, type as Any; they read the real names from the TYPE_CHECKING imports above.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(globals(), _HOMES)
