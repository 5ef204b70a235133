"""ridtrace.frontend_plugin: an inference frontend that cannot cross streams.

An in-flight registry keyed by the server-minted ``request_id`` that refuses duplicates
(:class:`DuplicateRequestId`) and frees every entry however its caller ends; six
inference routes (OpenAI chat/completions/responses, Anthropic messages, native and
SGLang-style generate) as a mountable router; dispatch to workers with Conflict-aware
retry; the worker app; and a deterministic echo engine. See docs/frontend-plugin.md.
"""

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
