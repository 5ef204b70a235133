"""A process forked inside a request is no part of it."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest

from ridtrace.tracing import context
from ridtrace.tracing.context import RequestContext, current_request_id, line_context


def _ids_seen_in_the_pool() -> tuple[str | None, bool]:
    return current_request_id(), line_context() is not None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_process_pool_started_in_a_request_names_no_request() -> None:
    # A ProcessPoolExecutor forks its workers at its first submit(), inside the request
    # that made it: every later request's task then logged the first request's ids.
    first = RequestContext(request_id="first", trace_id="a" * 32, span_id="b" * 16)
    second = RequestContext(request_id="second", trace_id="c" * 32, span_id="d" * 16)
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        token = context.enter(first)
        try:
            in_first = pool.submit(_ids_seen_in_the_pool).result(timeout=60)
        finally:
            context.leave(token)
        token = context.enter(second)
        try:
            in_second = pool.submit(_ids_seen_in_the_pool).result(timeout=60)
        finally:
            context.leave(token)
    assert in_first == in_second == (None, False)
    assert current_request_id() is None  # the parent's own context is untouched
