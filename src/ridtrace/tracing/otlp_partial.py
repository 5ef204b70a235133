"""What a collector's partial success says (OTLP's ``partial_success``: the spans or data
points it rejected, too large, too old, over a quota, or a warning about an export it
took whole), logged as a WARN with its reason.

Neither OTLP exporter library reads it: the HTTP one never reads the answer's body, the
gRPC one drops the answer. Those spans were lost without a word and the export counted
as a full success, where the OpenTelemetry Collector's and Go's exporters log them.
"""

from __future__ import annotations

import logging
from typing import Any

from ridtrace.tracing.otlp_endpoints import shown_endpoint

__all__ = ["say_partial_success", "watch_grpc_answers"]

# What each signal's rejected items are called, and the longest reason quoted.
_ITEMS = {"traces": "spans", "metrics": "data points"}
_REASON_CHARACTERS = 500


def say_partial_success(signal: str, endpoint: str, answer: Any) -> None:
    """Log what ``answer`` (an ``Export*ServiceResponse``) from ``endpoint`` says: items
    rejected, or (none rejected) the collector's warning. A full success says nothing."""
    partial = answer.partial_success
    rejected = next((value for field, value in partial.ListFields()
                     if field.name.startswith("rejected_")), 0)
    reason = partial.error_message[:_REASON_CHARACTERS]
    where = shown_endpoint(endpoint)
    if rejected:
        logging.getLogger(__name__).warning(
            "OTLP endpoint %s rejected %d %s of an export: %s", where, rejected,
            _ITEMS[signal], reason or "no reason given")
    elif reason:
        logging.getLogger(__name__).warning(
            "OTLP endpoint %s accepted an export and says: %s", where, reason)


def watch_grpc_answers(exporter: Any, signal: str, endpoint: str) -> None:
    """Have an OTLP/gRPC ``exporter`` say each answer's partial success.

    The exporter calls its stub's ``Export`` and drops the answer; its stub is wrapped
    (and the wrapper kept for the channel it builds anew after UNAVAILABLE). An exporter
    without the stub attributes of the library release this was written against is
    left as it is.
    """
    stub_class: Any = getattr(exporter, "_stub", None)
    channel = getattr(exporter, "_channel", None)
    if stub_class is None or channel is None or not hasattr(exporter, "_client"):
        return

    class WatchedStub:
        def __init__(self, channel: Any) -> None:
            self._stub = stub_class(channel)

        def Export(self, *args: Any, **kwargs: Any) -> Any:  # the stub method's name
            answer = self._stub.Export(*args, **kwargs)
            say_partial_success(signal, endpoint, answer)
            return answer

    exporter._stub = WatchedStub
    exporter._client = WatchedStub(channel)
