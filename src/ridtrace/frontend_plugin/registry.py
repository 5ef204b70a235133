"""The in-flight registry: which caller is waiting for which request's output.

A worker's response stream finds its caller through this table. Under the ``safe``
policy the key is the server-minted ``request_id`` and a second registration of a held
key is refused with a typed Conflict, so one caller can never displace another. The
``legacy`` policy reproduces the pre-fix behaviour from the seed: a second registration
silently replaces the first (whose caller is then told it was dropped), and a response
stream takes whatever entry holds its key, possibly another caller's.

Everything here runs on one event loop and never awaits between a check and the set
that depends on it, so no lock is needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ridtrace.tracing import metrics

__all__ = [
    "DROPPED",
    "Channel",
    "Dropped",
    "DuplicateRequestId",
    "Entry",
    "IdPolicy",
    "InflightRegistry",
]

IdPolicy = Literal["safe", "legacy"]


class Channel(Protocol):
    """A caller's inbox: what the registry hands a response stream to reach its caller.

    An ``asyncio.Queue`` when a pump task feeds the caller (the legacy policy); under the
    safe policy the caller reads its worker itself and its call object stands in, so no
    queue is built per request (issue 15).
    """

    def put_nowait(self, item: Any, /) -> None:
        """Deliver ``item`` to the caller without waiting."""


class Dropped:
    """Signal put in a displaced caller's channel (legacy policy only)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DROPPED"


DROPPED = Dropped()


class DuplicateRequestId(Exception):
    """Conflict: the key is already held by a request in flight (HTTP 409)."""

    status_code = 409

    def __init__(self, key: str) -> None:
        super().__init__(f"request id {key!r} is already in flight")
        self.key = key


@dataclass(slots=True, eq=False)
class Entry:
    """One registered caller: its channel and the ``request_id`` it was registered for."""

    key: str
    channel: Channel
    owner_request_id: str


class InflightRegistry:
    """Maps in-flight keys to the caller waiting for that request's output.

    Args:
        policy: ``"safe"`` (refuse duplicates, the default) or ``"legacy"`` (replace on
            collision and let responses take whichever caller holds the key — unsafe,
            exists to reproduce the seed's failure).
        side: ``"frontend"`` or ``"worker"``: the ``side`` of the ``ridtrace.inflight``
            and ``ridtrace.duplicate_refused`` metrics.
    """

    __slots__ = ("_entries", "_legacy", "claimed", "conflicts", "policy", "registered",
                 "released", "replaced", "side", "unlinked")

    def __init__(self, policy: IdPolicy = "safe", *, side: str = "frontend") -> None:
        if policy not in ("safe", "legacy"):
            raise ValueError(f"unknown id policy {policy!r}")
        self.policy: IdPolicy = policy
        self.side = side
        metrics.declare_series("inflight", side)
        metrics.declare_series("duplicate_refused", side)
        self._legacy = policy == "legacy"
        self._entries: dict[str, Entry] = {}
        self.registered = 0
        self.conflicts = 0
        self.released = 0
        self.replaced = 0
        self.claimed = 0
        self.unlinked = 0

    def register(self, key: str, channel: Channel, *, owner_request_id: str | None = None) -> Entry:
        """Record that ``channel``'s caller waits for ``key``.

        Raises:
            DuplicateRequestId: under the safe policy, when ``key`` is already held; the
                holder is left untouched.
        """
        entries = self._entries
        previous = entries.get(key)
        if previous is not None:
            if not self._legacy:
                self.conflicts += 1
                metrics.duplicate_refused(self.side)
                raise DuplicateRequestId(key)
            # The pre-fix bug: the first caller silently loses its entry.
            self.replaced += 1
            previous.channel.put_nowait(DROPPED)
        else:
            metrics.inflight_changed(self.side, 1)
        entry = Entry(key, channel, owner_request_id or key)
        entries[key] = entry
        self.registered += 1
        return entry

    def claim(self, key: str) -> Entry | None:
        """Link a worker response stream to the caller registered under ``key``.

        Safe: returns the entry, which stays registered until its caller releases it.
        Legacy: removes and returns whatever entry holds ``key`` now (which may belong
        to another caller), or ``None`` when nobody does — an unlinked response.
        """
        entry = self._entries.pop(key, None) if self._legacy else self._entries.get(key)
        if entry is None:
            self.unlinked += 1
        else:
            self.claimed += 1
            if self._legacy:
                metrics.inflight_changed(self.side, -1)
        return entry

    def release(self, key: str, channel: Channel) -> bool:
        """Remove ``key`` if it is still ``channel``'s entry; idempotent.

        The identity check matters: a caller must never free an entry that now belongs
        to someone else (legacy replacement, or a key reused after this caller left).
        """
        entry = self._entries.get(key)
        if entry is None or entry.channel is not channel:
            return False
        del self._entries[key]
        self.released += 1
        metrics.inflight_changed(self.side, -1)
        return True

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def counters(self) -> dict[str, int]:
        """Lifetime counters plus the current size, for the debug endpoint and tests."""
        return {
            "inflight": len(self._entries),
            "registered": self.registered,
            "conflicts": self.conflicts,
            "released": self.released,
            "replaced": self.replaced,
            "claimed": self.claimed,
            "unlinked": self.unlinked,
        }
