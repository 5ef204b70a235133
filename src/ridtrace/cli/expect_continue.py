"""A request that waits for ``100 Continue`` and is answered first closes its connection.

A client that sends ``Expect: 100-continue`` holds its body back until the server says
``100 Continue`` (uvicorn says it at the app's first body read). A route that answers
from the headers alone (a 404, 405 or 415) never read it: uvicorn kept the connection
open, still owed the announced body, and the client (which has its final answer, and
need not send the body: RFC 9110 §10.1.1) sent its next request there, which was read
as that body: it got no answer. As Go's net/http does, such an answer says
``connection: close`` and the connection closes after it (the server "SHOULD indicate
whether it intends to close the connection or continue reading", §10.1.1).
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

__all__ = ["ClosedBeforeContinue"]


class _ExpectingCycle(RequestResponseCycle):
    """uvicorn's cycle, closing the connection after an answer sent before ``100``."""

    async def send(self, message: dict) -> None:  # type: ignore[type-arg, override]
        if (message["type"] == "http.response.start" and not self.response_started
                and self.waiting_for_100_continue and self.more_body):
            self.keep_alive = False  # uvicorn adds "connection: close" and closes after
        await super().send(message)  # type: ignore[arg-type]


class ClosedBeforeContinue(HttpToolsProtocol):
    """Put among the bases before the protocol that makes the request's cycle."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        # Not an HTTP/1.0 request's (it waits for nothing), nor a queued one's before.
        if (cycle is not None and cycle.scope is self.scope and cycle.waiting_for_100_continue
                and type(cycle) is RequestResponseCycle):
            cycle.__class__ = _ExpectingCycle
