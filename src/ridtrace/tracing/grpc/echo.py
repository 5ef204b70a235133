"""KServe-style id echo: the client's proto ``id`` comes back in every response.

KServe's inference protocol carries a request ``id`` in the message body and promises
it back in the response (and in each streamed response). That id is the client's: it
is copied verbatim, never used as the server's ``request_id``, which stays the one the
interceptor minted. Like the body ``request_id`` of ``/inference/v1/generate``, it
also serves as the correlation id (``x_request_id``) when the metadata carried none.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from opentelemetry import trace

from ridtrace.tracing.context import current_context
from ridtrace.tracing.identity import DEFAULT_MAX_CLIENT_ID_LENGTH, validate_client_id

__all__ = ["copy_client_id", "correlate_client_id", "echo_client_id"]

F = TypeVar("F", bound=Callable[..., Any])


def copy_client_id(request: Any, response: Any, *, field: str = "id") -> Any:
    """Set ``response.<field>`` to ``request.<field>`` and return ``response``."""
    setattr(response, field, getattr(request, field))
    return response


def correlate_client_id(
    client_id: str | bytes, *, max_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH
) -> str | None:
    """Adopt a body id as the call's ``x_request_id`` when the metadata carried none.

    Metadata first, body second, as on the HTTP native generate routes. The value is
    validated like a header (a rejected one is simply not adopted) and returned.
    """
    ctx = current_context()
    if ctx is None or ctx.x_request_id is not None:
        return None
    valid = validate_client_id(client_id, max_length)
    if valid is not None:
        ctx.x_request_id = valid
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute("x_request_id", valid)
    return valid


def echo_client_id(
    *,
    field: str = "id",
    correlate: bool = True,
    max_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH,
) -> Callable[[F], F]:
    """Decorate a unary-request servicer method so each response echoes the request id.

    Works on ``async def`` methods returning one response and on async generator
    methods streaming responses; the decorated method keeps its shape, which is how
    ``grpc.aio`` and the interceptor tell them apart. Streaming handlers written with
    ``context.write()`` and stream-request methods call :func:`copy_client_id`
    themselves.

    Args:
        field: the id field present in both the request and the response messages.
        correlate: also adopt the id as ``x_request_id`` (see :func:`correlate_client_id`).
        max_length: longest id adopted for correlation (the echo itself is verbatim).
    """

    def decorate(method: F) -> F:
        if inspect.isasyncgenfunction(method):

            @functools.wraps(method)
            async def streaming(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                client_id = _client_id(args, kwargs, field, correlate, max_length)
                responses = method(*args, **kwargs)
                try:
                    async for response in responses:
                        setattr(response, field, client_id)
                        yield response
                finally:
                    # Closed here, not by the garbage collector, so the handler's own
                    # cleanup runs in this call's task and context.
                    await responses.aclose()

            return streaming  # type: ignore[return-value]

        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def unary(*args: Any, **kwargs: Any) -> Any:
                client_id = _client_id(args, kwargs, field, correlate, max_length)
                response = await method(*args, **kwargs)
                if response is not None:  # None: a context.write()-style stream
                    setattr(response, field, client_id)
                return response

            return unary  # type: ignore[return-value]

        raise TypeError(f"echo_client_id needs an async method, got {method!r}")

    return decorate


def _client_id(
    args: tuple[Any, ...], kwargs: dict[str, Any], field: str, correlate: bool, max_length: int
) -> Any:
    # Servicer methods are (self, request, context) or (request, context).
    request = kwargs["request"] if "request" in kwargs else args[-2]
    client_id = getattr(request, field)
    if correlate and client_id:
        correlate_client_id(client_id, max_length=max_length)
    return client_id
