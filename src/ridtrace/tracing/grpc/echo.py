"""KServe-style id echo: the client's proto ``id`` comes back in every response.

KServe's inference protocol carries a request ``id`` in the message body and promises
it back in the response (and in each streamed response). That id is the client's: it
is copied verbatim, as the protocol requires, and used nowhere else unchecked: never as
the server's ``request_id`` (the interceptor's), and as the correlation id
(``x_request_id``) only when it passes the same check as a header (like the body
``request_id`` of ``/inference/v1/generate``). A hostile one is flagged
(``x_request_id_rejected``) and counted, as a hostile header is.

``ModelStreamInferResponse`` keeps the id one level down, in ``infer_response``; the
helpers find it there.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from opentelemetry import trace

from ridtrace.tracing.context import current_context
from ridtrace.tracing.identity import DEFAULT_MAX_CLIENT_ID_LENGTH, adopted_client_id

__all__ = ["copy_client_id", "correlate_client_id", "echo_client_id"]

F = TypeVar("F", bound=Callable[..., Any])

# Where KServe's stream response (ModelStreamInferResponse) keeps the inference response.
_NESTED_RESPONSE = "infer_response"


def copy_client_id(
    request: Any,
    response: Any,
    *,
    field: str = "id",
    request_id_parameter: str | None = None,
) -> Any:
    """Set the response's id to ``request.<field>`` and return ``response``.

    On a ``ModelStreamInferResponse`` the id goes into ``response.infer_response``.
    With ``request_id_parameter`` (opt-in), the server ``request_id`` also goes into the
    response's KServe ``parameters`` map under that key, as a ``string_param``: clients
    such as tritonclient never expose response metadata, so that is where they can see
    it.
    """
    _set_client_id(response, field, getattr(request, field), request_id_parameter)
    return response


def _target(response: Any, field: str) -> Any:
    """The message that holds ``field``: the response, or the inference response a
    KServe stream response wraps."""
    descriptor = getattr(response, "DESCRIPTOR", None)
    if descriptor is not None:
        if field in descriptor.fields_by_name:
            return response
        if _NESTED_RESPONSE in descriptor.fields_by_name:
            return getattr(response, _NESTED_RESPONSE)
        return response
    if not hasattr(response, field) and hasattr(response, _NESTED_RESPONSE):
        return getattr(response, _NESTED_RESPONSE)
    return response


def _set_client_id(
    response: Any, field: str, client_id: Any, request_id_parameter: str | None
) -> None:
    target = _target(response, field)
    setattr(target, field, client_id)
    if request_id_parameter:
        ctx = current_context()
        if ctx is not None:
            target.parameters[request_id_parameter].string_param = ctx.request_id


def correlate_client_id(
    client_id: str | bytes, *, max_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH
) -> str | None:
    """Adopt a body id as the call's ``x_request_id`` when the metadata carried none.

    Metadata first, body second, as on the HTTP native generate routes. The value is
    validated like a header and returned; a rejected one is not adopted, and the call
    gets ``x_request_id_rejected`` on its ``request.end`` and span, and is counted in
    ``ridtrace.client_id_rejected``.
    """
    ctx = current_context()
    if ctx is None or ctx.x_request_id is not None:
        return None
    # Stripped as a header's value is (`inbound.read_inbound`), as the HTTP routes take a
    # body id: one client id, not "id" and "  id  ", and no metadata value padded with
    # spaces, which HTTP/2 forbids (RFC 9113 8.2.1).
    valid = adopted_client_id(client_id, max_length)
    span = ctx.server_span if ctx.server_span is not None else trace.get_current_span()
    if valid is None:
        ctx.annotations["x_request_id_rejected"] = True
        if span.is_recording():
            span.set_attribute("x_request_id_rejected", True)
        return None
    ctx.x_request_id = valid
    if span.is_recording():
        span.set_attribute("x_request_id", valid)
    return valid


def echo_client_id(
    *,
    field: str = "id",
    correlate: bool = True,
    max_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH,
    request_id_parameter: str | None = None,
) -> Callable[[F], F]:
    """Decorate a servicer method so each response echoes its request's id.

    Works on methods returning one response and on generator methods streaming
    responses, ``async`` for ``grpc.aio`` or plain for a synchronous ``grpc.server``
    (such methods were refused with a ``TypeError``), whether they take one request
    or a request stream (KServe's ``ModelStreamInfer``: each response echoes the id of
    the request read last, which is the one it answers when the handler answers
    requests in order).
    The decorated method keeps its shape, which is how ``grpc.aio`` and the
    interceptor tell them apart. Handlers written with ``context.write()`` call
    :func:`copy_client_id` themselves.

    Args:
        field: the id field of the request message (and of the response, or of its
            ``infer_response``).
        correlate: on a single-request method, also adopt the id as ``x_request_id``
            (see :func:`correlate_client_id`); in a request stream the interceptor gives
            each request its own from its id already.
        max_length: longest id adopted for correlation (the echo itself is verbatim).
        request_id_parameter: opt-in: also put the server ``request_id`` into each
            response's ``parameters`` under this key (see :func:`copy_client_id`).
    """

    def decorate(method: F) -> F:
        if inspect.isasyncgenfunction(method):

            @functools.wraps(method)
            async def streaming(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                source = _Latest(field)
                args, kwargs = _requests(args, kwargs, source, correlate, max_length)
                responses = method(*args, **kwargs)
                try:
                    async for response in responses:
                        _set_client_id(response, field, source.client_id, request_id_parameter)
                        yield response
                finally:
                    # Closed here, not by the garbage collector, so the handler's own
                    # cleanup runs in this call's task and context.
                    await responses.aclose()

            return streaming  # type: ignore[return-value]

        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def unary(*args: Any, **kwargs: Any) -> Any:
                source = _Latest(field)
                args, kwargs = _requests(args, kwargs, source, correlate, max_length)
                response = await method(*args, **kwargs)
                if response is not None:  # None: a context.write()-style stream
                    _set_client_id(response, field, source.client_id, request_id_parameter)
                return response

            return unary  # type: ignore[return-value]

        if inspect.isgeneratorfunction(method):  # a synchronous grpc.server's stream

            @functools.wraps(method)
            def blocking_streaming(*args: Any, **kwargs: Any) -> Iterator[Any]:
                source = _Latest(field)
                args, kwargs = _requests(args, kwargs, source, correlate, max_length)
                responses = method(*args, **kwargs)
                try:
                    for response in responses:
                        _set_client_id(response, field, source.client_id, request_id_parameter)
                        yield response
                finally:
                    responses.close()  # the handler's cleanup, in this call's thread

            return blocking_streaming  # type: ignore[return-value]

        if callable(method):  # a synchronous grpc.server's unary response

            @functools.wraps(method)
            def blocking_unary(*args: Any, **kwargs: Any) -> Any:
                source = _Latest(field)
                args, kwargs = _requests(args, kwargs, source, correlate, max_length)
                response = method(*args, **kwargs)
                if response is not None:
                    _set_client_id(response, field, source.client_id, request_id_parameter)
                return response

            return blocking_unary  # type: ignore[return-value]

        raise TypeError(f"echo_client_id needs a servicer method, got {method!r}")

    return decorate


class _Latest:
    """The id of the request message read last; wraps a request stream to learn it."""

    __slots__ = ("_source", "client_id", "field")

    def __init__(self, field: str) -> None:
        self.field = field
        self.client_id: Any = ""
        self._source: Any = None

    def wrap(self, source: Any) -> _Latest:
        self._source = source.__aiter__() if hasattr(source, "__aiter__") else iter(source)
        return self

    def __aiter__(self) -> _Latest:
        return self

    async def __anext__(self) -> Any:
        message = await self._source.__anext__()
        self.client_id = getattr(message, self.field)
        return message

    def __iter__(self) -> _Latest:
        return self

    def __next__(self) -> Any:  # a synchronous server's request iterator
        message = next(self._source)
        self.client_id = getattr(message, self.field)
        return message


def _requests(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    source: _Latest,
    correlate: bool,
    max_length: int,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments, the request (stream) replaced by one ``source`` watches."""
    # Servicer methods are (self, request, context) or (request, context).
    name = "request_iterator" if "request_iterator" in kwargs else "request"
    request = kwargs[name] if name in kwargs else args[-2]
    streamed = hasattr(request, "__aiter__") or hasattr(request, "__next__")
    if streamed and not hasattr(request, source.field):
        wrapped: Any = source.wrap(request)
        if name in kwargs:
            return args, {**kwargs, name: wrapped}
        return (*args[:-2], wrapped, args[-1]), kwargs
    source.client_id = getattr(request, source.field)
    # Text ids only, as the interceptor reads a stream's: a numeric id (int64) is echoed
    # but is no header-like id (the check raised TypeError: every call failed UNKNOWN).
    if correlate and source.client_id and isinstance(source.client_id, (str, bytes)):
        correlate_client_id(source.client_id, max_length=max_length)
    return args, kwargs
