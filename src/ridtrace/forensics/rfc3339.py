"""Times as the reports write them: RFC 3339, UTC, to the microsecond.

``strftime("%Y")`` writes year 1 (Go's zero time, logged by services with an unset
clock field) as ``1``, which is no RFC 3339 date; the year is always four digits here.
"""

from __future__ import annotations

import re
from datetime import datetime


def rfc3339_us(moment: datetime) -> str:
    """`moment` (UTC; a pandas Timestamp too) as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
            f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond:06d}Z")


# A --since/--until value: an ISO 8601 calendar date, alone or with a time (extended or
# basic format, ``T``, ``t`` or a space between) and an offset. pandas, which parses it,
# takes far more: ``""``, ``nan`` and ``NaT`` as "no time" (a window no request is in:
# `--since "$UNSET"` reported no findings and exit 0), ``now`` in the machine's zone,
# and ``2/12/2026`` as February the 12th. A time follows a whole date only, as ISO 8601
# has it: pandas read ``2026-12T10`` as the 10th of December and ``2026T10`` as October.
_ISO_8601 = re.compile(
    r"\d{4}(?:-\d{2}"  # 2026, 2026-12
    r"|(?:-\d{2}-\d{2}|\d{4})"  # 2026-12-02, 20261202, then perhaps a time:
    r"(?:[Tt ]\d{2}(?::?\d{2}(?::?\d{2}(?:[.,]\d+)?)?)?"  # 14, 14:00, 1400, 14:00:00.5
    r"(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?)?)?"  # Z, +01:00, +0100, +01
)


def is_iso8601(text: str) -> bool:
    """True when `text` is an ISO 8601 date or date and time (as ``--since`` takes)."""
    return _ISO_8601.fullmatch(text.strip()) is not None
