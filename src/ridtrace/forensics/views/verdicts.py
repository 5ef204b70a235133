"""Whose output did a caller receive? The fingerprints' verdict for one caller.

The same logic as `ridtrace.forensics.rules.streams.crossed_stream`, asked per caller
instead of listing only the crossed ones: a caller whose (fp_in, fp_out) pair matches
some worker's own work got its own output; a finished caller delivered the *finished*
output a worker produced for a different input got a crossed stream, and the producing worker
names whose output it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ridtrace.contract import FRONTEND, OUTCOME_OK, WORKER
from ridtrace.forensics.rules.frame_arrays import epoch_us
from ridtrace.forensics.rules.producers import reaching_producers

# Verdicts printed by `ridtrace trace` (and in its JSON): the first three are the
# answers the fingerprints give; the others say why there is no answer.
OWN_OUTPUT = "own output"
CROSSED = "crossed"
NO_OUTPUT = "no output"
UNMATCHED = "unmatched output"  # an fp_out no worker in these logs produced
# A caller whose stream ended early (it hung up, or the stream failed): it holds a prefix
# of a reply, which no worker's whole output equals, so the fingerprints prove nothing.
CUT_SHORT = "cut short"
NO_FINGERPRINTS = "no fingerprints"  # Dynamo's logs carry none
NO_CALLER = "no caller in logs"  # only worker spans of this request were read
# A caller with lines but none that answered (no request.end, nor Dynamo's http response
# sent): its process was killed mid-request, or its last lines were lost. ridtrace logs
# the fingerprints on request.end, so 'no fingerprints' sent readers after a missing
# plugin instead of the crash.
NO_ANSWER = "no answer logged"
# A caller whose output is another prompt's and none of whose own work was read (its
# worker's log not given): a short reply equals another prompt's ("Yes"), and without
# its own work in the logs, its own output is not told from a crossed one.
NO_WORK = "work not in logs"


_PAIR = "\x00"


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
    """Every worker's work in the logs, indexed to judge a few callers.

    Built with vectorised pandas only: a trace over a fleet's logs judges a handful of
    callers, so nothing here walks all the spans in Python.
    """

    def __init__(self, requests: pd.DataFrame) -> None:
        side = requests["side"].to_numpy()
        works = requests[
            (side == WORKER)
            & requests["fp_in"].notna().to_numpy()
            & requests["fp_out"].notna().to_numpy()
        ]
        self._pairs = works["fp_in"].astype(str) + _PAIR + works["fp_out"].astype(str)
        # Only finished output identifies its producer (first tokens of replies can agree);
        # of several, the one the crossed_stream rule names (`rules.producers`).
        self._finished = works[(works["outcome"] == OUTCOME_OK).fillna(False).to_numpy()]
        self._callers = requests[side == FRONTEND]
        # Callers a worker span names (doing their work, or refusing them).
        self._worked_for = set(requests["parent_span_id"][side == WORKER].dropna().astype(str))

    @staticmethod
    def _producers(made: pd.DataFrame, crossed: pd.DataFrame,
                   ids: dict[str, tuple[str | None, str | None]]) -> dict[str, Producer]:
        """Whose work each caller in `crossed` got, of the finished work in `made`."""
        codes, _ = pd.factorize(pd.concat([made["fp_out"], crossed["fp_out"]]).astype(str))
        ends = np.where(crossed["end"].isna().to_numpy(), np.iinfo(np.int64).max,
                        epoch_us(crossed["end"]))
        picked = reaching_producers(codes[:len(made)], epoch_us(made["start"]),
                                    made["span_id"].astype(str).tolist(), codes[len(made):],
                                    ends)
        rows = list(made.itertuples(index=False))
        producer = {}
        for c, at in zip(crossed.itertuples(index=False), picked, strict=True):
            if at >= 0:
                w = rows[at]
                producer[str(c.span_id)] = Producer(
                    *ids.get(str(w.parent_span_id), (text(w.request_id), text(w.x_request_id))),
                    span_id=text(w.parent_span_id), worker_span_id=str(w.span_id),
                )
        return producer

    def _went_astray(self, got: Producer, caller: Any) -> bool:
        """The output never reached the caller it was made for, who is in the logs and
        holds `caller`'s request id or client id (`rules.streams._astray`): it went to
        `caller`, which holds it."""
        same_id = ((got.request_id is not None and got.request_id == text(caller.request_id))
                   or (got.x_request_id is not None
                       and got.x_request_id == text(caller.x_request_id)))
        if not same_id:
            return False
        owner = self._callers[(self._callers["span_id"] == got.span_id).to_numpy()]
        delivered = (owner["outcome"] == OUTCOME_OK) & (owner["fp_out"] == caller.fp_out)
        return bool(len(owner)) and not delivered.fillna(False).any()

    def verdicts(self, callers: pd.DataFrame) -> dict[str, Verdict]:
        """The verdict of each caller in `callers` (frontend spans), by span id."""
        has_in = callers["fp_in"].notna().to_numpy()
        has_out = callers["fp_out"].notna().to_numpy()
        pair = callers["fp_in"].astype(str) + _PAIR + callers["fp_out"].astype(str)
        # Big.isin(small): Arrow strings' isin walks its *argument* in Python.
        known = set(self._pairs[self._pairs.isin(pair).to_numpy()])
        own = has_in & has_out & pair.isin(known).to_numpy()
        made = self._finished[self._finished["fp_out"].isin(callers["fp_out"]).to_numpy()]
        parents = self._callers[self._callers["span_id"].isin(made["parent_span_id"]).to_numpy()]
        ids = {str(p.span_id): (text(p.request_id), text(p.x_request_id))
               for p in parents.itertuples(index=False)}
        # Only callers that may hold another's output need their producer named.
        ok = (callers["outcome"] == OUTCOME_OK).fillna(False).to_numpy()
        crossed = callers[has_in & has_out & ~own & ok
                          & callers["fp_out"].isin(made["fp_out"]).to_numpy()]
        producer = self._producers(made, crossed, ids) if len(crossed) else {}
        out: dict[str, Verdict] = {}
        for c, got_in, got_out, is_own in zip(
            callers.itertuples(index=False), has_in, has_out, own, strict=True
        ):
            if not got_out:
                out[str(c.span_id)] = Verdict(NO_OUTPUT if got_in else NO_FINGERPRINTS)
            elif is_own:
                out[str(c.span_id)] = Verdict(OWN_OUTPUT)
            elif got_in and str(c.span_id) in producer and text(c.outcome) == OUTCOME_OK:
                # A cut-short caller holds a prefix of its reply: no proof (as the rule).
                got = producer[str(c.span_id)]
                out[str(c.span_id)] = (
                    Verdict(CROSSED, got)
                    if str(c.span_id) in self._worked_for or self._went_astray(got, c)
                    else Verdict(NO_WORK))
            elif text(c.outcome) not in (None, OUTCOME_OK):
                out[str(c.span_id)] = Verdict(CUT_SHORT)
            else:
                out[str(c.span_id)] = Verdict(UNMATCHED)
        return out
