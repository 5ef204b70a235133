"""Which spans an id given to `ridtrace trace` points at (`views.trace_model`)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ridtrace.forensics.views import jaeger_ids

__all__ = ["matching_spans"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


def matching_spans(requests: pd.DataFrame, events: pd.DataFrame, ident: str) -> np.ndarray:
    """The spans `ident` names, as a mask over `requests`: its request_id, x_request_id,
    span_id or trace_id as logged; else its trace or span id as Jaeger writes ids; else
    its request_id or x_request_id as a UUID whatever its case; else a request id logged
    on a span's line that the span did not end with. When none, the same for `ident`
    without the spaces around it: an id pasted with a space (``ridtrace trace " ID"``)
    found nothing, while a client id may hold spaces of its own."""
    hit = _matching(requests, events, ident)
    bare = ident.strip()
    if not hit.any() and bare and bare != ident:
        hit = _matching(requests, events, bare)
    return hit


def _matching(requests: pd.DataFrame, events: pd.DataFrame, ident: str) -> np.ndarray:
    hit = (
        (requests["request_id"] == ident).fillna(False)
        | (requests["x_request_id"] == ident).fillna(False)
        | (requests["span_id"] == ident).fillna(False)
        # The id Jaeger shows, and the one `export jaeger` files each request under.
        | (requests["trace_id"] == ident).fillna(False)
    ).to_numpy()
    # The response id a caller's SDK shows is the server's, beside any client's id: a
    # client that sent another call's `chatcmpl-…` as its x-request-id (chaining calls
    # by it) hid the request that answered it, which was tried only when nothing matched.
    hit = hit | _response_id_match(requests, ident)
    if not hit.any():
        hit = _jaeger_ids_match(requests, ident)
    if not hit.any():
        hit = _uuid_match(requests, ident)
    if not hit.any():
        hit = _logged_under(requests, events, ident)
    return hit


# Ids the frontend's answers carry, made from the request id (`frontend_plugin.routes`):
# OpenAI's `chatcmpl-ID` / `cmpl-ID`, and `msg_HEX` / `resp_HEX` (Anthropic's message,
# OpenAI's Responses) with the id's dashes left out. An SDK shows the caller these.
_RESPONSE_ID = re.compile(r"(chatcmpl-|cmpl-)(?P<id>.+)|(msg_|resp_)(?P<hex>[^-]+)", re.DOTALL)


def _response_id_match(requests: pd.DataFrame, ident: str) -> np.ndarray:
    """Spans whose request_id made the response id `ident`: the id a caller's SDK shows
    (``completion.id``, ``message.id``) found "no request"."""
    found = _RESPONSE_ID.fullmatch(ident)
    if found is None:
        return np.zeros(len(requests), dtype=bool)
    ids = requests["request_id"].astype("string")
    if found["id"] is not None:
        hit = ids == found["id"]
    else:
        hit = ids.str.replace("-", "", regex=False) == found["hex"]
    return np.asarray(hit.fillna(False).to_numpy(dtype=bool), dtype=bool)


def _jaeger_ids_match(requests: pd.DataFrame, ident: str) -> np.ndarray:
    """Spans whose trace or span id is `ident` as Jaeger reads ids: an id logged as
    ``DEADBEEF`` is ``00000000deadbeef`` in Jaeger's UI, where the operator copies it.

    `ident` is read as Jaeger reads it too, a hex number whatever its case, zeros or
    ``0x``: Jaeger finds ``F81E…`` as the trace ``f81e…``, and the id copied from an
    upper-case log or a 16-digit trace id padded to 32 found nothing here.
    """
    digits = jaeger_ids.significant_digits(ident)
    if digits is None or len(digits) > max(jaeger_ids.TRACE_WIDTHS):
        return np.zeros(len(requests), dtype=bool)
    trace = requests["trace_id"].astype("object")
    span = requests["span_id"].astype("object")
    as_trace = jaeger_ids.trace_id(ident)
    hit = trace.map(lambda t: isinstance(t, str) and jaeger_ids.trace_id(t) == as_trace)
    if len(digits) <= jaeger_ids.SPAN_WIDTH:
        as_span = jaeger_ids.span_id(ident)
        hit |= span.map(lambda s: isinstance(s, str) and jaeger_ids.span_id(s) == as_span)
    return np.asarray(hit.to_numpy(dtype=bool), dtype=bool)


def _uuid_match(requests: pd.DataFrame, ident: str) -> np.ndarray:
    """Spans whose request_id or x_request_id is the UUID `ident` in another case: RFC
    9562 reads a UUID's hex digits whatever their case, and a tool or ticket that showed
    the server's id upper case found "no request". Other ids keep their case."""
    if not _UUID.fullmatch(ident):
        return np.zeros(len(requests), dtype=bool)
    hit = np.zeros(len(requests), dtype=bool)
    for column in ("request_id", "x_request_id"):
        hit |= _same_id(requests[column], ident)
    return hit


def _same_id(ids: pd.Series, ident: str) -> np.ndarray:
    """Which of `ids` are `ident`: a UUID whatever its case (RFC 9562), others as spelt."""
    if _UUID.fullmatch(ident):
        same = ids.astype("string").str.lower() == ident.lower()
    else:
        same = ids == ident
    return np.asarray(same.fillna(False).to_numpy(dtype=bool), dtype=bool)


def _logged_under(requests: pd.DataFrame, events: pd.DataFrame, ident: str) -> np.ndarray:
    """Spans with a line logged under the request id `ident` that they did not end with:
    under the legacy id policy `request.start` logs a minted id and the later lines the
    client's, the id the request is judged by, so the minted id an operator read in the
    log found "no request". A UUID in any case, as `_uuid_match` reads it: the minted
    id the client got in x-server-request-id, quoted upper case, found none."""
    lines = events[_same_id(events["request_id"], ident)]
    if lines.empty:
        return np.zeros(len(requests), dtype=bool)
    logged = pd.MultiIndex.from_arrays([lines["trace_id"].astype(object),
                                        lines["span_id"].astype(object)])
    spans = pd.MultiIndex.from_arrays([requests["trace_id"].astype(object),
                                       requests["span_id"].astype(object)])
    return np.asarray(spans.isin(logged), dtype=bool)
