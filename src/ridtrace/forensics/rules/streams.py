"""Who received whose output: crossed streams and output that lost its caller.

Both rules compare fingerprints of content (docs/log-schema.md), never ids, so they
hold when ids collide — the case where ids cannot be trusted. Both work on whole
columns (joins, not lookups per finding).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pandas as pd

from ridtrace.contract import FRONTEND, OUTCOME_CANCELLED, OUTCOME_OK, WORKER
from ridtrace.forensics.rules.findings import (
    concat_evidence,
    evidence,
    findings_frame,
    line_numbers,
    texts,
)

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


def _finished(works: pd.DataFrame) -> pd.DataFrame:
    return cast(pd.DataFrame, works[(works["outcome"] == OUTCOME_OK).fillna(False).to_numpy()])


def _files(frame: pd.DataFrame) -> list[str]:
    return [f or "" for f in texts(frame["file"])]


def _lines(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    return line_numbers(frame["first_line"]), line_numbers(frame["last_line"])


def crossed_stream(requests: pd.DataFrame) -> pd.DataFrame:
    """Callers delivered output that a worker produced for a different input.

    A caller whose (fp_in, fp_out) pair matches some worker's own work got its own
    output, even if another prompt happened to produce the same text; identical
    prompts have identical fp_in and are never flagged.
    """
    works = _side(requests, WORKER, with_output=True)
    front = _side(requests, FRONTEND, with_output=True)
    # Only a worker's *finished* output identifies it: the first tokens of different
    # replies can be equal, so partial output of a cancelled or failed stream is no proof.
    finished = _finished(works)
    if finished.empty or front.empty:
        return findings_frame("crossed_stream")
    # Cheap first: only outputs some worker produced can be someone else's.
    front = front[front["fp_out"].isin(finished["fp_out"]).to_numpy()]
    pair = "\x00"
    own = (front["fp_in"] + pair + front["fp_out"]).isin(works["fp_in"] + pair + works["fp_out"])
    suspects = front[~own.to_numpy()]
    if suspects.empty:
        return findings_frame("crossed_stream")
    producer = finished.drop_duplicates("fp_out")
    w = suspects[["fp_out"]].merge(producer, on="fp_out", how="left", suffixes=("", "_w"))
    details = [
        f"caller span {span} (fp_in {fp_in}) was delivered fp_out {fp_out}, produced by worker "
        f"span {w_span} for fp_in {w_in} (request_id {w_rid}, x_request_id {w_xrid})"
        for span, fp_in, fp_out, w_span, w_in, w_rid, w_xrid in zip(
            texts(suspects["span_id"]), texts(suspects["fp_in"]), texts(suspects["fp_out"]),
            texts(w["span_id"]), texts(w["fp_in"]), texts(w["request_id"]),
            texts(w["x_request_id"]), strict=True,
        )
    ]
    proof = concat_evidence([
        evidence(_files(suspects), *_lines(suspects)), evidence(_files(w), *_lines(w)),
    ])
    return findings_frame("crossed_stream", {
        "request_id": texts(suspects["request_id"]),
        "x_request_id": texts(suspects["x_request_id"]),
        "span_id": texts(suspects["span_id"]),
        "time": list(suspects["end"]),
        "detail": details,
        "evidence": proof,
    })


def _lost_output(requests: pd.DataFrame) -> pd.DataFrame:
    """Finished worker output that no frontend caller was delivered.

    Only judged where the frontend's logs for the trace are present (a worker log on
    its own proves nothing), and not when the caller itself went away.
    """
    front = _side(requests, FRONTEND, with_output=False)
    works = _finished(_side(requests, WORKER, with_output=True))
    works = works[works["trace_id"].isin(front["trace_id"]).to_numpy()]
    works = works[~works["fp_out"].isin(front["fp_out"].dropna()).to_numpy()]
    gone = (front["outcome"] == OUTCOME_CANCELLED).fillna(False).to_numpy()
    cancelled = front.loc[gone, "span_id"]
    return cast(pd.DataFrame, works[~works["parent_span_id"].isin(cancelled).to_numpy()])


def unlinked(requests: pd.DataFrame) -> pd.DataFrame:
    """Responses that lost their caller: Unlinked errors, foreign chunks, lost output."""
    flagged = requests[(requests["unlinked"].notna() | requests["foreign"].notna()).to_numpy()]
    error_text = texts(flagged["unlinked"])
    details = [
        text if text is not None else (
            f"a worker chunk for request {foreign} reached this caller's stream; "
            "it was not forwarded and the stream ended with an error"
        )
        for text, foreign in zip(error_text, texts(flagged["foreign"]), strict=True)
    ]
    unlinked_line = line_numbers(flagged["unlinked_line"])
    line = np.where(unlinked_line >= 0, unlinked_line, line_numbers(flagged["foreign_line"]))
    proof = evidence(_files(flagged), line, line_numbers(flagged["last_line"]))
    spans = texts(flagged["span_id"])
    lost = _lost_output(requests)
    # The same incident seen from the worker's side joins its caller's finding.
    by_span = {span: i for i, span in enumerate(spans)}
    lost_items = evidence(_files(lost), *_lines(lost))
    extra: dict[str, list[Any]] = {"request_id": [], "x_request_id": [], "span_id": [],
                                   "time": [], "detail": [], "evidence": []}
    for parent, span, fp_out, fp_in, rid, xrid, end, items in zip(
        texts(lost["parent_span_id"]), texts(lost["span_id"]), texts(lost["fp_out"]),
        texts(lost["fp_in"]), texts(lost["request_id"]), texts(lost["x_request_id"]),
        list(lost["end"]), lost_items, strict=True,
    ):
        at = by_span.get(parent) if parent is not None else None
        if at is not None:
            proof[at] = proof[at] + items
            details[at] += f"; worker span {span} produced fp_out {fp_out} for it"
            continue
        for col, value in (("request_id", rid), ("x_request_id", xrid), ("span_id", span),
                           ("time", end), ("evidence", items),
                           ("detail", f"worker span {span} produced fp_out {fp_out} "
                                      f"(fp_in {fp_in}) that no caller received")):
            extra[col].append(value)
    columns = {
        "request_id": texts(flagged["request_id"]) + extra["request_id"],
        "x_request_id": texts(flagged["x_request_id"]) + extra["x_request_id"],
        "span_id": spans + extra["span_id"],
        "time": list(flagged["start"]) + extra["time"],
        "detail": details + extra["detail"],
        "evidence": proof + extra["evidence"],
    }
    return findings_frame("unlinked", columns)
