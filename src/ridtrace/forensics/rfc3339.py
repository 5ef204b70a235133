"""Times as the reports write them: RFC 3339, UTC, to the microsecond.

``strftime("%Y")`` writes year 1 (Go's zero time, logged by services with an unset
clock field) as ``1``, which is no RFC 3339 date; the year is always four digits here.
"""

from __future__ import annotations

from datetime import datetime


def rfc3339_us(moment: datetime) -> str:
    """`moment` (UTC; a pandas Timestamp too) as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
            f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond:06d}Z")
