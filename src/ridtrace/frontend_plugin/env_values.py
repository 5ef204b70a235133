"""Settings values read from the environment: each variable parsed, a refused value
named by the variable that set it, numbers that would fail every request refused."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

__all__ = ["built_from", "comma_list", "flag", "optional_int", "read_prefixed",
           "refuse_unknown", "require_numbers"]

_T = TypeVar("_T")


def require_numbers(
    settings: object, *, positive: tuple[str, ...] = (), non_negative: tuple[str, ...] = ()
) -> None:
    """Refuse at start-up what would fail every request later: a negative or zero
    body limit answered every request 413, a negative timeout every request 504."""
    for names, least in ((positive, "positive"), (non_negative, "non-negative")):
        for name in names:
            value = getattr(settings, name)
            if value is None:
                continue
            if not math.isfinite(value) or value < 0 or (value == 0 and least == "positive"):
                raise ValueError(f"{name} must be a {least} number, not {value!r}")


def optional_int(value: str) -> int | None:
    return int(value) if value.strip() else None


_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def flag(value: str) -> bool:
    # Any other word was read as off: ..._METRICS_REQUIRE_KEY=on left /metrics open.
    word = value.strip().lower()
    if word not in _ON + _OFF:
        raise ValueError(f"neither on ({', '.join(_ON)}) nor off ({', '.join(_OFF)})")
    return word in _ON


def comma_list(value: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in value.split(",") if item.strip())


def read_prefixed(
    environ: Mapping[str, str] | None,
    prefix: str,
    fields: Mapping[str, Callable[[str], Any]],
) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for name, parse in fields.items():
        raw = env.get(prefix + name.upper())
        if raw is not None and raw != "":
            try:
                out[name] = parse(raw)
            except ValueError as exc:  # "invalid literal for int()" alone names nothing
                raise ValueError(f"{prefix}{name.upper()}={raw!r}: {exc}") from None
    return out


def refuse_unknown(
    environ: Mapping[str, str] | None,
    prefix: str,
    known: Iterable[str],
    elsewhere: Mapping[str, str] | None = None,
) -> None:
    """Refuse a non-empty ``PREFIX*`` variable that names none of `known` (field names).

    Ignored, a misnamed variable left its setting at the default without a word:
    ``RIDTRACE_FRONTEND_API_KEYS`` (the field is ``api_keys``, the variable
    ``RIDTRACE_API_KEYS``) served every route without a key. `elsewhere` maps a suffix
    to the variable actually read for it. The value is never shown: it may be a secret.
    """
    env = os.environ if environ is None else environ
    names = {prefix + name.upper() for name in known}
    for variable in sorted(env):
        if variable.startswith(prefix) and variable not in names and env[variable] != "":
            meant = (elsewhere or {}).get(variable[len(prefix):])
            raise ValueError(f"{variable} names no setting" + (
                f": the variable for it is {meant}" if meant else
                f" (the {prefix}* variables are listed in docs/frontend-plugin.md)"))


def built_from(cls: Callable[..., _T], prefix: str, values: dict[str, Any]) -> _T:
    """``cls(**values)``; a value it refuses is named by the variable that set it
    (``total_timeout must be positive`` named no variable an operator could find)."""
    try:
        return cls(**values)
    except ValueError as exc:
        for name in values:
            if str(exc).startswith(f"{name} "):
                raise ValueError(f"{prefix}{name.upper()}: {exc}") from None
        raise
