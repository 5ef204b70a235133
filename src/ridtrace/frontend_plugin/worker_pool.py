"""The workers a frontend dispatches to: round-robin order, and who is down for now."""

from __future__ import annotations

import time
from collections.abc import Callable

from ridtrace.frontend_plugin.redaction import redacted_url


class WorkerPool:
    """Worker URLs, a round-robin cursor and per-worker down-until times.

    A worker marked down stays suspect once its cooldown ends, until it answers: it is
    then tried again by one request at a time (a probe, first in that request's order,
    once per cooldown), and after the healthy workers by the others. Back in plain
    rotation at once, three dead workers of five took a request's three attempts every
    cooldown, a 502 "worker unavailable" while two healthy workers sat idle.
    """

    def __init__(
        self, urls: tuple[str, ...], *, cooldown: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.urls = tuple(u.rstrip("/") for u in urls)
        self._cooldown = cooldown
        self._clock = clock
        # Marked down and not answered since (the cooldown over or not).
        self._down_until: dict[str, float] = {}
        self._probed_until: dict[str, float] = {}
        self._next = 0

    def order(self) -> list[str]:
        """Workers to try: a suspect's probe, the healthy ones from the cursor on, the
        other suspects, then those marked down (last, not never: if all are down,
        trying beats refusing)."""
        if not self.urls:
            return []
        start = self._next % len(self.urls)
        self._next += 1
        rotated = self.urls[start:] + self.urls[:start]
        now = self._clock()
        healthy = [u for u in rotated if u not in self._down_until]
        suspects = [u for u in rotated if self._down_until.get(u, now + 1) <= now]
        down = sorted((u for u in rotated if self._down_until.get(u, 0.0) > now),
                      key=lambda u: self._down_until[u])
        probe = next((u for u in suspects if self._probed_until.get(u, 0.0) <= now), None)
        if probe is None:
            return healthy + suspects + down
        self._probed_until[probe] = now + self._cooldown
        return [probe, *healthy, *(u for u in suspects if u != probe), *down]

    def mark_down(self, url: str) -> None:
        """Skip ``url`` while others are healthy, for the cooldown."""
        self._down_until[url] = self._clock() + self._cooldown

    def mark_up(self, url: str) -> None:
        """``url`` answered: back in rotation now, whatever was left of its cooldown."""
        if self._down_until:
            self._down_until.pop(url, None)
            self._probed_until.pop(url, None)

    def is_marked_down(self, url: str) -> bool:
        """Whether ``url`` was marked down and has not answered since (down or suspect)."""
        return url in self._down_until

    def is_up(self, url: str) -> bool:
        """Whether ``url`` is in rotation now."""
        return self._down_until.get(url, 0.0) <= self._clock()

    def up_count(self) -> int:
        """How many workers are in rotation now (none marked down within the cooldown)."""
        now = self._clock()
        return sum(1 for u in self.urls if self._down_until.get(u, 0.0) <= now)

    def snapshot(self) -> list[dict[str, object]]:
        """Per-worker health, for the debug endpoint."""
        return [{"url": redacted_url(u), "up": self.is_up(u)} for u in self.urls]
