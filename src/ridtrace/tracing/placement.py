"""Where the middleware runs when it is wrapped around a FastAPI application.

FastAPI's built-in telemetry opens its server span in ``FastAPI.__call__``, around
the app's middleware stack, and parents it on the request's headers rather than on the
current span. A ``RequestTracingMiddleware`` wrapped *around* the app therefore cannot
enrich that span (it does not exist yet when the wrapper starts) and, opening its own,
was a second server span beside FastAPI's. Inside the stack, where ``add_middleware``
puts it, it finds FastAPI's span current and enriches it, as the design asks.
"""

from __future__ import annotations

import sys
from typing import Any

from starlette.middleware import Middleware

__all__ = ["moved_into_fastapi"]


def moved_into_fastapi(app: Any, middleware_class: Any, **options: Any) -> bool:
    """Install ``middleware_class(**options)`` as ``app``'s outermost user middleware
    when ``app`` is a FastAPI application whose middleware stack is not built yet.

    Returns whether it did: the wrapper then only passes requests on. FastAPI is looked
    up in ``sys.modules``, never imported: an app that is a FastAPI instance has
    imported it already, and ``ridtrace.tracing`` must stay off FastAPI's machinery.
    """
    fastapi = sys.modules.get("fastapi")
    application = getattr(fastapi, "FastAPI", None)
    if application is None or not isinstance(app, application):
        return False
    if app.middleware_stack is not None:  # already serving: too late to add to it
        return False
    # What app.add_middleware does, which refuses once the app has started.
    app.user_middleware.insert(0, Middleware(middleware_class, **options))
    return True
