"""What a worker's answer other than 200 means for the request (`frontend_plugin.dispatch`).

409 Conflict: this worker already holds the request's id (a retry reached it while the
first attempt was in flight); another worker may take it, and this one stays in
rotation. 401/403: the shared worker token is wrong, configuration, not load: the
request fails at once. 5xx, 421 and 429: the worker's trouble, retried elsewhere. Any
other 4xx is about the request itself and fails it. Any other answer below 400 (a
redirect, a 2xx that is no work stream) says nothing of the request: the URL does not
reach a worker as it should, so it is the worker's trouble too.
"""

from __future__ import annotations

from ridtrace.frontend_plugin.failures import WORKER_TOKEN_REFUSED, WORKER_UNAUTHORIZED

__all__ = ["ERROR_BODY_LIMIT", "HEALTHY_REFUSALS", "Refused", "refusal_of"]

# How much of a refusal's body is read: its first 200 characters are logged.
ERROR_BODY_LIMIT = 64 * 1024

# 4xx answers about the worker, not the request, retried elsewhere like a 5xx: 429 Too
# Many Requests (an engine or a proxy in front of it shedding load) and 421 Misdirected
# Request (RFC 9110: retry over another connection; a worker that refuses the Host it is
# reached by). They failed the request with 'worker rejected the request' while other
# workers were free.
_WORKER_SIDE_4XX = frozenset({421, 429})

# Refusals that say nothing about the worker's health: it stays in rotation.
HEALTHY_REFUSALS = frozenset({"conflict", "status_4xx", "status_413"})


class Refused(Exception):
    """A worker's answer that started no stream: `reason` for the log and the metrics,
    `fatal` when no other worker should be tried, `unreached` when the request never
    reached it (its host refused the connection: no attempt spent)."""

    def __init__(
        self, reason: str, message: str, *, fatal: bool = False, unreached: bool = False
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.fatal = fatal
        self.unreached = unreached


def refusal_of(status: int, detail: str) -> Refused:
    """The refusal a worker's non-200 `status` is; `detail` is the start of its body."""
    if status == 409:
        return Refused("conflict", f"worker refused duplicate id: {detail}")
    if status in (401, 403):
        # A token mismatch is configuration, not load: fail the request clearly instead
        # of trying it on every worker.
        return Refused(WORKER_UNAUTHORIZED, f"{WORKER_TOKEN_REFUSED} (HTTP {status})",
                       fatal=True)
    if status >= 500:
        return Refused("status_5xx", f"worker answered {status}")
    if status == 413:
        # The envelope is over the worker's max_body_bytes, below the frontend's own
        # --max-body-bytes: the body is too large for this deployment, which the caller
        # can act on (413), where a 502 said the service was broken.
        return Refused("status_413", f"worker answered 413: {detail}", fatal=True)
    if status < 400:
        # A proxy redirecting http to https or a trailing slash: every request sent
        # there failed with "worker rejected the request", final to the SDKs, while
        # the other workers were free.
        return Refused("status_other", f"worker answered {status}: {detail}")
    if status in _WORKER_SIDE_4XX:
        # Not about this request: another worker may well take it.
        return Refused(f"status_{status}", f"worker answered {status}: {detail}")
    return Refused("status_4xx", f"worker answered {status}: {detail}", fatal=True)
