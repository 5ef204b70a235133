"""What a caller is told when its reply cannot be completed, and what the log keeps.

A failure has two texts. ``message`` reaches the caller, in the API's error body or its
in-band stream error event, and is one of the fixed phrases below: a caller cannot act
on a worker's address, port or exception class, and those describe the deployment to
anyone who can reach the frontend. ``detail`` (which worker, what broke) goes to the
``error`` field of the request's own ``request.end`` line, found by the
``x-server-request-id`` the caller got back.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DUPLICATE_EVERYWHERE",
    "FOREIGN_CHUNK_STOPPED",
    "FRONTEND_OVERLOADED",
    "GO_ELSEWHERE",
    "OVERLOADED",
    "REQUEST_TIMED_OUT",
    "REQUEST_TOO_LARGE",
    "SHUTDOWN",
    "WORKER_CONNECTION_LOST",
    "WORKER_ERROR",
    "WORKER_REJECTED",
    "WORKER_TIMED_OUT",
    "WORKER_TOKEN_REFUSED",
    "WORKER_UNAUTHORIZED",
    "WORKER_UNAVAILABLE",
    "Failed",
    "dispatch_message",
    "retry_advice",
    "worth_retrying",
]

WORKER_UNAVAILABLE = "worker unavailable"
"""No worker could be reached or every one tried failed before its first chunk."""
WORKER_TIMED_OUT = "worker timed out"
"""A worker sent nothing for ``first_byte_timeout`` (per attempt) or ``chunk_timeout``."""
REQUEST_TIMED_OUT = "request timed out"
"""The request's ``total_timeout`` ran out."""
WORKER_CONNECTION_LOST = "worker connection lost"
"""The worker's stream broke or ended before its done line."""
WORKER_ERROR = "worker error"
"""The worker reported an error in its stream."""
WORKER_REJECTED = "worker rejected the request"
"""A worker answered a 4xx other than Conflict or a token refusal."""
REQUEST_TOO_LARGE = "request body too large for the workers"
"""A worker answered 413: the body passed the frontend's limit but not the worker's."""
DUPLICATE_EVERYWHERE = "every worker tried already had this request id in flight"
"""Each attempt was refused with Conflict (HTTP 503)."""
FOREIGN_CHUNK_STOPPED = "worker sent a chunk for another request; stream stopped"
"""A chunk named another request (the chunk check)."""
WORKER_TOKEN_REFUSED = (
    "a worker refused the frontend's worker token; check --worker-token on the frontend "
    "and its workers"
)
"""A worker answered 401/403: configuration the operator must fix, so it is named."""

FRONTEND_OVERLOADED = "frontend overloaded; retry shortly"
"""The frontend could not open a connection to a worker (out of file descriptors)."""

WORKER_UNAUTHORIZED = "worker_unauthorized"
"""Dispatch failure reason: a worker answered 401/403 to the frontend's worker token."""
OVERLOADED = "overloaded"
"""Dispatch failure reason: this process could not open a connection to a worker."""

_DISPATCH_MESSAGES = {
    "conflict": DUPLICATE_EVERYWHERE,
    "timeout": WORKER_TIMED_OUT,
    "status_4xx": WORKER_REJECTED,
    "status_413": REQUEST_TOO_LARGE,
    "worker_error": WORKER_ERROR,
    WORKER_UNAUTHORIZED: WORKER_TOKEN_REFUSED,
}


# Failures a retry of the same request cannot mend: the worker refused the request itself
# (a 4xx), or the frontend's worker token. Said to the SDKs by ``x-should-retry: false``;
# without it they retry every 5xx (the 502 included) twice, to the same refusal.
_FINAL_REASONS = frozenset({"status_4xx", "status_413", WORKER_UNAUTHORIZED})


def worth_retrying(reason: str) -> bool:
    """Whether a caller's retry of a request that failed for ``reason`` may succeed."""
    return reason not in _FINAL_REASONS


# The frontend's own overload passes once connections close: the SDKs retry a 503, and
# wait this long first when told (without it, 0.5 s and less for the first retry).
_OVERLOADED_ADVICE = ((b"retry-after", b"1"),)
_FINAL_ADVICE = ((b"x-should-retry", b"false"),)
GO_ELSEWHERE = ((b"retry-after", b"0"), (b"connection", b"close"))
"""Headers of a refusal because the process is stopping: retry (elsewhere) at once, on
a new connection (a body cut short cannot be followed by another request either)."""

SHUTDOWN = "shutdown"
"""The ``Failed.reason`` of a call the server ended because it was stopping."""


def retry_advice(failed: Failed) -> tuple[tuple[bytes, bytes], ...]:
    """The headers that tell a caller's SDK whether, and when, to retry ``failed``."""
    if failed.reason == OVERLOADED:
        return _OVERLOADED_ADVICE
    if failed.reason == SHUTDOWN:
        return GO_ELSEWHERE
    if failed.message == REQUEST_TIMED_OUT:
        # The request's whole budget ran out (a reply longer than total_timeout, or as
        # long a wait for a worker): a retry gets the same budget for the same work, and
        # the SDKs' two retries tripled the wait and the load. A worker that timed out
        # (WORKER_TIMED_OUT) is not final: the retry may reach another worker.
        return _FINAL_ADVICE
    return () if worth_retrying(failed.reason) else _FINAL_ADVICE


def dispatch_message(reason: str) -> str:
    """What the caller is told when a dispatch attempt failed for ``reason``
    (``connect``, ``status_5xx`` and anything else: :data:`WORKER_UNAVAILABLE`)."""
    return _DISPATCH_MESSAGES.get(reason, WORKER_UNAVAILABLE)


@dataclass(frozen=True, slots=True)
class Failed:
    """The reply cannot be completed; ``status`` is for callers that got no bytes yet.

    ``message`` is shown to the caller; ``detail`` is logged (``message`` when empty).
    """

    message: str
    status: int
    reason: str
    attempts: int = 0
    detail: str = ""

    @property
    def logged(self) -> str:
        """What the request's ``request.end`` line records as its ``error``."""
        return self.detail or self.message
