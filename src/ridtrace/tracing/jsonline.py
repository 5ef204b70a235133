"""One log line as JSON: the shape every ridtrace line has (docs/log-schema.md).

``time``, ``level``, ``message``, ``logger``, ``schema``, ``service``, ``pid``, then the
request's ids, then the line's own fields; flat, UTC, newline-terminated. Loguru
records (:func:`ridtrace.tracing.logs.format_record`) and ridtrace's own events are
rendered by the same rules here. An event is rendered as bytes in two parts: a head
that only depends on the level, message, logger and the sink's service (built once
and kept by the sink), and a tail of ids and fields, encoded once for every sink.
"""

from __future__ import annotations

import contextlib
import enum
import json
import math
import os
import time
from collections.abc import Iterator, Mapping, MutableMapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import orjson

from ridtrace.contract import APPLICATION_RESERVED, LINE_KEYS, LOG_SCHEMA
from ridtrace.tracing.context import RequestContext, current_context

__all__ = [
    "APPLICATION_RESERVED",
    "CONTEXT_KEYS",
    "EVENT_IDS",
    "EVENT_THROUGH_LOGURU",
    "IDS_SETTLED",
    "LEVEL_NAMES",
    "add_annotations",
    "add_context_ids",
    "add_fields",
    "dumps",
    "event_head",
    "event_line",
    "event_tail",
    "event_through_loguru",
    "flatten",
    "free_name",
    "ids_as_context",
    "ids_named",
    "pid",
    "request_ids_first",
    "schema_level",
    "utc_now",
    "utc_stamp",
]

# Keys the formatter owns; an extra with one of these names is written with a
# leading underscore instead of overwriting the real value. `exception` and `traceback`
# are a logged exception's: an application's own was lost under them, or made a line
# without one look like an exception's. On an application's line, the lifecycle fields
# forensics reads are the formatter's too (`contract.APPLICATION_RESERVED`): `"event":
# "response.unlinked"` from a webhook's payload was an Unlinked failure of the request
# that logged it, and exit 1.
_RESERVED = LINE_KEYS
CONTEXT_KEYS = ("request_id", "x_request_id", "trace_id", "span_id", "parent_span_id")
LEVEL_NAMES = {"WARNING": "WARN", "SUCCESS": "INFO"}
_SCHEMA_LEVELS = frozenset({"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL"})
# Loguru's numbers (the standard library's, TRACE aside): the highest one a level
# reaches names it.
_LEVEL_FLOORS = ((50, "CRITICAL"), (40, "ERROR"), (30, "WARN"), (20, "INFO"), (10, "DEBUG"))
_NONE_ID = id(None)


# Set while ridtrace's own event goes through loguru (`eventlog`): its fields name the
# ids it means, where an application's value of one gives way to the request's.
EVENT_THROUGH_LOGURU: ContextVar[bool] = ContextVar("ridtrace_event_through_loguru",
                                                    default=False)
# The ids such an event names (its own fields', else its request's): a patcher of the
# application's, run on its record after, could set `request_id` itself.
EVENT_IDS: ContextVar[Mapping[str, Any] | None] = ContextVar("ridtrace_event_ids", default=None)


@contextlib.contextmanager
def event_through_loguru(fields: Mapping[str, Any]) -> Iterator[None]:
    """ridtrace's own event with `fields` goes through loguru in this block."""
    ids = {key: fields[key] for key in CONTEXT_KEYS if fields.get(key) is not None}
    ctx = current_context()
    if ctx is not None:
        add_context_ids(ids, ctx)  # those the event does not name are its request's
    marked, named = EVENT_THROUGH_LOGURU.set(True), EVENT_IDS.set(ids)
    try:
        yield
    finally:
        EVENT_IDS.reset(named)
        EVENT_THROUGH_LOGURU.reset(marked)


