"""A worker's reply to a work envelope: the NDJSON lines, paced or whole, and its end line.

`work_endpoint` decides which; the lines, the injected crossed-wires fault and the
``worker.end`` record are the same either way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from ridtrace.contract import OUTCOME_CANCELLED, OUTCOME_ERROR, OUTCOME_OK, WORKER_END, WORKER_ERROR
from ridtrace.fingerprint import fingerprint
from ridtrace.frontend_plugin.drain import Drain, StopOnDrain, Stopped
from ridtrace.frontend_plugin.engine import EchoEngine, echo_tokens, generate
from ridtrace.frontend_plugin.settings import WorkerSettings
from ridtrace.frontend_plugin.wire import (
    ChunkEncoder,
    WorkRequest,
    chunk_line,
    done_line,
    error_line,
)
from ridtrace.tracing import annotate_request
from ridtrace.tracing.eventlog import EventLog

__all__ = ["log_end", "paced_reply", "whole_reply"]

# The worker's lines keep the logger name they had when this code lived in worker.py.
events = EventLog("ridtrace.frontend_plugin.worker")


def _stopped_by(job: WorkRequest, finish_reason: str) -> str | None:
    """The stop sequence that ended the reply (none when the token limit came first)."""
    if not job.stop or finish_reason != "stop":
        return None
    return generate(job.prompt, job.max_tokens, job.stop, job.json_schema)[2]


def whole_reply(
    job: WorkRequest, tokens: list[str], finish_reason: str, foreign_after: int | None
) -> bytes:
    """A reply the engine had whole at once: every chunk line, then the done line."""
    return _encode(job, tokens, 0, foreign_after) + _done(job, finish_reason, len(tokens))


def _done(job: WorkRequest, finish_reason: str, tokens: int) -> bytes:
    return done_line(
        job.request_id, finish_reason=finish_reason, tokens=tokens,
        prompt_tokens=len(job.prompt.split()), stop_sequence=_stopped_by(job, finish_reason),
    )


def _encode(job: WorkRequest, batch: list[str], done: int, foreign_after: int | None) -> bytes:
    """The NDJSON lines of ``batch``, tokens ``done`` onwards of the reply."""
    encode = ChunkEncoder(job.request_id)
    if foreign_after is None or not done <= foreign_after < done + len(batch):
        return b"".join(map(encode, batch))
    # The injected fault: crossed wires, one chunk labelled with another request's id.
    lines = [encode(token) for token in batch]
    at = foreign_after - done
    lines[at] = chunk_line("foreign-" + job.request_id, batch[at])
    return b"".join(lines)


def log_end(
    job: WorkRequest, outcome: str, started: float, text: str, tokens: int,
    error: str | None = None,
) -> None:
    if outcome == OUTCOME_ERROR:
        # A reply that ended with an in-band error went out as a 200: without this the
        # requests metric would count it ok, unlike worker.end.
        annotate_request(outcome_override=outcome)
    events.info(
        WORKER_END, event=WORKER_END, outcome=outcome,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
        fp_out=fingerprint(text), tokens=tokens, endpoint=job.endpoint, error=error,
    )


async def paced_reply(
    job: WorkRequest, engine: EchoEngine, config: WorkerSettings, drain: Drain
) -> AsyncIterator[bytes]:
    """A paced reply: one write per batch of ready tokens, the done line with the last."""
    started = time.perf_counter()
    produced: list[str] = []
    outcome = OUTCOME_ERROR
    error: str | None = None
    tokens, finish_reason = echo_tokens(job.prompt, job.max_tokens, job.stop, job.json_schema)
    # The batch that ends the reply is held, so it goes out in the same write as the
    # done line; every other one is written as soon as it exists. (Holding each batch
    # until the next existed delayed the first token by a token delay, and a hung
    # engine's last token forever.)
    held = b""
    stop = StopOnDrain()
    drain.hold(stop)
    try:
        batches = aiter(engine.batches(job.prompt, job.max_tokens, job.stop, job.json_schema))
        while True:
            try:
                batch = await stop.wait(anext(batches))
            except StopAsyncIteration:
                break
            line = _encode(job, batch, len(produced), config.foreign_chunk_after)
            produced.extend(batch)
            if len(produced) < len(tokens):
                yield line
            else:
                held = line
        yield held + _done(job, finish_reason, len(produced))
        outcome = OUTCOME_OK
    except Stopped as exc:
        # The server is stopping: the frontend gets an error line it reports as a worker
        # failure, not a body cut short when uvicorn's shutdown timeout cancels us.
        error = str(exc)
        yield held + error_line(job.request_id, error)
    except (asyncio.CancelledError, GeneratorExit):
        outcome = OUTCOME_CANCELLED
        raise
    except Exception as exc:  # the engine failed: tell the frontend in-band
        events.exception("worker engine failed", event=WORKER_ERROR)
        yield error_line(job.request_id, f"engine error: {exc}")
    finally:
        drain.release(stop)
        log_end(job, outcome, started, "".join(produced), len(produced), error)
