"""The Messages API's ``service_tier``, checked as Anthropic checks it.

Chat's and the Responses API's tiers were checked; this one was not looked at, so a
typo or another API's value (OpenAI's ``"flex"``) was served here and refused by the
real API (400), and the reply never said the tier that served it.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest

__all__ = ["anthropic_service_tier"]

_TIERS = ("auto", "standard_only")
"""The tiers a request may ask for (the anthropic SDK's ``service_tier``)."""


def anthropic_service_tier(body: dict[str, Any]) -> dict[str, Any]:
    """What the reply's ``usage`` says of the tier: ``standard`` (the one tier here)
    when the request asked for one, nothing when it did not (``null`` is not set).
    A value Anthropic does not take is refused in its words."""
    tier = body.get("service_tier")
    if tier is None:
        return {}
    if not isinstance(tier, str) or tier not in _TIERS:
        raise InvalidRequest("service_tier: Input should be 'auto' or 'standard_only'",
                             param="service_tier")
    return {"service_tier": "standard"}