def ids_named(extra: dict[str, Any], ids: Mapping[str, Any]) -> dict[str, Any]:
    """`extra` with exactly `ids` under the id keys (a copy when it changes anything); a
    value of the record's that differs, or under a key `ids` has none of, is kept under a
    free ``_`` name, as `request_ids_first` keeps an application's."""
    named: dict[str, Any] | None = None
    for key in CONTEXT_KEYS:
        value, theirs = ids.get(key), extra.get(key)
        if theirs is value or theirs == value:
            continue
        if named is None:
            named = {**extra}
        if theirs is not None:
            named[free_name(key, named)] = named.pop(key)
        if value is not None:
            named[key] = value
    return extra if named is None else named


# A loguru record's key, set where a line's ids were chosen on purpose (the request an
# exception escaped, `stdlib_bridge`): the sink leaves them as they are.
IDS_SETTLED = "ridtrace_ids_settled"


def add_context_ids(extra: MutableMapping[str, Any], ctx: RequestContext) -> None:
    """The request's ids, except where the line already names one: an id the caller
    passed wins over the context's."""
    for key in CONTEXT_KEYS:
        value = getattr(ctx, key)
        if value is not None:
            extra.setdefault(key, value)


def request_ids_first(
    extra: MutableMapping[str, Any], ctx: RequestContext, placeholders: tuple[str, ...] = ()
) -> None:
    """The request's ids into an application's record. A value of the application's
    own under one of their keys (``logger.bind(request_id=...)``, ``contextualize``, a
    keyword), when it differs, is kept as ``_request_id`` & co, as a standard-library
    ``extra`` is: an old middleware that contextualized the client's ``x-request-id``
    as ``request_id`` wrote the client's id in the server's place, and two callers
    sharing it shared their lines' id. So is one under a key the request has no value
    of: a client id ridtrace rejected, or one a request that sent none never had.
    `placeholders`: keys whose value is a configured default, left as they are."""
    for key in CONTEXT_KEYS:
        value = getattr(ctx, key)
        theirs = extra.get(key)
        if value is None:
            # A configured default stays for the application's format strings.
            if theirs is not None and key not in placeholders:
                extra[free_name(key, extra)] = extra.pop(key)
            continue
        if theirs is not None and theirs != value:
            extra[free_name(key, extra)] = theirs
        extra[key] = value


