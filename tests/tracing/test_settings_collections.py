"""Settings that take a collection or an id generator refuse what would misbehave on
every request, when they are built.

`TracingSettings(deprecated_headers=("x-legacy-id"))` (no comma) was one string: each
character was a header name, an innocent `e: 1` header was logged as deprecated and
`x-legacy-id` was neither warned of nor recorded, so `audit` said clean. An
`id_generator` of `"uuid7"` (how RIDTRACE_ID_GENERATOR spells it) made every request a
500 with no log record; `lambda: ""` gave every request one id.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from ridtrace import RequestTracingMiddleware, TracingSettings
from ridtrace.frontend_plugin import FrontendSettings, WorkerSettings
from ridtrace.tracing import uuid7_id


@pytest.mark.parametrize(("build", "name"), [
    (lambda: TracingSettings(deprecated_headers="x-legacy-id"), "deprecated_headers"),
    (lambda: RequestTracingMiddleware(lambda *a: None, deprecated_headers="x-legacy-id"),
     "deprecated_headers"),
    (lambda: FrontendSettings(workers="http://127.0.0.1:8101"), "workers"),
    (lambda: WorkerSettings(baggage_attributes="tenant"), "baggage_attributes"),
])
def test_one_string_for_a_collection_is_refused(build: Callable[[], Any], name: str) -> None:
    with pytest.raises(TypeError, match=f"{name} takes a collection of values, not one string"):
        build()


def test_a_list_is_taken_as_the_tuple() -> None:
    assert TracingSettings(deprecated_headers=["x-legacy-id"]).deprecated_headers == (  # type: ignore[arg-type]
        "x-legacy-id",)


@pytest.mark.parametrize("generator", ["uuid7", None, 5])
def test_an_id_generator_that_is_no_function_is_refused(generator: object) -> None:
    with pytest.raises(TypeError, match="id_generator takes a function"):
        TracingSettings(id_generator=generator)  # type: ignore[arg-type]


@pytest.mark.parametrize(("generator", "said"), [
    (lambda: "", "returned ''"),
    (lambda: 5, "returned 5"),
    (lambda: "a\nb", "returned 'a\\\\nb'"),
    (lambda: "x" * 129, "1 to 128 printable"),
    (lambda: "always-this", "returned 'always-this' twice"),
])
def test_an_id_generator_that_mints_no_usable_ids_is_refused(
    generator: Callable[[], Any], said: str,
) -> None:
    with pytest.raises(ValueError, match=said):
        TracingSettings(id_generator=generator)


def test_working_generators_are_taken() -> None:
    counter = itertools.count()
    TracingSettings(id_generator=lambda: f"req-{next(counter)}")
    assert TracingSettings(id_generator=uuid7_id).id_generator is uuid7_id


@pytest.mark.parametrize("moment", [1_700_000_000, "2026-01-01T00:00:00Z"])
@pytest.mark.parametrize("setting", ["deprecation_at", "sunset_at"])
def test_a_deprecation_moment_that_is_no_datetime_is_refused(setting: str, moment: object) -> None:
    # It failed only on the first request with a deprecated header, as an AttributeError.
    with pytest.raises(TypeError, match=f"{setting} must be a datetime or None"):
        TracingSettings(**{setting: moment})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=f"{setting} must be a datetime or None"):
        RequestTracingMiddleware(lambda *a: None, **{setting: moment})
