"""A log record's time as the Python side of the read takes it: ISO 8601 / RFC 3339
text to a UTC datetime, as DuckDB reads it (to the microsecond, nothing guessed)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

__all__ = ["parse_time"]

_LEAP_SECOND = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:60")
# An ISO 8601 date and time as fromisoformat reads it, its fraction apart. Checked
# first: Python 3.11's fromisoformat skips whatever follows six digits of fraction, so
# "…01.500000%:z" (Python before 3.12 leaves strftime's "%:z" as it is) was read as UTC,
# the writer's local time silently hours off, where DuckDB reads no time at all.
_ISO_TIME = re.compile(
    r"(\d{4}-?\d{2}-?\d{2}(?:[T ]\d{2}(?::?\d{2}(?::?\d{2})?)?)?)"  # date, time
    r"(?:[.,](\d+))?"  # fraction, any number of digits
    r"(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2}(?:\.\d{1,6})?)?)?)?"  # offset
)


def parse_time(value: str) -> datetime | None:
    """An ISO 8601 time as a UTC datetime (naive means UTC), or None."""
    # RFC 3339 allows a lower-case "t" and "z" (§5.6); fromisoformat and DuckDB do not.
    if value[10:11] == "t":
        value = value[:10] + "T" + value[11:]
    if value.endswith("z"):
        value = value[:-1] + "Z"
    # A leap second (RFC 3339 allows :60) is read as the next second, as POSIX time
    # counts it; neither fromisoformat nor DuckDB takes it.
    leap = _LEAP_SECOND.match(value) is not None
    if leap:
        value = value[:17] + "59" + value[19:]
    parts = _ISO_TIME.fullmatch(value)
    if parts is None:
        return None
    when, fraction, offset = parts.groups()
    if fraction is not None:  # kept to the microsecond, as DuckDB keeps it
        when += "." + fraction[:6].ljust(6, "0")
    try:
        parsed = datetime.fromisoformat(when + (offset or ""))
    except ValueError:
        return None
    try:
        if leap:
            parsed += timedelta(seconds=1)
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)
    except OverflowError:
        # Past the years a datetime holds (1-9999): the last second of year 9999 has
        # no next one, and 9999-12-31T23:00-05:00 or 0001-01-01T00:00+01:00 has no UTC.
        return None
