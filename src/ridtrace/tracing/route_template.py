"""A request's route as its span and metrics name it: the path template the router
matched, with the templates of the mounts it crossed in front.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Scope

__all__ = ["route_template"]

# FastAPI keeps what it knows of the request's route under this scope key, and there,
# under the second, the route as the application serves it: the routers' prefixes in.
_FASTAPI_SCOPE = "fastapi"
_FASTAPI_ROUTE_CONTEXT = "effective_route_context"


def route_template(scope: Scope, root_path: str = "") -> str | None:
    """The matched route's path template (``/items/{id}``), when the router set one,
    after the application's root path (``/gw/items/{id}`` under ``uvicorn --root-path
    /gw``): OpenTelemetry's ``http.route`` includes the application root, and FastAPI's
    own span names the route so; without it, ridtrace's route, the span it enriched and
    its own span's ``url.path`` disagreed for any app served behind a root path.
    """
    template = _template(scope, root_path)
    return None if template is None else root_path.rstrip("/") + template


def _template(scope: Scope, root_path: str) -> str | None:
    """The matched route's path template below the application's root path.

    ``root_path`` is the scope's ``root_path`` when the request arrived. A Starlette
    ``Mount`` on the way lengthens it, and the route the inner router leaves in
    ``scope["route"]`` then knows only its own part (``/items/{id}`` for
    ``/sub/items/3``): the mounts' templates are put back in front of it, so routes of
    two sub-apps never share one name (FastAPI's telemetry names them the same way).
    """
    route = scope.get("route")
    if route is None and "endpoint" in scope:
        # FastAPI's router, unlike Starlette's, leaves no route in the scope for a
        # Starlette route (app.add_route; FastAPI's own /docs and /openapi.json), only
        # its endpoint: such requests had no route and were counted as unmatched.
        route = _starlette_route(scope, root_path)
    path = _served_path(scope, route)
    if not isinstance(path, str):
        if route is None and scope.get("root_path", "") != root_path:
            # FastAPI's router, unlike Starlette's, leaves no route in the scope for a
            # Mount: a plain ASGI app mounted in a FastAPI app (StaticFiles,
            # prometheus_client's make_asgi_app) had no route at all, and its requests
            # were counted as unmatched. Named by its mounts, as under Starlette.
            mounts = _mounts_taken(scope, root_path)
            if mounts:
                return "".join(mount.path for mount in mounts)
        return None
    if scope.get("root_path", "") != root_path:
        mounts = _mounts_taken(scope, root_path)
        if mounts:
            prefix = "".join(mount.path for mount in mounts)
            return prefix if mounts[-1] is route else prefix + path
    return path


def _starlette_route(scope: Scope, root_path: str) -> Any:
    """The route whose endpoint served the request, when FastAPI left none in the scope.

    A route of a router included with a prefix is the one on FastAPI's route context;
    one of the application's (or of a mounted sub-app's) own list is found there by its
    endpoint, the same function on two paths told apart by matching the request again.
    """
    from starlette.routing import Match

    endpoint = scope["endpoint"]
    fastapi_scope = scope.get(_FASTAPI_SCOPE)
    if isinstance(fastapi_scope, dict):
        served = fastapi_scope.get(_FASTAPI_ROUTE_CONTEXT)
        original = getattr(served, "original_route", None)
        if getattr(original, "endpoint", None) is endpoint:
            return original
    routes = getattr(scope.get("router"), "routes", None)
    if scope.get("root_path", "") != root_path:
        mounts = _mounts_taken(scope, root_path)
        routes = mounts[-1].routes if mounts else None
    probe = {"type": scope["type"], "path": scope.get("path", ""),
             "root_path": scope.get("root_path", ""), "method": scope.get("method", "GET")}
    for candidate in routes or ():
        if (getattr(candidate, "endpoint", None) is endpoint
                and candidate.matches(probe)[0] is not Match.NONE):
            return candidate
    return None


def _mounts_taken(scope: Scope, root_path: str) -> list[Any] | None:
    """The ``Mount`` routes the request went through, outermost first, found again by
    matching its path from the outermost router (``scope["router"]`` is set once, by
    it); ``None`` when they cannot be found (a root_path changed by something else)."""
    routes = getattr(scope.get("router"), "routes", None)
    final_root = scope.get("root_path", "")
    probe: dict[str, Any] = {
        "type": scope["type"], "path": scope.get("path", ""), "root_path": root_path,
    }
    mounts: list[Any] = []
    while probe["root_path"] != final_root:
        found = _mount_matching(probe, routes)
        if found is None:
            return None
        mount, child_scope = found
        mounts.append(mount)
        probe.update(child_scope)
        routes = mount.routes
        if len(mounts) > 32:  # a mount cycle, somehow
            return None
    return mounts


def _mount_matching(probe: Scope, routes: Any) -> tuple[Any, Scope] | None:
    """The first of ``routes``' mounts that ``probe`` fully matches, with its child
    scope; ``None`` when none does."""
    from starlette.routing import Match, Mount

    for candidate in routes or ():
        if isinstance(candidate, Mount):
            match, child_scope = candidate.matches(probe)
            if match is Match.FULL:
                return candidate, child_scope
    # FastAPI (0.137 and later) keeps the mounts of a router included with a prefix
    # (router.mount("/m", sub); app.include_router(router, prefix="/users")) on its
    # included router's route contexts, with the prefix in their path: looked through
    # only when no mount of the list itself matched, the common case costing nothing
    # more. Not found, such a sub-app's routes were named without their mount.
    for candidate in routes or ():
        contexts = getattr(candidate, "effective_route_contexts", None)
        if not callable(contexts):
            continue
        for context in contexts():
            mount = getattr(context, "starlette_route", None)
            if isinstance(mount, Mount):
                match, child_scope = mount.matches(probe)
                if match is Match.FULL:
                    return mount, child_scope
    return None


def _served_path(scope: Scope, route: Any) -> Any:
    """``route``'s path template as the application serves it.

    FastAPI (0.137 and later) serves a router included with a prefix
    (``app.include_router(users, prefix="/users")``) without copying its routes: the
    route it leaves in ``scope["route"]`` is the router's own, whose path lacks every
    prefix it was included under (``/{user_id}``), and the path the application serves
    (``/users/{user_id}``) is on the route context FastAPI keeps in its part of the
    scope. The routes of two routers were named alike (``/{user_id}``, ``/{item_id}``
    as ``/{id}``), in ``request.end``, on the span and in the metric, where FastAPI's
    own span and OpenTelemetry's FastAPI instrumentation name them with the prefix.
    """
    fastapi_scope = scope.get(_FASTAPI_SCOPE)
    if isinstance(fastapi_scope, dict):
        served = fastapi_scope.get(_FASTAPI_ROUTE_CONTEXT)
        # Only the context of this very route: FastAPI leaves it for the route it chose.
        if served is not None and getattr(served, "original_route", None) is route:
            # The prefixed copy FastAPI matches with (a plain Starlette route's, as
            # create_router's), else the context's own path.
            path = getattr(getattr(served, "starlette_route", None), "path", None)
            if not isinstance(path, str) or not path:
                path = getattr(served, "path", None)
            if isinstance(path, str) and path:
                return path
    return getattr(route, "path", None)
