"""One exception object raised by several calls at once on a synchronous gRPC server.

A circuit breaker's stored error, or a start-up failure every call raises again, is one
object. Its escape was remembered on the object itself, one slot: the calls raising it
on the pool's threads at once overwrote each other's, and gRPC's "Exception calling
application" line, written in each call's own thread after its context was gone,
carried no ids for all but the last (194 of 200 in the QA run).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent import futures
from typing import Any

import grpc
import pytest

from ridtrace import configure_logging
from ridtrace.tracing.grpc import RequestTracingInterceptor
from tests.tracing.grpc.conftest import LogLines

BREAKER_OPEN = RuntimeError("circuit open: the engine failed its last health check")


class _EveryCallRaisedFirst(logging.Filter):
    """Holds gRPC's crash line until every call has raised: each line is then written
    after the other calls' escapes, as it is at random under load."""

    def __init__(self, calls: int) -> None:
        super().__init__()
        self.raised = threading.Barrier(calls, timeout=30)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("Exception calling application"):
            self.raised.wait()
        return True


def _line_context_while_handling(exc: BaseException) -> object:
    """The context a line logging ``exc`` inside its ``except`` gets, as a server's is."""
    from ridtrace.tracing.context import context_for_exception_line

    try:
        raise exc
    except BaseException:
        return context_for_exception_line(exc)


