"""Who received whose output: crossed streams and output that lost its caller.

Both rules compare fingerprints of content (docs/log-schema.md), never ids, so they
hold when ids collide — the case where ids cannot be trusted.
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from ridtrace.forensics.reading.schema import FRONTEND, WORKER
from ridtrace.forensics.rules.overlap import Evidence, _ev, findings_frame, present

_COLUMNS = [
    "trace_id", "span_id", "parent_span_id", "request_id", "x_request_id", "outcome", "fp_in",
    "fp_out", "start", "end", "file", "first_line", "last_line",
]


def _side(requests: pd.DataFrame, side: str, *, with_output: bool) -> pd.DataFrame:
    """One side's spans (narrow columns); with fp_in and fp_out if `with_output`."""
    mask = requests["side"].to_numpy() == side
    if with_output:
        mask &= requests["fp_in"].notna().to_numpy() & requests["fp_out"].notna().to_numpy()
    sub: pd.DataFrame = requests.loc[mask, _COLUMNS]
    return sub


def _works(requests: pd.DataFrame) -> pd.DataFrame:
    """Worker spans that produced output for a known input."""
    return _side(requests, WORKER, with_output=True)


def crossed_stream(requests: pd.DataFrame) -> pd.DataFrame:
    """Callers delivered output that a worker produced for a different input.

    A caller whose (fp_in, fp_out) pair matches some worker's own work got its own
    output, even if another prompt happened to produce the same text; identical
    prompts have identical fp_in and are never flagged.
    """
    works = _works(requests)
    front = _side(requests, FRONTEND, with_output=True)
    # Only a worker's *finished* output identifies it: the first tokens of different
    # replies can be equal, so partial output of a cancelled or failed stream is no proof.
    finished = works[(works["outcome"] == "ok").to_numpy()]
    if finished.empty or front.empty:
        return findings_frame("crossed_stream", [])
    # Cheap first: only outputs some worker produced can be someone else's.
    front = front[front["fp_out"].isin(finished["fp_out"]).to_numpy()]
    pair = "\x00"
    own = (front["fp_in"] + pair + front["fp_out"]).isin(works["fp_in"] + pair + works["fp_out"])
    suspects = front[~own.to_numpy()]
    if suspects.empty:
        return findings_frame("crossed_stream", [])
    producer = finished.drop_duplicates("fp_out").set_index("fp_out")
    rows = []
    for r in suspects.itertuples(index=False):
        w = producer.loc[r.fp_out]
        rows.append(
            {
                "request_id": r.request_id,
                "x_request_id": r.x_request_id,
                "span_id": r.span_id,
                "time": r.end,
                "detail": (
                    f"caller span {r.span_id} (fp_in {r.fp_in}) was delivered fp_out {r.fp_out}, "
                    f"produced by worker span {w['span_id']} for fp_in {w['fp_in']} "
                    f"(request_id {w['request_id']}, x_request_id {w['x_request_id']})"
                ),
                "evidence": _ev(r.file, r.first_line, r.last_line)
                + _ev(w["file"], w["first_line"], w["last_line"]),
            }
        )
    return findings_frame("crossed_stream", rows)


def _lost_output(requests: pd.DataFrame) -> pd.DataFrame:
    """Finished worker output that no frontend caller was delivered.

    Only judged where the frontend's logs for the trace are present (a worker log on
    its own proves nothing), and not when the caller itself went away.
    """
    front = _side(requests, FRONTEND, with_output=False)
    works = _works(requests)
    works = works[(works["outcome"] == "ok").fillna(False).to_numpy()]
    works = works[works["trace_id"].isin(front["trace_id"]).to_numpy()]
    works = works[~works["fp_out"].isin(front["fp_out"].dropna()).to_numpy()]
    cancelled = front.loc[(front["outcome"] == "cancelled").fillna(False).to_numpy(), "span_id"]
    return cast(pd.DataFrame, works[~works["parent_span_id"].isin(cancelled).to_numpy()])


def unlinked(requests: pd.DataFrame) -> pd.DataFrame:
    """Responses that lost their caller: Unlinked errors, foreign chunks, lost output."""
    rows: dict[str, dict[str, Any]] = {}
    flagged = requests[(requests["unlinked"].notna() | requests["foreign"].notna()).to_numpy()]
    for r in flagged.itertuples(index=False):
        if present(r.unlinked):
            detail = str(r.unlinked)
        else:
            detail = (
                f"a worker chunk for request {r.foreign} reached this caller's stream; "
                "it was not forwarded and the stream ended with an error"
            )
        line = r.unlinked_line if present(r.unlinked_line) else r.foreign_line
        rows[str(r.span_id)] = {
            "request_id": r.request_id,
            "x_request_id": r.x_request_id,
            "span_id": r.span_id,
            "time": r.start,
            "detail": detail,
            "evidence": _ev(r.file, line, r.last_line),
        }
    for w in _lost_output(requests).itertuples(index=False):
        evidence: Evidence = _ev(w.file, w.first_line, w.last_line)
        parent = rows.get(str(w.parent_span_id))
        if parent is not None:  # the same incident seen from the worker's side
            parent["evidence"] += evidence
            parent["detail"] += f"; worker span {w.span_id} produced fp_out {w.fp_out} for it"
            continue
        rows[str(w.span_id)] = {
            "request_id": w.request_id,
            "x_request_id": w.x_request_id,
            "span_id": w.span_id,
            "time": w.end,
            "detail": f"worker span {w.span_id} produced fp_out {w.fp_out} (fp_in {w.fp_in}) "
            "that no caller received",
            "evidence": evidence,
        }
    return findings_frame("unlinked", rows.values())
