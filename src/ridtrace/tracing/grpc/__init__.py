"""Request identity for ``grpc.aio`` services: the HTTP middleware's rules for gRPC calls.

Install with the ``grpc`` extra (``pip install 'ridtrace[grpc]'``)::

    from ridtrace.tracing.grpc import RequestTracingInterceptor

    server = grpc.aio.server(interceptors=[RequestTracingInterceptor()])

Only this package imports ``grpc``: importing ``ridtrace`` or ``ridtrace.tracing``
stays free of it. See docs/grpc.md.
"""

from __future__ import annotations

try:
    import grpc  # noqa: F401  # fail here, with the hint, rather than deep inside
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "ridtrace.tracing.grpc needs the grpc extra: pip install 'ridtrace[grpc]'"
    ) from exc

from ridtrace.tracing.grpc.context import TracedServicerContext
from ridtrace.tracing.grpc.echo import copy_client_id, correlate_client_id, echo_client_id
from ridtrace.tracing.grpc.interceptor import RequestTracingInterceptor
from ridtrace.tracing.grpc.server import serve_until_signalled

__all__ = [
    "RequestTracingInterceptor",
    "TracedServicerContext",
    "copy_client_id",
    "correlate_client_id",
    "echo_client_id",
    "serve_until_signalled",
]