@pytest.mark.parametrize("calls", [8, 100])  # more than a record of 64 places kept
def test_each_calls_crash_line_carries_its_own_ids(calls: int) -> None:
    lines = LogLines()
    configure_logging(lines, service="grpc-test", level="INFO", intercept_stdlib=True)
    together = threading.Barrier(calls, timeout=30)  # every call raises at once
    held = _EveryCallRaisedFirst(calls)
    grpc_server_log = logging.getLogger("grpc._server")
    grpc_server_log.addFilter(held)

    def infer(request: bytes, context: grpc.ServicerContext) -> Any:
        together.wait()
        raise BREAKER_OPEN

    handlers = grpc.method_handlers_generic_handler(
        "qa.Breaker", {"Infer": grpc.unary_unary_rpc_method_handler(infer)})
    server = grpc.server(futures.ThreadPoolExecutor(calls),
                         interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((handlers,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sent = [f"breaker-{n}" for n in range(calls)]
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel, \
                futures.ThreadPoolExecutor(calls) as clients:
            call = channel.unary_unary("/qa.Breaker/Infer")

            def one(x_request_id: str) -> grpc.StatusCode:
                try:
                    call(b"", metadata=(("x-request-id", x_request_id),), timeout=20)
                except grpc.RpcError as exc:
                    return exc.code()  # type: ignore[no-any-return, attr-defined]
                return grpc.StatusCode.OK

            codes = list(clients.map(one, sent))
        deadline = time.monotonic() + 10
        while len(crashed := [x for x in lines.lines if x["message"].startswith(
                "Exception calling application")]) < calls:
            assert time.monotonic() < deadline, f"gRPC logged {len(crashed)} crashes"
            time.sleep(0.01)
    finally:
        grpc_server_log.removeFilter(held)
        server.stop(None).wait(10)
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    assert codes == [grpc.StatusCode.UNKNOWN] * calls
    ends = {x["request_id"]: x["x_request_id"] for x in lines.events("request.end")}
    assert sorted(ends.values()) == sorted(sent)
    # Each crash line names its own call: its request_id is the one that call's
    # request.end has, with that call's client id.
    named = sorted(((x.get("request_id"), x.get("x_request_id")) for x in crashed), key=str)
    assert named == sorted(ends.items(), key=str)


def test_an_exception_many_requests_raised_keeps_a_bounded_record() -> None:
    # Remembered per place, one object raised by a long-lived server's every call must
    # not grow with them: only the latest places are kept.
    import asyncio

    from ridtrace.tracing.context import _ESCAPES_KEPT, remember_on_exception
    from ridtrace.tracing.serverspan import minted_context

    shared = RuntimeError("circuit open")
    failed = _ESCAPES_KEPT + 500
    contexts = [minted_context(f"r{n}", None) for n in range(failed)]

    async def fail(n: int) -> bool:
        remember_on_exception(shared, contexts[n])
        await asyncio.sleep(0)  # every task escapes before any logs
        return _line_context_while_handling(shared) is contexts[n]

    async def every() -> list[bool]:
        return list(await asyncio.gather(*(fail(n) for n in range(failed))))

    found = asyncio.run(every())
    assert all(found[-_ESCAPES_KEPT:]) and not any(found[:500])  # the latest kept
    assert len(vars(shared)["__ridtrace_escapes__"]) == _ESCAPES_KEPT


def test_a_later_thread_with_the_same_id_is_not_the_request_that_raised() -> None:
    # A thread started after a request's thread ended may get its id (a health check's
    # timer): keyed by the id alone, its line logging the stored error named the request
    # that had raised it.
    from ridtrace.tracing.context import remember_on_exception
    from ridtrace.tracing.serverspan import minted_context

    shared = RuntimeError("circuit open")
    raised_in: list[int] = []

    def request() -> None:
        remember_on_exception(shared, minted_context("r-1", "client-a"))
        raised_in.append(threading.get_ident())

    first = threading.Thread(target=request)
    first.start()
    first.join()
    found: list[object] = []

    def timer() -> None:
        real = threading.get_ident
        threading.get_ident = lambda: raised_in[0]  # the id reused, as the OS may
        try:
            found.append(_line_context_while_handling(shared))
        finally:
            threading.get_ident = real

    later = threading.Thread(target=timer)
    later.start()
    later.join()
    assert found == [None]


def test_a_job_on_the_pool_thread_logging_the_stored_error_names_no_request() -> None:
    # The server's pool is the application's too: a health-check job it later runs on
    # the thread that served the failed call logs the breaker's stored error, given as
    # exc_info and raised again and caught, as a breaker does. That thread is the place
    # the call's escape was remembered in, and the job's lines were stamped with the
    # call's ids.
    from loguru import logger

    lines = LogLines()
    configure_logging(lines, service="grpc-test", level="INFO", intercept_stdlib=True)
    pool = futures.ThreadPoolExecutor(1)  # one thread: the job runs where the call did

    def infer(request: bytes, context: grpc.ServicerContext) -> Any:
        raise BREAKER_OPEN

    handlers = grpc.method_handlers_generic_handler(
        "qa.Breaker", {"Infer": grpc.unary_unary_rpc_method_handler(infer)})
    server = grpc.server(pool, interceptors=[RequestTracingInterceptor()])
    server.add_generic_rpc_handlers((handlers,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()

    def health_check() -> None:
        health = logging.getLogger("health")
        health.error("breaker still open: given", exc_info=BREAKER_OPEN)
        logger.opt(exception=BREAKER_OPEN).error("breaker still open: given to loguru")
        try:
            raise BREAKER_OPEN
        except RuntimeError:
            health.exception("breaker still open: raised again")
            logger.exception("breaker still open: raised again, loguru")

    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel, \
                pytest.raises(grpc.RpcError) as failed:
            channel.unary_unary("/qa.Breaker/Infer")(
                b"", metadata=(("x-request-id", "breaker-a"),), timeout=20)
        assert failed.value.code() == grpc.StatusCode.UNKNOWN  # type: ignore[attr-defined]
    finally:
        # Returns once every call has ended, its end callbacks run: the job comes after.
        server.stop(None).wait(10)
    try:
        pool.submit(health_check).result(timeout=20)
    finally:
        pool.shutdown()
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)
    [crash] = [x for x in lines.lines if x["message"].startswith("Exception calling")]
    assert crash["x_request_id"] == "breaker-a" and crash["request_id"]
    jobs = [x for x in lines.lines if x["message"].startswith("breaker still open")]
    assert len(jobs) == 4
    for job in jobs:
        assert (job.get("request_id"), job.get("x_request_id")) == (None, None), job
