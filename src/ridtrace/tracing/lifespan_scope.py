"""The lifespan scope through the middleware: ridtrace's telemetry is flushed when the
server stops, whether or not the application's lifespan does it.

uvicorn re-raises SIGTERM after its graceful shutdown, so the process dies before
``atexit`` runs, and the end of the lifespan is the last moment to export what a batch
span processor and a metric reader still hold. ``telemetry_lifespan`` is that moment
in a FastAPI or Starlette app, but a bare ASGI app wrapped in the middleware has no
lifespan to put it in: it refuses the scope (uvicorn's own quickstart app asserts
``scope["type"] == "http"``) or ignores it, and lost every span and metric still
batched, and the event lines gathered for the loop's next turn, at each SIGTERM.
"""

from __future__ import annotations

import asyncio
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ridtrace.tracing import lifecycle
from ridtrace.tracing.stdlib_bridge import reclaim_server_loggers

__all__ = ["serve_lifespan"]

_SHUTDOWN_ANSWERS = ("lifespan.shutdown.complete", "lifespan.shutdown.failed")


async def serve_lifespan(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Pass the lifespan scope to ``app``, flushing telemetry before its shutdown answer;
    answer the protocol for an app that does not speak it (it raised or returned before
    asking for the first message), so that its shutdown flushes telemetry too."""
    asked = False
    cancelled_waiting = False

    async def receive_at_startup() -> Message:
        nonlocal cancelled_waiting
        try:
            message = await receive()
        except asyncio.CancelledError:
            # A forced exit (Ctrl-C twice): the server stops without a shutdown message
            # and its loop cancels the lifespan where it waits for one.
            cancelled_waiting = True
            raise
        if message["type"] == "lifespan.startup":
            # By now the server has set up its logging, over configure_logging's routing
            # when the app was imported first (uvicorn.run(app), fastapi run).
            reclaim_server_loggers()
            # A second lifespan in this process: the first one's end shut telemetry down.
            lifecycle.revive_telemetry()
        return message

    async def receive_noted() -> Message:
        nonlocal asked
        asked = True
        return await receive_at_startup()

    async def send_after_flush(message: Message) -> None:
        if message["type"] == "lifespan.startup.complete":
            # Counted once started, so that of several servers in this process the last
            # one's end shuts telemetry down. Counted at the startup, one whose app's
            # startup failed (no shutdown follows) kept the count up for good, and the
            # process's telemetry was never shut down: every span batched lost at exit.
            lifecycle.service_started()
        if message["type"] in _SHUTDOWN_ANSWERS:
            await _flush()
            if cancelled_waiting and message["type"] == "lifespan.shutdown.failed":
                # Starlette answers that cancel as a failed shutdown, its traceback the
                # message, which uvicorn logged as an ERROR line: the operator's second
                # Ctrl-C is no failure of the app's. The answer still ends the protocol.
                message = {**message, "message": ""}
        await send(message)

    token = lifecycle.counted_above.set(True)  # an inner telemetry_lifespan: counted here
    try:
        await app(scope, receive_noted, send_after_flush)
    except Exception:
        if asked:  # the app's own lifespan failed: the server reports it
            raise
    finally:
        lifecycle.counted_above.reset(token)
    if not asked:
        await _answer(receive_at_startup, send)


async def _answer(receive: Receive, send: Send) -> None:
    """The lifespan protocol for an app without one: startup, then shutdown and flush.
    Any other message ends it, as a server sends each of them once."""
    if (await receive())["type"] != "lifespan.startup":
        return
    lifecycle.service_started()
    await send({"type": "lifespan.startup.complete"})
    if (await receive())["type"] != "lifespan.shutdown":
        return
    await _flush()
    await send({"type": "lifespan.shutdown.complete"})


async def _flush() -> None:
    """What ``telemetry_lifespan`` does, once per server: the last one in this process
    shuts telemetry down (an app that has it already did: nothing is left then)."""
    try:
        await lifecycle.service_ended()
    except Exception:  # telemetry never keeps a server from stopping
        logging.getLogger(__name__).exception("shutting telemetry down failed")
