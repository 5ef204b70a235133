"""A 405's ``Allow`` header in one order, shared by the frontend and the worker."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["allow_in_order"]

# Starlette lists a route's methods from a set, so a 405's Allow came out as "GET, HEAD"
# or "HEAD, GET" as the process's hash seed fell: named in one order, as RFC 9110 shows.
_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allow_in_order(headers: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """``headers`` with the methods of its ``Allow`` (if any) in RFC 9110's order."""
    if not headers or "Allow" not in headers:
        return headers
    methods = [m.strip() for m in headers["Allow"].split(",") if m.strip()]
    methods.sort(key=lambda m: (_METHOD_ORDER.index(m) if m in _METHOD_ORDER
                                else len(_METHOD_ORDER), m))
    return {**headers, "Allow": ", ".join(methods)}
