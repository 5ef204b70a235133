"""ridtrace's metrics (DESIGN.md, docs/metrics.md), through the OpenTelemetry metrics API.

Call sites only import this module and call one function; each is a module-global
load and a ``None`` check until a meter provider is bound, so services that export no
metrics pay nothing measurable (benchmarks/bench_tracing.py). A provider is bound by
:func:`ridtrace.tracing.configure_metrics`, by :func:`bind_meter_provider`, or, when a
middleware or interceptor is built, by adopting the global provider an application
set up itself.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

from ridtrace import __version__

__all__ = [
    "INSTRUMENT_NAMES",
    "UNMATCHED_ROUTE",
    "Instruments",
    "Tally",
    "adopt_global_meter_provider",
    "bind_meter_provider",
    "client_id_rejected",
    "conflict_retry",
    "declare_series",
    "deprecated_header_sent",
    "duplicate_refused",
    "foreign_chunk_refused",
    "inflight_changed",
    "instruments",
    "request_finished",
]

REQUESTS = "ridtrace.requests"
# ``route`` of ridtrace.requests for an HTTP request no route matched, or a gRPC call to
# a method the server does not have: the raw path would let any client grow the
# metric's cardinality without bound.
UNMATCHED_ROUTE = "unmatched"
INFLIGHT = "ridtrace.inflight"
DUPLICATE_REFUSED = "ridtrace.duplicate_refused"
CONFLICT_RETRIES = "ridtrace.conflict_retries"
FOREIGN_CHUNKS_REFUSED = "ridtrace.foreign_chunks_refused"
DEPRECATED_HEADER_REQUESTS = "ridtrace.deprecated_header.requests"
CLIENT_ID_REJECTED = "ridtrace.client_id_rejected"
INSTRUMENT_NAMES = (
    REQUESTS, INFLIGHT, DUPLICATE_REFUSED, CONFLICT_RETRIES, FOREIGN_CHUNKS_REFUSED,
    DEPRECATED_HEADER_REQUESTS, CLIENT_ID_REJECTED,
)
# The reasons a client id is not used (the ``reason`` attribute).
REASON_EMPTY = "empty"
REASON_TOO_LONG = "too_long"
REASON_NOT_PRINTABLE_ASCII = "not_printable_ascii"
REASON_BINARY = "binary"
# The reasons an HTTP header or a body id is refused for (gRPC adds REASON_BINARY).
TEXT_REASONS = (REASON_EMPTY, REASON_TOO_LONG, REASON_NOT_PRINTABLE_ASCII)


class Tally:
    """Counts per attribute values, kept in plain Python and read by the SDK at collection.

    ridtrace's instruments are the asynchronous kind (observable counter, observable
    up-down counter) over these tallies rather than synchronous ones: an SDK
    ``Counter.add`` with two attributes measured about 30 µs on this project's machine
    (attribute cleaning, hashing, a measurement object per call), a tally's ``add``
    well under 1 µs, and the exported data (a cumulative sum, monotonic or not) is the
    same. The lock keeps counts exact when several threads serve requests.
    """

    __slots__ = ("_lock", "_names", "_values")

    def __init__(self, *names: str) -> None:
        self._names = names
        self._values: dict[tuple[str, ...], int] = {}
        self._lock = threading.Lock()

    def add(self, amount: int, *key: str) -> None:
        """Add ``amount`` to the series of these attribute values (in ``names`` order)."""
        with self._lock:
            self._values[key] = self._values.get(key, 0) + amount

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        """The SDK's callback: one observation per series."""
        with self._lock:
            items = list(self._values.items())
        names = self._names
        return [Observation(value, dict(zip(names, key, strict=True))) for key, value in items]


class Instruments:
    """The seven instruments of one bound meter, with the tallies they report."""

    __slots__ = (
        "client_id_rejected",
        "conflict_retries",
        "deprecated_header_requests",
        "duplicate_refused",
        "foreign_chunks_refused",
        "inflight",
        "requests",
    )

    def __init__(self, meter: Meter) -> None:
        self._make_tallies()
        for slot, keys in _declared.items():
            tally: Tally = getattr(self, slot)
            for key in keys:
                tally.add(0, *key)
        self._register(meter)

    def _make_tallies(self) -> None:
        self.requests = Tally("route", "outcome")
        self.inflight = Tally("side")
        self.duplicate_refused = Tally("side")
        self.conflict_retries = Tally()
        self.foreign_chunks_refused = Tally()
        self.deprecated_header_requests = Tally("header")
        self.client_id_rejected = Tally("reason")

    def _register(self, meter: Meter) -> None:
        for name, tally, unit, description in (
            (REQUESTS, self.requests, "{request}",
             "Requests served, by route template and outcome."),
            (DUPLICATE_REFUSED, self.duplicate_refused, "{request}",
             "Requests refused because their id was already in flight."),
            (CONFLICT_RETRIES, self.conflict_retries, "{attempt}",
             "Dispatch attempts a worker refused with Conflict (409)."),
            (FOREIGN_CHUNKS_REFUSED, self.foreign_chunks_refused, "{chunk}",
             "Worker chunks labelled with another request's id, not forwarded."),
            (DEPRECATED_HEADER_REQUESTS, self.deprecated_header_requests, "{request}",
             "Requests that sent a deprecated request-id header, by header."),
            (CLIENT_ID_REJECTED, self.client_id_rejected, "{request}",
             "Client correlation ids not used, by reason."),
        ):
            meter.create_observable_counter(
                name, callbacks=[tally.observe], unit=unit, description=description
            )
        meter.create_observable_up_down_counter(
            INFLIGHT, callbacks=[self.inflight.observe], unit="{request}",
            description="Entries in the in-flight table, by side (frontend / worker).",
        )


