"""DirectCall: the safe policy's caller reads its worker stream in its own task (issue 15).

A scripted worker stream stands in for the dispatcher, so each rule (no extra task,
batching, the done line, the caller leaving, the chunk timeout, a foreign chunk) is
checked on its own; the end-to-end suites run the same code against real workers.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from ridtrace.frontend_plugin import Frontend, FrontendSettings, InferenceCall, WorkRequest
from ridtrace.frontend_plugin.direct import DirectCall, new_call
from ridtrace.frontend_plugin.failures import WORKER_TIMED_OUT, Failed
from ridtrace.frontend_plugin.frontend import CallerLeft
from ridtrace.frontend_plugin.pump import Delta, Finished

RID = "rid-1"


class ScriptedStream:
    """A worker stream: ``lines`` arrive at once, then each ``later`` item on request."""

    def __init__(self, first: dict[str, Any], lines: list[dict[str, Any]]) -> None:
        self.worker, self.attempts, self.first = "http://w", 1, first
        self._buffered: deque[dict[str, Any]] = deque(lines)
        self.more: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.closed = False

    @property
    def ready(self) -> bool:
        return bool(self._buffered)

    def next_ready(self) -> dict[str, Any]:
        return self._buffered.popleft()

    async def next_message(self) -> dict[str, Any] | None:
        return await self.more.get()

    async def drain(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


class ScriptedDispatcher:
    def __init__(self, settings: FrontendSettings, stream: ScriptedStream) -> None:
        self.settings, self.stream, self.opened = settings, stream, 0

    async def open(self, work: WorkRequest, **_: Any) -> ScriptedStream:
        self.opened += 1
        return self.stream

    def snapshot(self) -> dict[str, object]:
        return {}

    async def aclose(self) -> None:
        pass


def _chunk(text: str, rid: str = RID) -> dict[str, Any]:
    return {"request_id": rid, "text": text}


DONE = {"request_id": RID, "done": True, "finish_reason": "stop", "tokens": 3}


def _call(stream: ScriptedStream, **settings: Any) -> tuple[Frontend, DirectCall]:
    config = FrontendSettings(workers=("http://w",), **settings)
    fe = Frontend(config, dispatcher=ScriptedDispatcher(config, stream))  # type: ignore[arg-type]
    work = WorkRequest(request_id=RID, x_request_id=None, endpoint="completions", model="m",
                       prompt="p", max_tokens=3)
    call = new_call(fe, key=RID, work=work, trace_headers={})
    assert isinstance(call, DirectCall)
    return fe, call


def test_the_safe_policy_reads_in_the_callers_task_and_the_legacy_one_keeps_its_pump() -> None:
    async def main() -> None:
        stream = ScriptedStream(_chunk("a"), [_chunk("b"), DONE])
        _, call = _call(stream)
        before = asyncio.all_tasks()
        call.start()
        assert await call.next() == Delta("a")
        assert asyncio.all_tasks() == before  # no pump task was started
        call.close()
        legacy = Frontend(FrontendSettings(workers=("http://w",), id_policy="legacy"))
        work = WorkRequest(request_id="k", x_request_id=None, endpoint="completions",
                           model="m", prompt="p", max_tokens=3)
        assert isinstance(new_call(legacy, key="k", work=work, trace_headers={}),
                          InferenceCall)
        await legacy.aclose()

    asyncio.run(main())


def test_ready_chunks_come_without_waiting_and_the_done_line_waits_for_next() -> None:
    async def main() -> None:
        stream = ScriptedStream(_chunk("a"), [_chunk("b"), _chunk("c"), DONE])
        fe, call = _call(stream)
        call.start()
        assert await call.next() == Delta("a")
        assert [call.next_nowait(), call.next_nowait()] == [Delta("b"), Delta("c")]
        assert call.next_nowait() is None  # the done line is held: draining may wait
        finished = await call.next()
        assert isinstance(finished, Finished) and finished.tokens == 3
        call.close()
        assert stream.closed and len(fe.registry) == 0

    asyncio.run(main())


def test_a_caller_leaving_ends_a_read_that_waits_on_the_worker() -> None:
    async def main() -> None:
        stream = ScriptedStream(_chunk("a"), [])
        fe, call = _call(stream)
        call.start()
        await call.next()
        reader = asyncio.create_task(call.next())
        while not stream.more._getters:  # type: ignore[attr-defined]  # the read waits
            await asyncio.sleep(0)
        call.interrupt()
        assert isinstance(await asyncio.wait_for(reader, 5), CallerLeft)
        assert not reader.cancelled()
        assert isinstance(await call.next(), CallerLeft)  # and every later read
        call.close()
        assert stream.closed and len(fe.registry) == 0

    asyncio.run(main())


def test_a_silent_worker_times_out_with_a_504() -> None:
    async def main() -> None:
        stream = ScriptedStream(_chunk("a"), [])
        _, call = _call(stream, chunk_timeout=0.05)
        call.start()
        await call.next()
        failed = await asyncio.wait_for(call.next(), 5)
        assert isinstance(failed, Failed) and failed.status == 504
        # The caller is told the kind of failure; which worker and how long, the log.
        assert failed.message == WORKER_TIMED_OUT
        assert "sent nothing" in failed.detail and failed.logged == failed.detail
        call.close()

    asyncio.run(main())


def test_a_foreign_chunk_is_never_handed_out() -> None:
    async def main() -> None:
        stream = ScriptedStream(_chunk("a"), [_chunk("theirs", rid="rid-2"), DONE])
        _, call = _call(stream)
        call.start()
        await call.next()
        failed = call.next_nowait()
        assert isinstance(failed, Failed) and failed.reason == "foreign_chunk"
        call.close()

    asyncio.run(main())
