"""A gRPC method as the interceptor names it, and the handler shapes it wraps."""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import grpc

from ridtrace.tracing import metrics
from ridtrace.tracing.identity import shown_text

__all__ = [
    "MAX_SHOWN_METHOD",
    "OTHER_METHOD",
    "MethodInfo",
    "RegisteredPastTheLimit",
    "behavior_of",
    "may_be_named",
]


# A method the server does not have is the client's string: capped and escaped before
# a log line or span attribute carries it (as the HTTP middleware does with a path).
MAX_SHOWN_METHOD = 1024
# OpenTelemetry's rpc conventions: ``rpc.method`` of a method the server does not know.
OTHER_METHOD = "_OTHER"
# Handlers are looked up per call; wrapping is cached per method, and a method gets
# its own route (metric series) and span name only while fewer than this many have
# one. It only matters for a generic handler that serves any method (a proxy): the
# method is then the client's string, and a scanner inventing names must grow neither
# memory, nor the metric's series, nor Jaeger's operations without bound.
NAMED_LIMIT = 1024
# The names an IDL gives a method (``/pkg.Service/Method``), with room to spare; a
# method not so named is served, under the fixed name ``_OTHER``.
_NAMEABLE = re.compile(r"/[\w.$-]{1,200}/[\w.$-]{1,200}", re.ASCII)


class RegisteredPastTheLimit:
    """Tells, past `NAMED_LIMIT`, a method the server registered from one a catch-all
    answered under a name the client invented.

    Invented names filled the limit first, and every method of the server's own first
    called after them (a rare one, or all of them after a restart under a scan) was
    counted and traced as ``_OTHER`` until the next restart. A registered method's
    handler is one object kept for it alone (``method_handlers_generic_handler``'s,
    ``add_registered_method_handlers``'), returned call after call; a catch-all's is
    made per call or shared by every name. So a method whose handler is the same
    object as at its last call, held by no other method, is named from its second
    call on: registered methods are finite, the names a scanner invents are not. The
    last handler of at most `NAMED_LIMIT` methods is kept (strongly, so an object's id
    is never reused while it is counted).
    """

    def __init__(self) -> None:
        self._last: OrderedDict[str, grpc.RpcMethodHandler] = OrderedDict()
        self._methods_of: dict[int, int] = {}  # id(handler) → methods it last served
        self._lock = threading.Lock()  # a synchronous server's calls run on threads

    def registered(self, method: str, handler: grpc.RpcMethodHandler) -> bool:
        """Whether `handler` served `method` at its last call too, and no other method."""
        if _NAMEABLE.fullmatch(method) is None:
            return False
        with self._lock:
            last = self._last.pop(method, None)
            if last is not None:
                alone = self._methods_of[id(last)] == 1
                self._forget(last)
                if last is handler and alone:
                    return True
            self._last[method] = handler
            self._methods_of[id(handler)] = self._methods_of.get(id(handler), 0) + 1
            if len(self._last) > NAMED_LIMIT:
                self._forget(self._last.popitem(last=False)[1])
            return False

    def _forget(self, handler: grpc.RpcMethodHandler) -> None:
        left = self._methods_of.pop(id(handler)) - 1
        if left:
            self._methods_of[id(handler)] = left


def may_be_named(method: str, named_so_far: int) -> bool:
    """Whether `method` gets a route and span name of its own, `named_so_far` methods
    having one already (see `NAMED_LIMIT`)."""
    return named_so_far < NAMED_LIMIT and _NAMEABLE.fullmatch(method) is not None


class MethodInfo:
    """Names derived once per full method (``/pkg.Service/Method``)."""

    __slots__ = ("full", "known", "method", "route", "service", "span_name")

    def __init__(self, full: str, *, known: bool = True, route: str | None = None) -> None:
        """``known=False``: a method the server does not have (``route`` ``unmatched``),
        or one a generic handler served under a name the client chose (``route``
        ``_OTHER``): named on the lines only, capped and escaped."""
        self.known = known
        if known:
            self.full = full
            service, _, method = full.lstrip("/").rpartition("/")
            self.service = service
            self.method = method
            # OpenTelemetry's rpc conventions: span name "pkg.Service/Method".
            self.span_name = full.lstrip("/")
            self.route = full
        else:
            # The client's string stays on the lines (rpc_method, path) and in
            # rpc.method_original; span name, rpc.method and the metric's route are
            # fixed, so a scanner cannot grow Jaeger's operations or the series.
            self.full = shown_text(full, MAX_SHOWN_METHOD)
            self.service = ""
            self.method = OTHER_METHOD
            self.span_name = OTHER_METHOD
            self.route = route or metrics.UNMATCHED_ROUTE

    def span_attributes(self) -> dict[str, str]:
        """The span's rpc attributes, set when it is created (samplers see them)."""
        if not self.known:
            return {
                "rpc.system": "grpc",
                "rpc.method": self.method,
                "rpc.method_original": self.full,
            }
        return {"rpc.system": "grpc", "rpc.service": self.service, "rpc.method": self.method}


def behavior_of(
    handler: grpc.RpcMethodHandler,
) -> tuple[Callable[..., Any], Callable[..., grpc.RpcMethodHandler]]:
    """A handler's behaviour (the servicer's function for its shape: unary or streaming
    each way) and the factory that builds a handler of that shape around another."""
    if handler.request_streaming and handler.response_streaming:
        return handler.stream_stream, grpc.stream_stream_rpc_method_handler
    if handler.request_streaming:
        return handler.stream_unary, grpc.stream_unary_rpc_method_handler
    if handler.response_streaming:
        return handler.unary_stream, grpc.unary_stream_rpc_method_handler
    return handler.unary_unary, grpc.unary_unary_rpc_method_handler
