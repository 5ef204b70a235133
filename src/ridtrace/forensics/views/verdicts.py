"""Whose output did a caller receive? The fingerprints' verdict for one caller.

The same logic as `ridtrace.forensics.rules.streams.crossed_stream`, asked per caller
instead of listing only the crossed ones: a caller whose (fp_in, fp_out) pair matches
some worker's own work got its own output; a caller delivered the *finished* output a
worker produced for a different input got a crossed stream, and the producing worker
names whose output it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ridtrace.contract import FRONTEND, OUTCOME_OK, WORKER

# Verdicts printed by `ridtrace trace` (and in its JSON): the first three are the
# answers the fingerprints give; the others say why there is no answer.
OWN_OUTPUT = "own output"
CROSSED = "crossed"
NO_OUTPUT = "no output"
UNMATCHED = "unmatched output"  # an fp_out no worker in these logs produced
NO_FINGERPRINTS = "no fingerprints"  # Dynamo's logs carry none
NO_CALLER = "no caller in logs"  # only worker spans of this request were read


def present(value: Any) -> bool:
    """Not None, NA or NaN."""
    return value is not None and value is not pd.NA and value == value


def text(value: Any) -> str | None:
    """A log value as text, None when missing."""
    return str(value) if present(value) else None


@dataclass(frozen=True)
class Producer:
    """The caller whose output a crossed caller received, and the worker span that made it."""

    request_id: str | None
    x_request_id: str | None
    span_id: str | None
    worker_span_id: str


@dataclass(frozen=True)
class Verdict:
    """What the fingerprints say about one caller's delivered output."""

    label: str
    got_output_of: Producer | None = None


class OutputIndex:
    """Every worker's work in the logs, indexed to judge callers one at a time."""

    def __init__(self, requests: pd.DataFrame) -> None:
        side = requests["side"].to_numpy()
        works = requests[
            (side == WORKER)
            & requests["fp_in"].notna().to_numpy()
            & requests["fp_out"].notna().to_numpy()
        ]
        self._own = set(zip(works["fp_in"].astype(str), works["fp_out"].astype(str), strict=True))
        callers = requests[side == FRONTEND].drop_duplicates("span_id")
        by_span = {
            str(r.span_id): (text(r.request_id), text(r.x_request_id))
            for r in callers.itertuples(index=False)
        }
        # Only finished output identifies its producer (first tokens of replies can agree).
        finished = works[(works["outcome"] == OUTCOME_OK).fillna(False).to_numpy()]
        self._producer: dict[str, Producer] = {}
        for w in finished.itertuples(index=False):
            key = str(w.fp_out)
            if key in self._producer:
                continue
            parent = text(w.parent_span_id)
            rid, xrid = by_span.get(parent or "", (text(w.request_id), text(w.x_request_id)))
            self._producer[key] = Producer(rid, xrid, parent, str(w.span_id))

    def verdict(self, fp_in: Any, fp_out: Any) -> Verdict:
        """The verdict for a caller that sent `fp_in` and was delivered `fp_out`."""
        if not present(fp_out):
            return Verdict(NO_OUTPUT if present(fp_in) else NO_FINGERPRINTS)
        if present(fp_in) and (str(fp_in), str(fp_out)) in self._own:
            return Verdict(OWN_OUTPUT)
        producer = self._producer.get(str(fp_out))
        if present(fp_in) and producer is not None:
            return Verdict(CROSSED, producer)
        return Verdict(UNMATCHED)
