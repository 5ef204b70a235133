"""The workers a frontend dispatches to: round-robin order, and who is down for now."""

from __future__ import annotations

import time
from collections.abc import Callable

from ridtrace.frontend_plugin.redaction import redacted_url


class WorkerPool:
    """Worker URLs, a round-robin cursor and per-worker down-until times."""

    def __init__(
        self, urls: tuple[str, ...], *, cooldown: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.urls = tuple(u.rstrip("/") for u in urls)
        self._cooldown = cooldown
        self._clock = clock
        self._down_until: dict[str, float] = {}
        self._next = 0

    def order(self) -> list[str]:
        """Workers to try: healthy ones from the cursor on, then those marked down."""
        if not self.urls:
            return []
        start = self._next % len(self.urls)
        self._next += 1
        rotated = self.urls[start:] + self.urls[:start]
        now = self._clock()
        up = [u for u in rotated if self._down_until.get(u, 0.0) <= now]
        # Down workers last, not never: if all are down, trying beats refusing.
        down = sorted((u for u in rotated if u not in up), key=lambda u: self._down_until[u])
        return up + down

    def mark_down(self, url: str) -> None:
        """Skip ``url`` while others are healthy, for the cooldown."""
        self._down_until[url] = self._clock() + self._cooldown

    def mark_up(self, url: str) -> None:
        """``url`` answered: back in rotation now, whatever was left of its cooldown."""
        if self._down_until:
            self._down_until.pop(url, None)

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
