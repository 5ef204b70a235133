"""Prometheus series an alert can rely on, scraped from real `ridtrace serve` processes.

A counter that first appears at 1 shows no increase: `increase(x[5m]) > 0` stayed
silent on the first refused duplicate or foreign chunk after every restart. And every
request is counted under the route it was for: a key refusal never reached the
router, a scrape was served by a plain route, and both were counted as "unmatched".
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.frontend_plugin.conftest import Stack, start_stack

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
KEY = "sk-series"


def _scrape(url: str) -> Samples:
    text = httpx.get(url + "/metrics", timeout=10).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _series(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """``name``'s samples by their own labels (not the exporter's job, instance, scope)."""
    return {
        frozenset((k, v) for k, v in labels if k not in ("job", "instance")
                  and not k.startswith("otel_scope_")): value
        for (n, labels), value in samples.items() if n == name
    }


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A stack with an API key and a worker token, shared by the two tests below: the
    second counts only 401s, which none of the first one's zero series counts."""
    with start_stack(
        tmp_path_factory.mktemp("keyed"), workers=[["--worker-token", "wt"]],
        frontend=["--api-key", KEY, "--worker-token", "wt"], debug_endpoints=False,
    ) as stack:
        yield stack


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A default stack (no debug routes) for the scrape-format tests: each only scrapes
    /metrics, every scrape of them a 200 (a stack start is ~2.6 CPU-s of imports)."""
    with start_stack(tmp_path_factory.mktemp("plain"), workers=[[]],
                     debug_endpoints=False) as stack:
        yield stack


def test_counters_are_reported_at_zero_before_anything_happens(keyed: Stack) -> None:
    stack = keyed
    front, back = _scrape(stack.url), _scrape(stack.workers[0].url)
    # HEAD is what GET is, without the body (RFC 9110 9.3.2), as on /health: it was
    # refused 405 on /metrics, so an uptime check by HEAD saw the endpoint down.
    for url in (stack.url, stack.workers[0].url):
        head = httpx.head(url + "/metrics", timeout=10)
        assert (head.status_code, head.content) == (200, b""), url
        assert head.headers["content-type"].startswith("text/plain")
    side = {"frontend": frozenset({("side", "frontend")}),
            "worker": frozenset({("side", "worker")})}
    assert _series(front, "ridtrace_duplicate_refused_total") == {side["frontend"]: 0}
    assert _series(front, "ridtrace_inflight") == {side["frontend"]: 0}
    assert _series(front, "ridtrace_conflict_retries_total") == {frozenset(): 0}
    assert _series(front, "ridtrace_foreign_chunks_refused_total") == {frozenset(): 0}
    assert _series(front, "ridtrace_deprecated_header_requests_total") == {
        frozenset({("header", "x-dynamo-request-id")}): 0,
        frozenset({("header", "request-id")}): 0,
    }
    assert _series(front, "ridtrace_client_id_rejected_total") == {
        frozenset({("reason", r)}): 0 for r in ("empty", "too_long", "not_printable_ascii")
    }
    assert _series(back, "ridtrace_duplicate_refused_total") == {side["worker"]: 0}
    assert _series(back, "ridtrace_inflight") == {side["worker"]: 0}


def test_refusals_and_scrapes_are_counted_under_their_route(keyed: Stack) -> None:
    stack = keyed
    worker = stack.workers[0].url
    refused = httpx.post(stack.url + "/v1/chat/completions", json={}, timeout=10)
    assert refused.status_code == 401
    assert httpx.post(worker + "/v1/work", content=b"{}", timeout=10).status_code == 401
    scrape = frozenset({("route", "/metrics"), ("outcome", "ok")})
    deadline = time.monotonic() + 10
    # A scrape is counted once it has ended: the first shows in a later one.
    while scrape not in _series(front := _scrape(stack.url), "ridtrace_requests_total"):
        assert time.monotonic() < deadline, "scrapes never counted"
    back = _scrape(worker)
    requests = _series(front, "ridtrace_requests_total")
    chat = frozenset({("route", "/v1/chat/completions"), ("outcome", "unauthorized")})
    assert requests[chat] == 1
    assert not [labels for labels in requests if ("route", "unmatched") in labels]
    work = frozenset({("route", "/v1/work"), ("outcome", "unauthorized")})
    assert _series(back, "ridtrace_requests_total")[work] == 1


def test_a_workers_refusals_and_failed_replies_count_as_they_are_logged(tmp_path: Path) -> None:
    # A Conflict (409) and a reply that ended with an in-band error (a 200) were both
    # counted outcome="ok" in the worker's ridtrace_requests_total.
    import asyncio

    import orjson

    envelope = {"request_id": "held-1", "x_request_id": None, "endpoint": "generate",
                "model": "echo", "prompt": "one two three", "max_tokens": 3}
    with start_stack(tmp_path, workers=[["--gate", "--debug-endpoints"]],
                     debug_endpoints=False) as stack:
        worker = stack.workers[0].url

        async def main() -> tuple[int, int]:
            async with httpx.AsyncClient(base_url=worker, timeout=30) as client:
                first = asyncio.create_task(client.post("/v1/work", content=orjson.dumps(envelope)))
                while (await client.get("/debug/inflight")).json()["inflight"] < 1:
                    await asyncio.sleep(0.01)  # polling a condition: the first is held
                second = await client.post("/v1/work", content=orjson.dumps(envelope))
                await client.post("/debug/gate/open")
                return (await first).status_code, second.status_code

        assert asyncio.run(main()) == (200, 409)
        back = _scrape(worker)
    requests = _series(back, "ridtrace_requests_total")
    assert requests[frozenset({("route", "/v1/work"), ("outcome", "conflict")})] == 1
    assert requests[frozenset({("route", "/v1/work"), ("outcome", "ok")})] == 1
    refused = [x for x in stack.workers[0].lines() if x.get("event") == "worker.refused"]
    assert [x["outcome"] for x in refused] == ["conflict"]


# What Prometheus 3 sends by default (its scrape_protocols, most wanted first).
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
    "application/openmetrics-text;version=0.0.1;q=0.5,"
    "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,"
    "text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
)


def test_a_scraper_gets_the_exposition_format_it_asks_for(plain: Stack) -> None:
    # GET /metrics answered Prometheus text 1.0.0 whatever the scraper's Accept said:
    # Prometheus asks for OpenMetrics first (whose `# EOF` tells a whole scrape from a
    # cut one), and a scraper that takes only text 0.0.4 was answered 1.0.0.
    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as openmetrics_families,
    )

    stack = plain
    for url in (stack.url, stack.workers[0].url):
        scrape = httpx.get(url + "/metrics", headers={"accept": PROMETHEUS_ACCEPT},
                           timeout=10)
        media_type = scrape.headers["content-type"].partition(";")[0]
        assert media_type == "application/openmetrics-text", url
        assert "accept" in scrape.headers.get("vary", "").lower()
        families = {f.name: f for f in openmetrics_families(scrape.text)}  # strict
        assert families["ridtrace_inflight"].type == "gauge"
        assert families["ridtrace_duplicate_refused"].type == "counter"
        assert {s.name for s in families["ridtrace_duplicate_refused"].samples} == {
            "ridtrace_duplicate_refused_total"}
        head = httpx.head(url + "/metrics", headers={"accept": PROMETHEUS_ACCEPT},
                          timeout=10)
        assert head.headers["content-type"] == scrape.headers["content-type"]
        old = httpx.get(url + "/metrics", headers={"accept": "text/plain;version=0.0.4"},
                        timeout=10)
        assert "version=0.0.4" in old.headers["content-type"]
        assert "ridtrace_inflight" in {f.name for f in text_string_to_metric_families(old.text)}


def test_a_scrape_that_accepts_gzip_gets_it_compressed(plain: Stack) -> None:
    # Prometheus sends `Accept-Encoding: gzip` with every scrape and prometheus_client's
    # own handlers answer it compressed; /metrics answered the whole text uncompressed.
    import gzip

    stack = plain
    for url in (stack.url, stack.workers[0].url):
        with httpx.Client(timeout=10) as client:
            asked = {"accept-encoding": "gzip", "accept": PROMETHEUS_ACCEPT}
            with client.stream("GET", url + "/metrics", headers=asked) as scrape:
                raw = b"".join(scrape.iter_raw())
            assert scrape.headers.get("content-encoding") == "gzip", url
            assert int(scrape.headers["content-length"]) == len(raw)
            vary = {v.strip().lower() for v in scrape.headers["vary"].split(",")}
            assert {"accept", "accept-encoding"} <= vary
            text = gzip.decompress(raw).decode()
            assert text.endswith("# EOF\n") and "ridtrace_inflight" in text
            head = client.head(url + "/metrics", headers=asked)
            assert head.headers.get("content-encoding") == "gzip"
            for refused in ("identity", "gzip;q=0, identity", "br"):
                plain = client.get(url + "/metrics", headers={"accept-encoding": refused})
                assert "content-encoding" not in plain.headers, refused
                assert "ridtrace_inflight" in plain.text


def test_a_malformed_accept_gets_the_default_format_not_a_server_error(plain: Stack) -> None:
    # prometheus_client's format negotiation raises TypeError on a version it cannot
    # read ("version=bogus", "1.x.0"): the scrape was a 500 with a traceback logged at
    # ERROR, and any client could push the error-ratio panel up with such a header.
    accepts = ("application/openmetrics-text; version=bogus", "text/plain; version=1.x.0")
    ok = frozenset({("route", "/metrics"), ("outcome", "ok")})
    stack = plain
    for url in (stack.url, stack.workers[0].url):
        for accept in accepts:
            scrape = httpx.get(url + "/metrics", headers={"accept": accept}, timeout=10)
            assert scrape.status_code == 200, (url, accept, scrape.text)
            assert scrape.headers["content-type"].startswith("text/plain; version=0.0.4")
            assert "ridtrace_inflight" in {
                f.name for f in text_string_to_metric_families(scrape.text)}
        deadline = time.monotonic() + 10
        # A scrape is counted once it has ended: both show in a later one.
        while _series(samples := _scrape(url), "ridtrace_requests_total").get(ok, 0) < 2:
            assert time.monotonic() < deadline, "scrapes never counted"
        outcomes = {dict(labels)["outcome"] for labels in
                    _series(samples, "ridtrace_requests_total")
                    if ("route", "/metrics") in labels}
        assert outcomes == {"ok"}, url
    ends = stack.frontend.wait_for_lines(
        lambda x: x.get("event") == "request.end" and x.get("route") == "/metrics", 3)
    assert {(x["status"], x["outcome"]) for x in ends} == {(200, "ok")}
    assert not [x for x in stack.frontend.lines() if x.get("level") == "ERROR"]
