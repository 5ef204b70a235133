"""Frontend requests logged in one line each, at one instant: their overlaps cannot be seen.

Dynamo logs a request's start (``request received``) at DEBUG. At its default INFO level
a frontend span is one line, ``http response sent`` or ``SPAN_CLOSED``. The read takes
its start from the duration such a line states (`reading.sql.began`); a span whose
line states none starts where it ends, so two requests that held the same id at once
never overlap, and the report said "No findings." with exit 0 over a duplicate in
flight. Such a read is incomplete.
A span whose one line opened it (ridtrace's ``request.start``, Dynamo's
``SPAN_FIRST_ENTRY``) is a request still in flight when the logs were read, its start
known: no such instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the live follower imports this module without the rules' imports
    from ridtrace.forensics.rules.columns import SpanColumns

# Above this share of one-line frontend spans a read is named incomplete; a few (a
# request cut at the log's start, a Dynamo span event alone) are no reason.
INSTANT_SHARE = 0.5


def unseen_overlaps(spans: SpanColumns) -> str | None:
    """The incomplete reason for a read whose frontend requests are mostly one line each,
    a closing one with no duration to start them by (`SpanColumns.unstarted`)."""
    front = spans.front
    return instants_reason(int((front & spans.unstarted).sum()), int(front.sum()))


def instants_reason(instant: int, total: int) -> str | None:
    """The incomplete reason when `instant` of `total` frontend requests were one line at
    one instant, if they are most of them (the batch read's and the live follower's)."""
    if not total or instant <= INSTANT_SHARE * total:
        return None
    return (f"{instant} of {total} frontend requests were logged in one line, at one "
            "instant (no start line and no duration: Dynamo at INFO level?), so requests "
            "in flight at once cannot be seen and duplicates may be missing; log at DEBUG "
            "for 'request received'")
