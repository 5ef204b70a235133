"""Seeded ids and timestamps for the log generators: the same seed, the same logs."""

from __future__ import annotations

import random
from datetime import datetime, timedelta


class IdMaker:
    """Hex ids, UUID4-shaped request ids and RFC 3339 times, from one seeded generator."""

    def __init__(self, seed: int, base: datetime) -> None:
        self.rng = random.Random(seed)
        self._base = base
        self._seconds: dict[int, str] = {}

    def hex(self, digits: int) -> str:
        """`digits` random lower-case hex digits (trace ids 32, span ids 16)."""
        return f"{self.rng.getrandbits(digits * 4):0{digits}x}"

    def uuid(self) -> str:
        """A random id in UUID4's layout."""
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    def ts(self, us: int) -> str:
        """`us` microseconds after the base time, as the log schema writes times."""
        sec, frac = divmod(us, 1_000_000)
        prefix = self._seconds.get(sec)
        if prefix is None:  # one strftime per second of log, not per line
            prefix = (self._base + timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%S")
            self._seconds[sec] = prefix
        return f"{prefix}.{frac:06d}Z"
