"""A ``grpc.aio.ServicerContext`` that keeps ridtrace's id metadata on every response.

gRPC has no "add to the response metadata" call: a handler's ``send_initial_metadata``
and ``set_trailing_metadata`` replace what was there. The interceptor hands handlers
this proxy so the server ``request_id`` survives whatever the handler sends, without
ever sending initial metadata twice (which gRPC refuses, failing the call).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn

import grpc
import grpc.aio

from ridtrace.tracing.context import RequestContext

__all__ = ["IdMetadata", "Metadata", "TracedServicerContext"]

Metadata = tuple[tuple[str, str | bytes], ...]

_NO_DEADLINE = 1e9  # seconds: more is a call without a deadline


class _Status:
    """A ``grpc.Status`` with ridtrace's trailing metadata merged in."""

    __slots__ = ("code", "details", "trailing_metadata")

    def __init__(self, code: grpc.StatusCode, details: str, trailing_metadata: Metadata) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata


class IdMetadata:
    """What the servicer contexts of both servers share (grpc.aio's below, the
    synchronous server's in `ridtrace.tracing.grpc.sync_context`): the call's counters and
    ridtrace's metadata, merged into whatever metadata the handler sends."""

    __slots__ = (
        "_client_key",
        "_context",
        "_ctx",
        "_echoed",
        "_handler_trailing",
        "_learnt",
        "_ours",
        "_owned",
        "aborted",
        "failed_write",
        "initial_sent",
        "messages_in",
        "messages_out",
        "on_message",
        "on_read",
        "requests_ended",
        "timeout",
        "write_sends_initial",
    )

    def start(self, context: Any, ours: Metadata, owned_keys: frozenset[str]) -> None:
        """Set up the proxy of `context` (the body of each context's ``__init__``)."""
        self._context = context
        self._ours = ours
        self._owned = owned_keys
        # Set by follow(): the call's request context, to echo a client id learnt late.
        self._ctx: RequestContext | None = None
        self._client_key = ""
        self._echoed: str | None = None
        self._learnt = False
        self._handler_trailing: Iterable[tuple[str, str | bytes]] | None = None
        # The handler called abort(): its status is what the client gets, even if the
        # handler caught the AbortError and went on (grpc.aio's is an Exception).
        self.aborted = False
        self.initial_sent = False
        # Whether a handler's first write() carries ridtrace's initial metadata.
        self.write_sends_initial = True
        self.messages_in = 0
        self.messages_out = 0
        # Called with each request message read (a bidirectional stream's requests),
        # and before each read: the request read before was answered.
        self.on_message: Callable[[Any], None] | None = None
        self.on_read: Callable[[], None] | None = None
        # The error a grpc.aio write() raised and the message it was given: named in the
        # call's `error` if the handler lets that error escape (`note_refused_write`).
        self.failed_write: tuple[BaseException, Any] | None = None
        # A streamed request ended (the client half-closed, or its call ended).
        self.requests_ended = False
        # Seconds the call had when it began; None without a deadline (grpc.aio says
        # None, a synchronous server about 2**63 ns).
        remaining = context.time_remaining()
        self.timeout: float | None = (
            remaining if remaining is not None and remaining < _NO_DEADLINE else None
        )

    def follow(self, ctx: RequestContext, client_key: str) -> None:
        """Echo the call's ``x_request_id`` under ``client_key`` as it is when metadata
        is sent, not only as the metadata had it: a handler may learn it from the body
        (`echo_client_id`), and over HTTP that id is echoed (the headers are read when
        the response starts). Before, the client got no ``x-request-id`` back while
        every line and the span named the body id."""
        self._ctx = ctx
        self._client_key = client_key
        self._echoed = ctx.x_request_id

    def echo_learnt_client_id(self) -> None:
        """Re-set the trailing metadata if the call learnt a client id since it was
        set (when the handler ended, before gRPC sends it)."""
        self._current_ours()
        if self._learnt:
            self._context.set_trailing_metadata(self.merged(self._handler_trailing))

    def _current_ours(self) -> Metadata:
        ctx = self._ctx
        if ctx is not None and ctx.x_request_id is not None and ctx.x_request_id != self._echoed:
            # Adopted only when none was valid (correlate_client_id): replaces nothing
            # the client sent, and the handler's own x-request-id gives way, as over HTTP.
            self._echoed = learnt = ctx.x_request_id
            key = self._client_key
            self._ours = (*(kv for kv in self._ours if kv[0] != key), (key, learnt))
            self._owned = self._owned | {key}
            self._learnt = True
        return self._ours

    def merged(self, metadata: Iterable[tuple[str, str | bytes]] | None) -> Metadata:
        """``metadata`` without the keys ridtrace owns, followed by ridtrace's own."""
        self._current_ours()
        if not metadata:
            return self._ours
        return tuple((k, v) for k, v in metadata if k.lower() not in self._owned) + self._ours


