"""Who received whose output: crossed streams and output that lost its caller.

Both rules compare fingerprints of content (docs/log-schema.md), never ids, so they
hold when ids collide — the case where ids cannot be trusted.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ridtrace.forensics.rules import Evidence, _ev, findings_frame, present
from ridtrace.forensics.schema import FRONTEND, WORKER


def _works(requests: pd.DataFrame) -> pd.DataFrame:
    """Worker spans that produced output for a known input."""
    w = requests[
        (requests["side"] == WORKER) & requests["fp_in"].notna() & requests["fp_out"].notna()
    ]
    return w


def crossed_stream(requests: pd.DataFrame) -> pd.DataFrame:
    """Callers delivered output that a worker produced for a different input.

    A caller whose (fp_in, fp_out) pair matches some worker's own work got its own
    output, even if another prompt happened to produce the same text; identical
    prompts have identical fp_in and are never flagged.
    """
    works = _works(requests)
    front = requests[
        (requests["side"] == FRONTEND) & requests["fp_in"].notna() & requests["fp_out"].notna()
    ]
    if works.empty or front.empty:
        return findings_frame("crossed_stream", [])
    pairs = pd.MultiIndex.from_arrays([works["fp_in"], works["fp_out"]])
    own = pd.MultiIndex.from_arrays([front["fp_in"], front["fp_out"]]).isin(pairs)
    suspects = front[~own & front["fp_out"].isin(works["fp_out"]).to_numpy()]
    if suspects.empty:
        return findings_frame("crossed_stream", [])
    producer = works.drop_duplicates("fp_out").set_index("fp_out")
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
    front = requests[requests["side"] == FRONTEND]
    works = _works(requests)
    works = works[(works["outcome"] == "ok").fillna(False).to_numpy()]
    works = works[works["trace_id"].isin(front["trace_id"]).to_numpy()]
    works = works[~works["fp_out"].isin(front["fp_out"].dropna()).to_numpy()]
    cancelled = front.loc[(front["outcome"] == "cancelled").fillna(False).to_numpy(), "span_id"]
    return works[~works["parent_span_id"].isin(cancelled).to_numpy()]


def unlinked(requests: pd.DataFrame) -> pd.DataFrame:
    """Responses that lost their caller: Unlinked errors, foreign chunks, lost output."""
    rows: dict[str, dict[str, Any]] = {}
    flagged = requests[requests["unlinked"].notna() | requests["foreign"].notna()]
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
