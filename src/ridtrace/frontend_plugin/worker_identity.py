"""A worker's request takes the frontend request's identity: its lines and its span carry
the ids the envelope names, and the baggage entries the worker is set to record."""

from __future__ import annotations

from opentelemetry import baggage

from ridtrace.frontend_plugin.wire import WorkRequest
from ridtrace.tracing import current_context, validate_client_id
from ridtrace.tracing.identity import DEFAULT_MAX_CLIENT_ID_LENGTH, adopted_client_id

__all__ = ["adopt_identity"]


def adopt_identity(
    job: WorkRequest, baggage_names: tuple[str, ...], max_id_length: int
) -> bool:
    """Write this hop's lines, and name its span, under the frontend request's ids.

    The client's id is held to the worker's ``max_client_id_length`` (never below the
    default, as the envelope's ids): a frontend set for longer ids sends them on, and a
    fixed 128 here dropped them from every line. One that fails it is dropped, as the
    middleware drops a client's bad header: returns whether it was.
    """
    ctx = current_context()
    if ctx is None:
        return False
    ctx.request_id = job.request_id
    # Its answer names it too (x-server-request-id): the minted id it replaces is on no
    # line. Without the blanks a legacy key may have: a header value cannot start with one.
    ctx.answered_as = job.request_id.strip(" ") or None
    limit = max(max_id_length, DEFAULT_MAX_CLIENT_ID_LENGTH)
    # As the middleware reads the header: the blanks around an id are not part of it
    # (stripped before its length is checked), and blanks alone are no id (echoed and
    # logged as sent, they were an id no frontend logs).
    sent = job.x_request_id
    ctx.x_request_id = adopted_client_id(sent, limit) if sent is not None else None
    refused = sent is not None and ctx.x_request_id is None
    span = ctx.server_span
    if span is None or not span.is_recording():
        return refused
    attributes: dict[str, str | bool] = {"request_id": job.request_id}
    if ctx.x_request_id is not None:
        attributes["x_request_id"] = ctx.x_request_id
    for name in baggage_names:
        # Baggage is the caller's text: vetted like a client id before it goes on a span.
        value = baggage.get_baggage(name)
        checked = validate_client_id(_entry_value(value)) if isinstance(value, str) else None
        if checked is not None:
            attributes["baggage." + name] = checked
    if refused:
        attributes["x_request_id_rejected"] = True
    span.set_attributes(attributes)  # one call: the SDK takes its lock once
    return refused


def _entry_value(extracted: str) -> str:
    """The W3C value of a baggage entry OpenTelemetry extracted: what comes before its
    properties (``acme;region=eu``), blanks around it trimmed.

    The propagator keeps the properties in the value it returns (and the frontend's hop
    sends them on inside it); a raw ``;`` is no value character, so the first one ends
    the value. A value holding a percent-encoded ``;`` is cut there too: decoded, the two
    no longer differ.
    """
    return extracted.partition(";")[0].strip()
