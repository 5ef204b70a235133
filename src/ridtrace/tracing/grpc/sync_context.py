"""The synchronous ``grpc.server``'s servicer context, with ridtrace's id metadata kept.

What :class:`~ridtrace.tracing.grpc.TracedServicerContext` is to ``grpc.aio``: it
delegates to gRPC's context and merges the id keys into the metadata the handler sends.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable
from typing import Any

import grpc

from ridtrace.tracing.grpc.context import IdMetadata, Metadata

__all__ = ["SyncTracedServicerContext"]


class SyncTracedServicerContext(IdMetadata, grpc.ServicerContext):  # type: ignore[misc]
    """Delegates to the synchronous server's context; merges ``ours`` into the metadata
    the handler sends (see :class:`~ridtrace.tracing.grpc.TracedServicerContext`)."""

    def __init__(
        self, context: grpc.ServicerContext, ours: Metadata, owned_keys: frozenset[str]
    ) -> None:
        self.start(context, ours, owned_keys)  # aborted: its abort() raises a bare Exception
        # gRPC ended the call itself over a request message it could not deserialize.
        self.request_undecodable = False
        # The time left to the deadline when the call ended: a handler this server never
        # interrupts returns later, perhaps past the deadline of a call its client had
        # cancelled long before it (recorded DEADLINE_EXCEEDED, an error span).
        self.remaining_at_end: float | None = None
        with contextlib.suppress(Exception):  # telemetry never fails a call
            context.add_callback(self._note_end)

    def _note_end(self) -> None:
        with contextlib.suppress(Exception):
            self.remaining_at_end = self._context.time_remaining()

    def ensure_initial_metadata(self) -> None:
        """Send ridtrace's initial metadata unless the handler already sent some; a
        failure (the call already ended) is left to the response send that follows."""
        if not self.initial_sent:
            self.initial_sent = True
            if not self._context.is_active():
                # Over already (gRPC answered a message it could not deserialize): the
                # send would be refused by gRPC's core and never complete, and the
                # server's stop() then waited for that call forever.
                return
            with contextlib.suppress(Exception):  # telemetry never fails a call
                self._context.send_initial_metadata(self._current_ours())

    def send_initial_metadata(self, initial_metadata: Metadata) -> None:
        self.initial_sent = True
        self._context.send_initial_metadata(self.merged(initial_metadata))

    def set_trailing_metadata(self, trailing_metadata: Metadata) -> None:
        self._handler_trailing = trailing_metadata
        self._context.set_trailing_metadata(self.merged(trailing_metadata))

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = True
        self._context.abort(code, details)

    def abort_with_status(self, status: grpc.Status) -> None:
        self.aborted = True
        trailing = getattr(status, "trailing_metadata", None) or ()
        self._handler_trailing = trailing
        self._context.set_trailing_metadata(self.merged(trailing))
        self._context.abort(status.code, status.details)

    # -- plain delegation (abstract on grpc.ServicerContext, so spelt out) -------------

    def invocation_metadata(self) -> Any:
        return self._context.invocation_metadata()

    def peer(self) -> str:
        return self._context.peer()  # type: ignore[no-any-return]

    def peer_identities(self) -> Any:
        return self._context.peer_identities()

    def peer_identity_key(self) -> str | None:
        return self._context.peer_identity_key()  # type: ignore[no-any-return]

    def auth_context(self) -> Any:
        return self._context.auth_context()

    def set_code(self, code: grpc.StatusCode) -> None:
        self._context.set_code(code)

    def set_details(self, details: str) -> None:
        self._context.set_details(details)

    def is_active(self) -> bool:
        return bool(self._context.is_active())

    def time_remaining(self) -> float | None:
        return self._context.time_remaining()  # type: ignore[no-any-return]

    def cancel(self) -> None:
        self._context.cancel()

    def add_callback(self, callback: Callable[[], None]) -> bool:
        # gRPC runs it in a thread of its own when the call ends: in the call's context,
        # so a line it logs ("client went away") carries the call's ids (it had none).
        in_call = contextvars.copy_context()
        return bool(self._context.add_callback(functools.partial(in_call.run, callback)))

    # Defined on grpc.ServicerContext to raise NotImplementedError, so __getattr__
    # would never be asked for them.
    def code(self) -> grpc.StatusCode | None:
        return self._context.code()

    def details(self) -> Any:
        return self._context.details()

    def trailing_metadata(self) -> Any:
        return self._context.trailing_metadata()

    def set_compression(self, compression: grpc.Compression) -> None:
        self._context.set_compression(compression)

    def disable_next_message_compression(self) -> None:
        self._context.disable_next_message_compression()

    def __getattr__(self, name: str) -> Any:
        # Anything a newer grpcio adds reaches the real context unchanged. The guard
        # stops a lookup before __init__ ran (copy, pickle) from recursing forever.
        if name == "_context":
            raise AttributeError(name)
        return getattr(self._context, name)
