"""``grpc.aio`` server interceptor: the HTTP middleware's identity rules for gRPC calls.

The interceptor decides *when* (per call, and per request message of a bidirectional
stream); :mod:`ridtrace.tracing.grpc.call` decides *what*. See docs/grpc.md.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Literal

import grpc
import grpc.aio

from ridtrace.tracing import metrics
from ridtrace.tracing.grpc.aio_handlers import traced_coroutine, traced_generator
from ridtrace.tracing.grpc.call_config import CallConfig
from ridtrace.tracing.grpc.context import TracedServicerContext
from ridtrace.tracing.grpc.lookup import instrumentation_suppressed, traced_outside
from ridtrace.tracing.grpc.lookup_failed import lookup_failed
from ridtrace.tracing.grpc.method import (
    OTHER_METHOD,
    MethodInfo,
    RegisteredPastTheLimit,
    behavior_of,
    may_be_named,
)
from ridtrace.tracing.grpc.nonblocking import wrap_for_sync_server
from ridtrace.tracing.grpc.undecodable import tolerant_deserializer
from ridtrace.tracing.grpc.unknown import unknown_method_handler
from ridtrace.tracing.grpc.unstarted import watch_call
from ridtrace.tracing.settings import TracingSettings

__all__ = ["RequestTracingInterceptor", "TracedServicerContext"]

# Both APIs' interceptor classes: grpc.server's interceptors= is typed as the synchronous
# one (typeshed's types-grpcio), so the documented grpc.server(..., interceptors=
# [RequestTracingInterceptor()]) failed a typed user's mypy with only the aio base.
class RequestTracingInterceptor(
    grpc.aio.ServerInterceptor, grpc.ServerInterceptor  # type: ignore[misc]
):
    """Mints a ``request_id`` per gRPC call and makes it visible everywhere.

    For every call to an ``async`` handler (unary-unary, unary-stream, stream-unary,
    stream-stream): a fresh server ``request_id``; the client's validated
    ``x-request-id`` metadata kept as ``x_request_id``; deprecated id keys ignored with
    one WARN per name per process; one server span continuing the caller's W3C trace
    context (or the span opentelemetry-instrumentation-grpc opened, enriched — list
    that interceptor *before* this one); the request context current inside the
    handler, streaming generators included; ``request.start`` / ``request.end`` lines;
    the server id returned as ``x-server-request-id`` in initial and trailing metadata.

    In a bidirectional stream (KServe's ``ModelStreamInfer``) each request message is a
    request of its own: when the handler reads it, it gets its own ``request_id``, its
    own ``x_request_id`` from its body id, its own span (a child of the stream's) and
    its own ``request.start`` / ``request.end`` lines, until the handler asks for the next.

    Handlers receive a :class:`~ridtrace.tracing.grpc.TracedServicerContext`
    that delegates to gRPC's and keeps the id keys in whatever metadata they send.
    Synchronous handlers (run in a thread pool by ``grpc.aio``) are passed through
    untraced. On a synchronous ``grpc.server`` the same object traces every call
    (:mod:`ridtrace.tracing.grpc.sync`).

    Args:
        settings: the same :class:`TracingSettings` the HTTP middleware takes
            (``span_name`` aside: gRPC spans are named ``pkg.Service/Method``).
        initial_metadata: when ridtrace sends the ids as initial metadata too:
            ``"streaming"`` (default) on calls with a streaming response, sent with
            the first message, so the client can read them as the stream begins, not
            only once it ends; ``"always"`` on unary responses
            as well; ``"never"``. Trailing metadata always has them. A handler that
            sends initial metadata itself always gets them merged in. On a unary call
            ridtrace's own send is a second batch before the response, which measured
            about +0.2 ms per call (docs/performance.md) for a value the trailing
            metadata delivers in the same packet anyway.
        stream_requests: ``"bidi"`` (default): every message of a bidirectional stream
            is a request of its own (see above); ``"never"``: one identity per call.
        body_id_field: the request message field holding the client's id (KServe:
            ``id``), read for each request of a bidirectional stream.
        **overrides: individual settings fields, applied over ``settings``.
    """

    def __init__(
        self,
        *,
        settings: TracingSettings | None = None,
        initial_metadata: Literal["streaming", "always", "never"] = "streaming",
        stream_requests: Literal["bidi", "never"] = "bidi",
        body_id_field: str = "id",
        **overrides: Any,
    ) -> None:
        config = settings or TracingSettings()
        if overrides:
            config = replace(config, **overrides)
        _refuse_keys_grpc_cannot_carry(config)
        self.settings = config
        self._config = CallConfig(config, body_id_field=body_id_field)
        if stream_requests not in ("bidi", "never"):
            raise ValueError(f"stream_requests must be bidi or never: {stream_requests!r}")
        self._per_message = stream_requests == "bidi"
        metrics.adopt_global_meter_provider()
        if initial_metadata not in ("streaming", "always", "never"):
            raise ValueError(
                f"initial_metadata must be streaming, always or never: {initial_metadata!r}"
            )
        self._initial = initial_metadata
        self._wrapped: dict[
            str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler, MethodInfo]
        ] = {}
        self._registered = RegisteredPastTheLimit()

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        """Wrap the handler gRPC found for this call (``None``, an unknown method: one
        answering gRPC's own ``UNIMPLEMENTED``, wrapped the same way).

        Not ``async def``: ``grpc.aio`` awaits what this returns, while a synchronous
        ``grpc.server`` calls it and uses the result as the handler. Which server runs
        it shows in what ``continuation`` returns (an awaitable on ``grpc.aio``), so one
        interceptor object serves both; an awaitable handed to a synchronous server
        killed its serving thread and hung every call.
        """
        if traced_outside():
            # Another ridtrace interceptor before this one traces the call; two would
            # give the client one request_id and the handler's lines another.
            return continuation(handler_call_details)
        method = handler_call_details.method
        with instrumentation_suppressed():
            try:
                found = continuation(handler_call_details)
            except Exception as exc:  # an interceptor after ours: traced as gRPC answers it
                return lookup_failed(exc, method, self._wrapped, self._wrap_sync)
        if inspect.isawaitable(found):
            return self._intercept_aio(found, handler_call_details)
        return self._wrapped_for(found, method, self._wrap_sync, aio=False)[0]

    async def _intercept_aio(
        self, found: Awaitable[grpc.RpcMethodHandler | None], details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler:
        method = details.method
        # A call may end before its handler runs: while an interceptor after ours awaits
        # (a token check), or while gRPC reads its request (`unstarted`).
        awaited = watch_call(self._config, details, self._wrapped)
        with instrumentation_suppressed():
            try:
                handler = await found
            except Exception as exc:  # an interceptor after ours: traced as gRPC answers it
                return lookup_failed(exc, method, self._wrapped, self._wrap, aio=True)
        wrapped, info = self._wrapped_for(handler, method, self._wrap, aio=True)
        if awaited is not None:
            awaited.info = info
            # A plain `def` handler is passed through untraced: it never says it ran.
            awaited.running = wrapped is handler
        return wrapped

    def _wrapped_for(
        self,
        handler: grpc.RpcMethodHandler | None,
        method: str,
        wrap: Callable[[grpc.RpcMethodHandler, MethodInfo], grpc.RpcMethodHandler],
        *,
        aio: bool,
    ) -> tuple[grpc.RpcMethodHandler, MethodInfo]:
        """The handler to hand gRPC for `handler`, and the method as the call is named."""
        if handler is None:
            # gRPC's own UNIMPLEMENTED would leave no trace of the call: answer the same
            # through a handler of ours, traced like any other. Not cached: a scanner's
            # invented names must not fill the cache the real methods use.
            info = MethodInfo(method, known=False)
            return wrap(unknown_method_handler(aio=aio), info), info
        cached = self._wrapped.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1], cached[2]
        named = (cached is not None or may_be_named(method, len(self._wrapped))
                 or self._registered.registered(method, handler))
        if not named:
            # Served, but its name stays on the lines only (capped, escaped): a
            # generic handler answered a name the client chose (see method.NAMED_LIMIT).
            info = MethodInfo(method, known=False, route=OTHER_METHOD)
            return wrap(handler, info), info
        info = MethodInfo(method)
        wrapped = wrap(handler, info)
        self._wrapped[method] = (handler, wrapped, info)
        return wrapped, info

    def _wrap_sync(
        self, handler: grpc.RpcMethodHandler, info: MethodInfo
    ) -> grpc.RpcMethodHandler:
        return wrap_for_sync_server(
            handler, info, self._config, initial=self._initial, per_message=self._per_message
        )

    def _wrap(self, handler: grpc.RpcMethodHandler, info: MethodInfo) -> grpc.RpcMethodHandler:
        behavior, factory = behavior_of(handler)
        # grpc.aio picks how to drive a handler from its shape (coroutine function,
        # async generator function, plain function), so the wrapper keeps the shape:
        # that also keeps it composable with other interceptors that rely on it.
        per_message = (
            self._per_message and handler.request_streaming and handler.response_streaming
        )
        if inspect.isasyncgenfunction(behavior):
            new = traced_generator(
                behavior, info, self._config,
                send_initial=self._initial != "never",
                request_streaming=handler.request_streaming,
                per_message=per_message,
                serializer=handler.response_serializer,
            )
        elif inspect.iscoroutinefunction(behavior):
            new = traced_coroutine(
                behavior, info, self._config, initial=self._initial,
                request_streaming=handler.request_streaming,
                response_streaming=handler.response_streaming,
                per_message=per_message,
                serializer=handler.response_serializer,
            )
        else:
            return handler
        return factory(
            new,
            request_deserializer=tolerant_deserializer(handler),
            response_serializer=handler.response_serializer,
        )


# gRPC's metadata keys (its HTTP/2 protocol spec: 0-9 a-z _ - .), a narrower alphabet
# than HTTP's field names, which the settings hold the names to.
_GRPC_KEY = re.compile(r"[0-9a-z_.\-]+")


def _refuse_keys_grpc_cannot_carry(settings: TracingSettings) -> None:
    """The id keys must be gRPC keys: under ``x-id~1`` every call failed ``INTERNAL``
    ("Illegal header key") and was recorded OK. (``grpc-*`` and ``*-bin`` names are
    refused by the settings themselves, for both transports.)"""
    for setting, name in (("client_id_header", settings.client_id_header),
                          ("response_id_header", settings.response_id_header)):
        if not _GRPC_KEY.fullmatch(name.lower()):
            raise ValueError(
                f"{setting} {name!r} is a key gRPC metadata cannot carry: a gRPC key holds "
                "only letters, digits, '-', '_' and '.'")