_active: Instruments | None = None
_bound_to: MeterProvider | None = None
_lock = threading.Lock()
# The instruments made on each provider bound so far (`bind_meter_provider`).
_made_for: weakref.WeakKeyDictionary[MeterProvider, Instruments] = weakref.WeakKeyDictionary()
# Series reported from start-up at 0, by `Instruments` slot. A counter that first
# appears at 1 has no increase to show: `increase(x[5m]) > 0` would stay silent on the
# first refused duplicate or foreign chunk after every restart.
_declared: dict[str, set[tuple[str, ...]]] = {}


def declare_series(slot: str, *key: str) -> None:
    """Report the series ``key`` of the instrument in ``slot`` from now on, at 0 until
    counted: called by what will count it (a registry for its side, a middleware for
    its deprecated headers and refusal reasons, a frontend for its retries)."""
    with _lock:
        _declared.setdefault(slot, set()).add(key)
        active = _active
    if active is not None:
        getattr(active, slot).add(0, *key)


def bound_provider() -> MeterProvider | None:
    """The meter provider ridtrace's metrics are recorded on, or ``None``."""
    return _bound_to


def instruments() -> Instruments | None:
    """The instruments metrics are recorded on, or ``None`` when none is bound."""
    return _active


def bind_meter_provider(provider: MeterProvider | None) -> Instruments | None:
    """Record ridtrace's metrics on ``provider`` from now on (``None``: stop recording).

    A provider bound before gets the instruments made for it then: its meter hands back
    the observable counters it has, whose callbacks read the first tallies, and drops
    new ones of the same name without a word. Bound again (``configure_metrics`` once per
    app, on a provider the application set), every count went to tallies nothing read.
    """
    global _active, _bound_to
    with _lock:
        _bound_to = provider
        if provider is None:
            _active = None
            return None
        made = _made_for.get(provider)
        if made is None:
            # The version names the release whose counting rules the series follow.
            made = _made_for[provider] = Instruments(provider.get_meter("ridtrace", __version__))
        _active = made
        return _active


def adopt_global_meter_provider() -> None:
    """Bind the global meter provider if the application set a real one and none is bound.

    Called when a middleware or interceptor is built. The API's proxy and no-op
    providers record nothing, so they are not bound: the call sites stay at a ``None``
    check.
    """
    if _active is not None:
        return
    provider = metrics.get_meter_provider()
    if type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider"):
        return
    bind_meter_provider(provider)


# -- call sites ------------------------------------------------------------------------


def request_finished(route: str, outcome: str) -> None:
    """One request ended (HTTP route template or gRPC full method)."""
    active = _active
    if active is not None:
        active.requests.add(1, route, outcome)


def inflight_changed(side: str, delta: int) -> None:
    """An in-flight table gained (+1) or lost (-1) an entry."""
    active = _active
    if active is not None:
        active.inflight.add(delta, side)


def duplicate_refused(side: str) -> None:
    """An in-flight table refused an id it already held."""
    active = _active
    if active is not None:
        active.duplicate_refused.add(1, side)


def conflict_retry() -> None:
    """A worker answered Conflict to a dispatch attempt."""
    active = _active
    if active is not None:
        active.conflict_retries.add(1)


def foreign_chunk_refused() -> None:
    """A chunk labelled with another request's id was not forwarded."""
    active = _active
    if active is not None:
        active.foreign_chunks_refused.add(1)


def deprecated_header_sent(header: str) -> None:
    """A request sent the deprecated id header ``header``."""
    active = _active
    if active is not None:
        active.deprecated_header_requests.add(1, header)


def client_id_rejected(reason: str) -> None:
    """A client correlation id was not used (see :func:`rejection_reason`)."""
    active = _active
    if active is not None:
        active.client_id_rejected.add(1, reason)


def rejection_reason(raw: bytes | str, max_length: int) -> str:
    """Why :func:`~ridtrace.tracing.identity.validate_client_id` refused ``raw``."""
    if not raw:
        return REASON_EMPTY
    if len(raw) > max_length:
        return REASON_TOO_LONG
    return REASON_NOT_PRINTABLE_ASCII