def ids_as_context(extra: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
    """`extra` with the request's ids as `request_ids_first` puts them (a copy when
    it changes anything): what the sink writes whatever ran between the patcher and it.

    Loguru runs a per-call ``logger.patch(...)`` after the patcher, and an application's
    ``logger.configure(patcher=...)`` replaces ridtrace's: either could set ``request_id``
    (an old middleware's client id), which was written in the server's id's place."""
    return ids_named(extra, {key: getattr(ctx, key) for key in CONTEXT_KEYS})


def free_name(key: str, *taken: Mapping[str, Any]) -> str:
    """``_key``, or ``__key`` and so on where that name is taken too: an application
    that binds both ``time`` and ``_time`` keeps both values."""
    name = "_" + key
    while any(t.get(name) is not None for t in taken):
        name = "_" + name
    return name


def schema_level(name: str, number: int) -> str:
    """The schema's name for a record's level: an application's own level (loguru's
    ``logger.level("NOTICE", no=25)``, the standard library's ``addLevelName``, an
    unnamed ``Level 35``) is written as the schema level at or below its number, since
    readers only know the six names."""
    known = LEVEL_NAMES.get(name, name)
    if known in _SCHEMA_LEVELS:
        return known
    return next((schema for floor, schema in _LEVEL_FLOORS if number >= floor), "TRACE")


# (whole UTC second, its "YYYY-MM-DDTHH:MM:SS" text): lines written within one second
# share the prefix, so only the microseconds are formatted per line. Replaced as one
# tuple, so concurrent writers never see a second paired with another's text.
_stamp_cache: tuple[int, str] = (-1, "")


def _stamp(second: int, microsecond: int) -> str:
    global _stamp_cache
    cached_second, prefix = _stamp_cache
    if second != cached_second:
        prefix = datetime.fromtimestamp(second, UTC).isoformat()[:-6]
        _stamp_cache = (second, prefix)
    return f"{prefix}.{microsecond:06d}Z"


def utc_stamp(moment: datetime) -> str:
    """``moment`` as the lines' ``time``: ISO 8601, UTC, microseconds, ``Z``."""
    # timestamp() is exact to well under a microsecond for current dates, so its floor
    # is the UTC second and the microseconds are the record's own (offsets are whole
    # seconds), matching fromtimestamp(...).isoformat(timespec="microseconds").
    return _stamp(math.floor(moment.timestamp()), moment.microsecond)


def utc_now() -> str:
    """Now, as :func:`utc_stamp` writes it."""
    second, microsecond = divmod(time.time_ns() // 1000, 1_000_000)
    return _stamp(second, microsecond)


# getpid() is a real syscall in current glibc; the id only changes in a forked child.
_pid = os.getpid()


def pid() -> int:
    """This process's id, refreshed in a forked child."""
    return _pid


def _refresh_pid() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_refresh_pid)


def add_fields(
    line: dict[str, Any], fields: Mapping[str, Any], reserved: frozenset[str] = _RESERVED
) -> None:
    """Copy ``fields`` into ``line``: ``None`` left out, ``reserved`` names prefixed ``_``
    (an application's line passes `APPLICATION_RESERVED`)."""
    # The usual case, no reserved key and no None, in one C-level update. None is
    # found by identity: a value's own __eq__ (an array's, say) must never run here.
    if reserved.isdisjoint(fields) and _NONE_ID not in map(id, fields.values()):
        line.update(fields)
        return
    for key, value in fields.items():
        if value is not None:  # absent, not null: keeps lines short and columns sparse
            line[free_name(key, line, fields) if key in reserved else key] = value


def dumps(line: Any) -> bytes:
    """``line`` as newline-terminated JSON; never fails on a value's content."""
    try:
        return orjson.dumps(line, default=_text_of, option=orjson.OPT_APPEND_NEWLINE)
    except (TypeError, orjson.JSONEncodeError):
        # Lone surrogates (undecodable bytes smuggled into str) and other values orjson
        # refuses: fall back to the stdlib's ASCII-escaping encoder rather than lose the line.
        # It writes NaN and Infinity bare (not JSON); null, as orjson writes them.
        return (json.dumps(_plain(line), default=_text_of, ensure_ascii=True)
                + "\n").encode("ascii")


def _text_of(value: Any) -> str:
    """A value JSON has no type for, as its ``str()``; when that raises (a detached ORM
    object bound to the logger), as ``traceback`` shows such an exception: the line was
    lost, with a "Logging error" traceback on stderr."""
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__} str() failed>"


# Values JSON writes as an object or an array.
_NESTED = (dict, list, tuple, set, frozenset)
# What most values are: settled by one lookup, before the rarer kinds are looked at.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _is_nested(value: Any) -> bool:
    """Whether orjson writes ``value`` as an object or an array: the containers, and
    what it writes as one of its own accord, a dataclass instance and an enum member
    whose value is one (a class, dataclass or not, goes to ``str``)."""
    if isinstance(value, _NESTED):
        return True
    kind = type(value)
    if kind in _SCALARS:
        return False
    if isinstance(value, enum.Enum):
        return _is_nested(value.value)
    return hasattr(kind, "__dataclass_fields__")


def flatten(line: dict[str, Any]) -> None:
    """Write an object or array value as its JSON text: the schema's keys are flat, and
    one key must keep one type for readers that load the lines as columns."""
    for key, value in line.items():
        if _is_nested(value):
            line[key] = _json_text(value)


def _json_text(value: Any) -> str:
    # JSON has no sets: a set would otherwise become the string of its repr.
    plain = list(value) if isinstance(value, (set, frozenset)) else value
    return dumps(plain)[:-1].decode()


# Not a field of the line: how a handler decides the request's outcome.
_OUTCOME_OVERRIDE = "outcome_override"
# Names an event's fields cannot take as keywords: a line's own keys, and the parameters
# of the calls that write it (`EventLog.info(self, message, **fields)`).
_ANNOTATION_CLASHES = _RESERVED | {"self"}


