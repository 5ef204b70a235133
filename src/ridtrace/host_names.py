"""Host names as a server's ``Host`` check compares them, for `frontend_plugin.host_check`
and the ``--allowed-host`` option alike.

Kept apart from the frontend package: the command line checks a name while it parses
its options, before it may import FastAPI (which loads the ``OTEL_PROPAGATORS`` the
command checks first, and raises at import on one it cannot find).
"""

from __future__ import annotations

import ipaddress
import re

__all__ = ["ANY_HOST", "checked_host_name", "normal_host"]

ANY_HOST = "*"
# A DNS name as the check compares it (lower case, no trailing dot); "_" is allowed, as
# Docker and Compose service names have it.
_HOST_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


def normal_host(name: str) -> str:
    """`name` lower case, without brackets around an IPv6 address or a trailing dot."""
    return name.strip().strip("[]").rstrip(".").lower()


def checked_host_name(name: str) -> str:
    """`name` as requests' hosts are compared with it; ValueError when no ``Host`` can
    match it.

    A request's host is compared with its port dropped, so a name written as a proxy's
    ``Host`` value (``api.example.com:8443``), a URL, a pattern (``*.internal``: only
    ``*`` alone means any) or an empty name (``--allowed-host "$NAME"``, unset) matched
    nothing, and every request the operator meant to let in got 421.
    """
    normal = normal_host(name)
    if normal == ANY_HOST or _HOST_NAME.fullmatch(normal):
        return normal
    try:
        ipaddress.ip_address(normal)
    except ValueError:
        raise ValueError(
            f"{name!r} is not a host name or address a Host header can carry: no scheme, "
            f"port, path or spaces; {ANY_HOST!r} alone answers any host") from None
    return normal
