"""Whether a client left before the response started, asked of the server itself.

A handler that never reads the request (a plain GET) learns nothing of a client that
gave up: the server notes the disconnect, and drops the response the handler sends
after it (uvicorn's ``send`` returns early once ``disconnected``). Recorded from the
response alone, such a request was a delivered 200, outcome ``ok``, and counted so,
where the schema says status ``0``, outcome ``cancelled``.

Once the request's body is all read (or it announced none), ``receive()`` says only
``http.disconnect``, and at once when the client has gone: run one step, it answers
then or would wait, and a wait is closed where it began (no server keeps state across
an awaited ``receive`` it did not return). A request message it answers instead (the
body of a request whose handler never read it) is handed to the app's next
``receive()``.
"""

from __future__ import annotations

from starlette.types import Message, Receive, Scope

__all__ = ["Peek", "announces_no_body"]

_BODY_HEADERS = (b"content-length", b"transfer-encoding")


def announces_no_body(scope: Scope) -> bool:
    """The request has no body: neither a length (other than 0) nor a transfer coding."""
    for name, value in scope.get("headers", ()):
        if name in _BODY_HEADERS and (name != b"content-length" or value.strip() != b"0"):
            return False
    return True


class Peek:
    """A look at ``receive()`` that never waits; what it took, for the app."""

    __slots__ = ("taken",)

    def __init__(self) -> None:
        self.taken: list[Message] = []

    def client_gone(self, receive: Receive) -> bool:
        """Whether the server says the client has disconnected (it answers at once).
        The body's last message, unread by the app, comes first on some servers
        (hypercorn queues the disconnect behind it): looked past once."""
        for _ in range(2):
            message = _answered_at_once(receive)
            if message is None:
                return False
            if message.get("type") == "http.disconnect":
                return True
            self.taken.append(message)
            if message.get("type") != "http.request" or message.get("more_body", False):
                return False
        return False

    async def receive(self, receive: Receive) -> Message:
        """The app's ``receive()``: first what the look took."""
        if self.taken:
            return self.taken.pop(0)
        return await receive()


def _answered_at_once(receive: Receive) -> Message | None:
    """What ``receive()`` returns without waiting, or None when it would wait (or
    fails). Run a step by hand, in this task: a task and a turn of the event loop
    cost a quarter of the middleware's own time per request. A coroutine that would
    wait is closed where it waits (its ``finally`` blocks run, as on a cancel)."""
    steps = receive().__await__()
    try:
        steps.send(None)
    except StopIteration as done:
        return done.value if isinstance(done.value, dict) else None
    except Exception:  # a server's receive that failed: the app's own call will say
        return None
    steps.close()
    return None
