"""A handler's annotation named like a line's own key (``message``) ends its call well.

``annotate_request(message=...)`` was passed to the end line's writer as a keyword
clashing with the event's text: the TypeError failed the call ``UNKNOWN`` (the
handler had answered) and wrote no ``request.end``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import grpc.aio

from ridtrace.tracing import annotate_request
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines, service_of, serving

CALL_TIMEOUT = 30.0


async def _annotated(request: bytes, context: Any) -> bytes:
    annotate_request(message="quota nearly used", self="me", pid="app")
    return b"answer"


def test_an_annotation_named_message_keeps_the_calls_answer(log_lines: LogLines) -> None:
    handlers = {"Unary": grpc.unary_unary_rpc_method_handler(_annotated)}

    async def run() -> bytes:
        async with (
            serving(service_of(handlers), interceptors=[RequestTracingInterceptor()]) as target,
            grpc.aio.insecure_channel(target) as channel,
        ):
            answer: bytes = await channel.unary_unary("/t.S/Unary")(b"", timeout=CALL_TIMEOUT)
            await log_lines.wait_for(lambda lines: len(lines.events("request.end")) == 1)
        return answer

    assert asyncio.run(run()) == b"answer"
    (end,) = log_lines.events("request.end")
    assert end["message"] == "request.end" and end["outcome"] == "ok"
    assert (end["_message"], end["_self"], end["_pid"]) == ("quota nearly used", "me", "app")
