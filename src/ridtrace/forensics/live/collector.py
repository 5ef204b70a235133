"""The cycle collector on a follower's schedule: once per poll, in full once a minute.

A follower holds its whole window as Python objects (hundreds of thousands of spans).
Left to itself, the interpreter's collector walks each of them twice as they age
(its young generations fill many times per poll) and again in every full collection.
The window makes no garbage cycle (eviction and `WindowState.release` break the
span/cluster links, so reference counting frees what leaves it), so a follower needs
less: the collector is off during a poll; after it, one pass over what the poll made
(any cycle among them is freed), then the survivors are frozen, left out of later
passes. A full collection, over everything, runs at most once a minute, so a cycle
that forms among frozen objects is still freed, at a cost that stays a small share of
the CPU however big the window.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from types import TracebackType

FULL_EVERY_S = 60.0


class PollCollector:
    """Use as ``with PollCollector() as collector: ... collector.after_poll()``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._was_enabled = gc.isenabled()
        self._clock = clock
        self._last_full = self._clock()

    def __enter__(self) -> PollCollector:
        gc.disable()
        return self

    def after_poll(self) -> None:
        """Collect what the poll made, freeze the survivors; in full once a minute."""
        now = self._clock()
        if now - self._last_full >= FULL_EVERY_S:
            gc.unfreeze()
            gc.collect()
            self._last_full = now
        else:
            gc.collect(0)
        gc.freeze()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        gc.unfreeze()
        if self._was_enabled:
            gc.enable()
