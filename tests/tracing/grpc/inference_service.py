"""The test inference service: the frontend plugin's in-flight registry and echo engine
behind gRPC, with the KServe-style id echo.

Each call registers a channel in the registry under its key, a pump task (standing in
for a worker's response stream) claims the entry by the same key and feeds it the echo
engine's tokens, and the handler forwards what arrives on its channel. Keyed by the
server-minted ``request_id`` (the fix) every caller gets its own output; keyed by the
client id (``key_by="client"``) the registry's policy decides what goes wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Literal

import grpc

from ridtrace.frontend_plugin.engine import EchoEngine
from ridtrace.frontend_plugin.registry import DROPPED, DuplicateRequestId, InflightRegistry
from ridtrace.tracing import annotate_request, current_context, current_request_id
from ridtrace.tracing.grpc_echo import copy_client_id, echo_client_id

_END = object()


def build_servicer(
    proto: Any,
    *,
    registry: InflightRegistry | None = None,
    engine: EchoEngine | None = None,
    key_by: Literal["request_id", "client"] = "request_id",
) -> Any:
    """An ``InferenceServicer`` instance for ``proto`` (compiled at test time)."""
    pb2 = proto.pb2

    class InferenceServicer(proto.pb2_grpc.InferenceServicer):  # type: ignore[misc]
        def __init__(self) -> None:
            self.registry = registry or InflightRegistry()
            self.engine = engine or EchoEngine()
            self.pumps: set[asyncio.Task[None]] = set()
            self.max_inflight = 0
            self.contexts_seen: list[Any] = []

        # -- the registry/engine pipeline, as a frontend wires it ----------------------

        def _key(self, request: Any) -> str:
            if key_by == "client":
                ctx = current_context()
                return (ctx.x_request_id if ctx else None) or request.id
            request_id = current_request_id()
            assert request_id is not None, "the interceptor did not set the context"
            return request_id

        async def _tokens(self, request: Any, context: Any) -> AsyncIterator[str]:
            key = self._key(request)
            channel: asyncio.Queue[Any] = asyncio.Queue()
            try:
                self.registry.register(key, channel, owner_request_id=current_request_id())
            except DuplicateRequestId:
                annotate_request(outcome_override="conflict")
                await context.abort(grpc.StatusCode.ALREADY_EXISTS, "request id in flight")
            self.max_inflight = max(self.max_inflight, len(self.registry))
            pump = asyncio.create_task(self._pump(key, request))
            self.pumps.add(pump)
            pump.add_done_callback(self.pumps.discard)
            try:
                while (item := await channel.get()) is not _END:
                    if item is DROPPED:
                        await context.abort(grpc.StatusCode.INTERNAL, "Unlinked request")
                    yield item
            finally:
                pump.cancel()
                self.registry.release(key, channel)

        async def _pump(self, key: str, request: Any) -> None:
            entry = self.registry.claim(key)
            if entry is None:
                return
            async for token in self.engine.stream(request.prompt, request.max_tokens or 64):
                entry.channel.put_nowait(token)
            entry.channel.put_nowait(_END)

        # -- the four shapes -----------------------------------------------------------

        @echo_client_id()
        async def Infer(self, request: Any, context: Any) -> Any:
            text = "".join([token async for token in self._tokens(request, context)])
            return pb2.InferResponse(text=text, internal_request_id=current_request_id())

        @echo_client_id()
        async def InferStream(self, request: Any, context: Any) -> AsyncIterator[Any]:
            self.contexts_seen.append(current_context())
            index = 0
            async for token in self._tokens(request, context):
                # Read at every yield: the context must survive across suspensions.
                yield pb2.InferResponse(
                    text=token, internal_request_id=current_request_id(), index=index
                )
                index += 1

        async def InferCollect(self, request_iterator: Any, context: Any) -> Any:
            prompts: list[str] = []
            last: Any = None
            async for request in request_iterator:
                prompts.append(request.prompt)
                last = request
            response = pb2.InferResponse(
                text=" | ".join(prompts), internal_request_id=current_request_id()
            )
            return copy_client_id(last, response) if last is not None else response

        async def InferChat(self, request_iterator: Any, context: Any) -> AsyncIterator[Any]:
            index = 0
            async for request in request_iterator:
                text = "".join([token async for token in self._tokens(request, context)])
                yield copy_client_id(
                    request,
                    pb2.InferResponse(
                        text=text, internal_request_id=current_request_id(), index=index
                    ),
                )
                index += 1

        async def drain(self) -> None:
            """Wait for every pump task to finish (they are cancelled with their call)."""
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*self.pumps, return_exceptions=True)

    return InferenceServicer()
