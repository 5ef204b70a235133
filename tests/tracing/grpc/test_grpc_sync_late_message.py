"""A synchronous server's response stream counts only the messages gRPC sent.

The server never interrupts a handler: one whose message comes after the call's
deadline (or its client's cancel) hands it to a server that drops it unsent. The
wrapper counted each message as the handler yielded it, so such a call's
``request.end`` said ``messages_out: 1`` where the client got none (grpc.aio's
``context.write()`` counts a message once gRPC took it, as its client got it).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from tests.tracing.grpc.conftest import LogLines
from tests.tracing.grpc.test_grpc_sync_server import _wait_until, traced_sync_server

CALL_TIMEOUT = 30.0
DEADLINE = 0.2


def _after_the_deadline(request: bytes, context: Any) -> Iterator[bytes]:
    ended = threading.Event()
    if context.add_callback(ended.set):  # False: the call has ended already
        assert ended.wait(CALL_TIMEOUT), "the call never ended"
    yield b"late"


def _then_one_more(request: bytes, context: Any) -> Iterator[bytes]:
    yield b"sent"
    yield from _after_the_deadline(request, context)


_HANDLERS = {
    "Late": grpc.unary_stream_rpc_method_handler(_after_the_deadline),
    "OneMore": grpc.unary_stream_rpc_method_handler(_then_one_more),
}


@pytest.mark.parametrize(("method", "received"), [("Late", 0), ("OneMore", 1)])
def test_a_message_yielded_after_the_deadline_is_not_counted_as_sent(
    log_lines: LogLines, method: str, received: int
) -> None:
    with traced_sync_server(
        lambda s: s.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("probe.Late", _HANDLERS),)
        ),
        workers=2,
    ) as channel:
        got: list[bytes] = []
        with pytest.raises(grpc.RpcError) as failed:
            for message in channel.unary_stream(f"/probe.Late/{method}")(b"", timeout=DEADLINE):
                got.append(message)
        assert failed.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        assert len(got) == received
        _wait_until(lambda: bool(log_lines.events("request.end")), timeout=CALL_TIMEOUT)
    (end,) = log_lines.events("request.end")
    assert (end["grpc_status"], end["outcome"]) == ("DEADLINE_EXCEEDED", "cancelled")
    assert end["messages_out"] == received