class TracedServicerContext(IdMetadata, grpc.aio.ServicerContext):  # type: ignore[misc]
    """Delegates to the real context; merges ``ours`` into the metadata it sends.

    Args:
        context: the context gRPC gave the interceptor.
        ours: the id metadata (``x-server-request-id``, echoed ``x-request-id``, and
            deprecation notices), sent in both initial and trailing metadata.
        owned_keys: keys a handler may not set itself: its values are replaced, never
            duplicated, like the HTTP middleware's response headers.
    """

    __slots__ = ()

    def __init__(
        self, context: grpc.aio.ServicerContext, ours: Metadata, owned_keys: frozenset[str]
    ) -> None:
        self.start(context, ours, owned_keys)

    async def ensure_initial_metadata(self) -> None:
        """Send ridtrace's initial metadata unless the handler already sent some.

        A failure (the call already ended) is swallowed: the response send that follows
        fails the same way, so telemetry never becomes the reason a call failed.
        """
        if not self.initial_sent:
            self.initial_sent = True
            with contextlib.suppress(Exception):
                await self._context.send_initial_metadata(self._current_ours())

    # -- the calls whose metadata ridtrace merges --------------------------------------

    async def send_initial_metadata(self, initial_metadata: Metadata) -> None:
        self.initial_sent = True
        await self._context.send_initial_metadata(self.merged(initial_metadata))

    def set_trailing_metadata(self, trailing_metadata: Metadata) -> None:
        self._handler_trailing = trailing_metadata
        self._context.set_trailing_metadata(self.merged(trailing_metadata))

    async def abort(
        self,
        code: grpc.StatusCode,
        details: str = "",
        trailing_metadata: Metadata = (),
    ) -> NoReturn:
        # Empty means "keep what was set" to gRPC, and ours was set when the call began.
        if trailing_metadata:
            self._handler_trailing = trailing_metadata
        merged = self.merged(trailing_metadata) if trailing_metadata else ()
        await self._aborting(self._context.abort(code, details, merged))

    async def abort_with_status(self, status: grpc.Status) -> NoReturn:
        trailing = getattr(status, "trailing_metadata", None) or ()
        # As abort(): grpc.aio keeps what was set when the status carries none, and ours
        # was set when the call began (merging it here lost the handler's own).
        if trailing:
            self._handler_trailing = trailing
        merged = self.merged(trailing) if trailing else ()
        await self._aborting(
            self._context.abort_with_status(_Status(status.code, status.details, merged)))

    async def _aborting(self, abort: Awaitable[Any]) -> NoReturn:
        task = asyncio.current_task()
        cancels_before = task.cancelling() if task is not None else 0
        try:
            await abort
        except grpc.aio.AbortError:
            self.aborted = True  # not on abort(OK), which gRPC refuses sending nothing
            raise
        except asyncio.CancelledError:
            # Cancelled while the abort's status went out: the event loop ending, say,
            # once its client had the status and left (grpc.aio cancels a call for its
            # client only before a status is taken). The client got the abort's code;
            # it was recorded CANCELLED. A cancel from before the abort stays a cancel.
            if task is not None and task.cancelling() > cancels_before:
                self.aborted = True
            raise
        raise AssertionError("unreachable: abort raises")  # pragma: no cover

    async def write(self, message: Any) -> None:
        if self.write_sends_initial:
            await self.ensure_initial_metadata()
        try:
            await self._context.write(message)
        except Exception as exc:
            self.failed_write = (exc, message)
            raise
        # Counted once gRPC took it: a message its serializer refused (the write
        # raises) or a cancel mid-write is no message the client got.
        self.messages_out += 1

    async def read(self) -> Any:
        if self.on_read is not None:
            self.on_read()
        message = await self._context.read()
        if message is not grpc.aio.EOF:
            self.messages_in += 1
            if self.on_message is not None:
                self.on_message(message)
        return message

    # -- plain delegation --------------------------------------------------------------

    def invocation_metadata(self) -> Metadata | None:
        return self._context.invocation_metadata()  # type: ignore[no-any-return]

    def set_code(self, code: grpc.StatusCode) -> None:
        self._context.set_code(code)

    def set_details(self, details: str) -> None:
        self._context.set_details(details)

    def set_compression(self, compression: grpc.Compression) -> None:
        self._context.set_compression(compression)

    def disable_next_message_compression(self) -> None:
        self._context.disable_next_message_compression()

    def peer(self) -> str:
        return self._context.peer()  # type: ignore[no-any-return]

    def peer_identities(self) -> Iterable[bytes] | None:
        return self._context.peer_identities()  # type: ignore[no-any-return]

    def peer_identity_key(self) -> str | None:
        return self._context.peer_identity_key()  # type: ignore[no-any-return]

    def auth_context(self) -> Mapping[str, Iterable[bytes]]:
        return self._context.auth_context()  # type: ignore[no-any-return]

    def time_remaining(self) -> float | None:
        return self._context.time_remaining()  # type: ignore[no-any-return]

    def trailing_metadata(self) -> Sequence[tuple[str, str | bytes]]:
        return self._context.trailing_metadata()  # type: ignore[no-any-return]

    def code(self) -> grpc.StatusCode | None:
        return self._context.code()

    def details(self) -> str | None:
        return self._context.details()  # type: ignore[no-any-return]

    def add_done_callback(self, callback: Any) -> None:
        # Run after the handler, outside its context: in a copy of the call's, so a line
        # it logs carries the call's ids (it had none).
        in_call = contextvars.copy_context()
        self._context.add_done_callback(functools.partial(in_call.run, callback))

    def cancelled(self) -> bool:
        return bool(self._context.cancelled())

    def done(self) -> bool:
        return bool(self._context.done())

    def __getattr__(self, name: str) -> Any:
        # Anything a newer grpcio adds reaches the real context unchanged. The guard
        # stops a lookup before __init__ ran (copy, pickle) from recursing forever.
        if name == "_context":
            raise AttributeError(name)
        return getattr(self._context, name)
