"""A request body the server refuses mid-read, told to the request's middleware.

The parser (bad chunk framing) and the header guard (chunk extensions without end)
refuse a body while the app is reading it: the 400 goes out from the protocol and the
app only sees ``http.disconnect``. request.end then said status 0, outcome ``cancelled``
(a client gone) for a client that stayed and was told 400, and the WARN saying why was
written with none of the request's ids. Here the refusal is recorded on the request
(`ridtrace.tracing.observed.answered_by_server`) and the WARN is written with the
request's context current.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ridtrace.tracing import context as request_context
from ridtrace.tracing.context import RequestContext
from ridtrace.tracing.observed import SCOPE_KEY, answered_by_server

__all__ = ["RefusedBodies"]


class RefusedBodies(HttpToolsProtocol):
    """Put among the bases before :class:`~ridtrace.cli.pipelining.InOrderRefusals` and
    the header guard, whose ``_answer_and_close`` it sees first."""

    def data_received(self, data: bytes) -> None:
        cycle = self._cycle_in_body()
        ctx = None if cycle is None else cycle.scope.get(SCOPE_KEY)
        if not isinstance(ctx, RequestContext):
            super().data_received(data)
            return
        # Only while the app reads this body: no other request's task is started in
        # here (a pipelined one waits for this answer), so none inherits the context.
        token = request_context.enter(ctx)
        try:
            super().data_received(data)
        finally:
            request_context.leave(token)

    def send_400_response(self, msg: str) -> None:
        self._note_refusal(400, msg)
        super().send_400_response(msg)

    def _answer_and_close(self, status: int, reason: str, message: str) -> None:
        self._note_refusal(status, message)
        super()._answer_and_close(status, reason, message)  # type: ignore[misc]

    def _note_refusal(self, status: int, message: str) -> None:
        cycle = self._cycle_in_body()
        if cycle is not None:
            answered_by_server(cycle.scope, status, message, len(message.encode("ascii")))

    def _cycle_in_body(self) -> Any:
        """The request whose body is being read, its app not answering yet (not even
        started, when the refusal came in the read that ended its headers)."""
        cycle = self.cycle
        if cycle is None or not cycle.more_body or cycle.response_started:
            return None
        return cycle