def add_annotations(fields: dict[str, Any], annotations: Mapping[str, Any]) -> None:
    """What handlers attached with ``annotate_request`` onto an end line's ``fields``.

    They are the application's fields: one named like a field the line has already
    (``status``, ``route``) or like a request-context key (``request_id``) is written
    with a leading ``_``, as a reserved name is; it replaced the server's own, so a
    handler's business ``request_id`` took the place of the minted one on the very
    line forensics reads, and ``status="premium"`` an integer column's value. An object
    or an array is written as its JSON text, as on any line.
    """
    for key, value in annotations.items():
        if key == _OUTCOME_OVERRIDE:
            continue
        # A line's own keys too (`message`, `level`): given as the event's keyword
        # fields, `message` clashed with the event's text, and the TypeError cost the
        # request its end line and its span (gRPC: the call's answer).
        if key in fields or key in CONTEXT_KEYS or key in _ANNOTATION_CLASHES:
            key = "_" + key
        fields[key] = _json_text(value) if _is_nested(value) else value


# Dict keys the stdlib encoder writes itself (as strings); it refuses any other.
_JSON_KEYS = (str, int, float, bool, type(None))
# Deeper nesting is written as its text: a structure that holds itself has no end.
_MAX_DEPTH = 64


def _plain(value: Any, depth: int = 0) -> Any:
    """``value`` as the stdlib encoder takes it: every non-finite float (in lists, tuples
    and dict values) as None, a dict key it refuses (a tuple) as its text, and nesting
    past ``_MAX_DEPTH`` (a cycle) as text. Either refusal lost the whole line."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (dict, list, tuple)) and depth >= _MAX_DEPTH:
        return str(value)
    if isinstance(value, dict):
        return {
            key if isinstance(key, _JSON_KEYS) else str(key): _plain(item, depth + 1)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_plain(item, depth + 1) for item in value]
    return value


def event_line(
    source: str, level: str, message: str, fields: Mapping[str, Any], ctx: RequestContext | None
) -> dict[str, Any]:
    """The line an event would become through loguru and the patcher, as a dict.

    ``service`` is a placeholder each sink fills in: sinks may name different services.
    """
    line: dict[str, Any] = {
        "time": utc_now(),
        "level": LEVEL_NAMES.get(level, level),
        "message": message,
        "logger": source,
        "schema": LOG_SCHEMA,
        "service": "",
        "pid": _pid,
    }
    line.update(_ids_and_fields(fields, ctx))
    return line


def _ids_and_fields(fields: Mapping[str, Any], ctx: RequestContext | None) -> dict[str, Any]:
    if ctx is None:
        rest: dict[str, Any] = {}
    elif fields.keys().isdisjoint(CONTEXT_KEYS):
        # add_context_ids spelt out: this runs for every event of every request.
        rest = {"request_id": ctx.request_id}
        if ctx.x_request_id is not None:
            rest["x_request_id"] = ctx.x_request_id
        rest["trace_id"] = ctx.trace_id
        rest["span_id"] = ctx.span_id
        if ctx.parent_span_id is not None:
            rest["parent_span_id"] = ctx.parent_span_id
    else:  # rare: keep the caller's id (or its None: no id), as the patcher does
        rest = {}
        fields = {**fields}
        add_context_ids(fields, ctx)
    add_fields(rest, fields)
    return rest


def event_head(level: str, message: str, source: str, service: str) -> bytes:
    """What follows the time stamp, up to ``pid``: ``","level":…,"pid":N``."""
    return b"".join((
        b'","level":', _value(LEVEL_NAMES.get(level, level)),
        b',"message":', _value(message),
        b',"logger":', _value(source),
        b',"schema":', _value(LOG_SCHEMA),
        b',"service":', _value(service),
        b',"pid":', b"%d" % _pid,
    ))


def event_tail(fields: Mapping[str, Any], ctx: RequestContext | None) -> bytes:
    """The ids and fields after ``pid``, with the closing brace and newline."""
    rest = _ids_and_fields(fields, ctx)
    if not rest:
        return b"}\n"
    return b"," + dumps(rest)[1:]


def _value(value: str) -> bytes:
    return dumps(value)[:-1]
