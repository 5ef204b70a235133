"""A number a JSON schema allows, for a reply built from the schema alone: 0, or the
in-bounds value nearest it."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["nearest_allowed_number"]


def nearest_allowed_number(schema: dict[str, Any], *, integer: bool) -> int | float | None:
    """0, or the in-bounds value nearest it; None when the bounds allow none (a minimum
    above the maximum: a reply of 0 broke the schema the caller validates it against)."""

    def bound(name: str) -> float | None:
        value = schema.get(name)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    low, high = bound("minimum"), bound("maximum")
    above, below = bound("exclusiveMinimum"), bound("exclusiveMaximum")

    def allowed(value: float) -> bool:
        return ((low is None or value >= low) and (high is None or value <= high)
                and (above is None or value > above) and (below is None or value < below))

    candidates: list[float] = [0]
    candidates += [math.ceil(b) if integer else b for b in (low,) if b is not None]
    candidates += [math.floor(b) if integer else b for b in (high,) if b is not None]
    if above is not None:
        candidates.append(math.floor(above) + 1)
    if below is not None:
        candidates.append(math.ceil(below) - 1)
    if not integer:  # an open range narrower than 1: its middle
        floor = max((b for b in (low, above) if b is not None), default=None)
        ceiling = min((b for b in (high, below) if b is not None), default=None)
        if floor is not None and ceiling is not None:
            candidates.append((floor + ceiling) / 2)
    value = min(filter(allowed, candidates), key=abs, default=None)
    if value is None:
        return None
    return int(value) if integer else value
