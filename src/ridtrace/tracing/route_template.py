"""A request's route as its span and metrics name it: the path template the router
matched, with the templates of the mounts it crossed in front.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Scope

__all__ = ["route_template"]


def route_template(scope: Scope, root_path: str = "") -> str | None:
    """The matched route's path template (``/items/{id}``), when the router set one.

    ``root_path`` is the scope's ``root_path`` when the request arrived. A Starlette
    ``Mount`` on the way lengthens it, and the route the inner router leaves in
    ``scope["route"]`` then knows only its own part (``/items/{id}`` for
    ``/sub/items/3``): the mounts' templates are put back in front of it, so routes of
    two sub-apps never share one name (FastAPI's telemetry names them the same way).
    """
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return None
    if scope.get("root_path", "") != root_path:
        mounts = _mounts_taken(scope, root_path)
        if mounts:
            prefix = "".join(mount.path for mount in mounts)
            return prefix if mounts[-1] is route else prefix + path
    return path


def _mounts_taken(scope: Scope, root_path: str) -> list[Any] | None:
    """The ``Mount`` routes the request went through, outermost first, found again by
    matching its path from the outermost router (``scope["router"]`` is set once, by
    it); ``None`` when they cannot be found (a root_path changed by something else)."""
    from starlette.routing import Match, Mount  # only requests that crossed a mount

    routes = getattr(scope.get("router"), "routes", None)
    final_root = scope.get("root_path", "")
    probe: dict[str, Any] = {
        "type": scope["type"], "path": scope.get("path", ""), "root_path": root_path,
    }
    mounts: list[Any] = []
    while probe["root_path"] != final_root:
        for candidate in routes or ():
            if isinstance(candidate, Mount):
                match, child_scope = candidate.matches(probe)
                if match is Match.FULL:
                    mounts.append(candidate)
                    probe.update(child_scope)
                    routes = candidate.routes
                    break
        else:
            return None
        if len(mounts) > 32:  # a mount cycle, somehow
            return None
    return mounts
