"""Span limits (``OTEL_SPAN_*`` / ``OTEL_ATTRIBUTE_*``) read from the mapping given.

The SDK's ``SpanLimits()`` reads these variables from ``os.environ`` alone, and falls
back to it for any limit not passed explicitly: ``configure_tracing(environ=mapping)``
applied the process's limits and ignored the mapping's. Every limit is passed here,
the SDK's defaults included, so the process environment is never consulted.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.sdk.trace import SpanLimits

__all__ = ["span_limits"]

_DEFAULT_COUNT = 128  # the SDK's default for every count limit


def span_limits(env: Mapping[str, str]) -> SpanLimits:
    """The limits ``env`` sets, with the SDK's defaults and fallbacks for the rest: a
    count or length of its own per kind, else the ``OTEL_ATTRIBUTE_*`` one, else 128
    attributes, events and links and no length limit. ``unset`` lifts a limit."""
    shared_count = _limit(env, "OTEL_ATTRIBUTE_COUNT_LIMIT")
    if shared_count is None or shared_count == SpanLimits.UNSET:
        shared_count = _DEFAULT_COUNT  # as the SDK: the shared count unset is its default
    shared_length = _limit(env, "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
    if shared_length is None:
        shared_length = SpanLimits.UNSET  # no limit, the SDK's default

    def own(name: str, fallback: int) -> int:
        value = _limit(env, name)
        return fallback if value is None else value

    return SpanLimits(
        max_attributes=shared_count,
        max_events=own("OTEL_SPAN_EVENT_COUNT_LIMIT", _DEFAULT_COUNT),
        max_links=own("OTEL_SPAN_LINK_COUNT_LIMIT", _DEFAULT_COUNT),
        max_span_attributes=own("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", shared_count),
        max_event_attributes=own("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", shared_count),
        max_link_attributes=own("OTEL_LINK_ATTRIBUTE_COUNT_LIMIT", shared_count),
        max_attribute_length=shared_length,
        max_span_attribute_length=own("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", shared_length),
    )


def _limit(env: Mapping[str, str], name: str) -> int | None:
    """``name``'s limit, ``SpanLimits.UNSET`` for ``unset``, None when absent or empty;
    anything else but a non-negative integer raises ValueError naming it, as the SDK does."""
    given = env.get(name, "").strip().lower()
    if not given:  # empty is unset, as the specification says
        return None
    if given == "unset":
        return SpanLimits.UNSET
    try:
        value = int(given)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer but got {env[name]!r}")
    return value
