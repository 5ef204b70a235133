"""A ``strict`` JSON schema response format or function tool, checked as OpenAI checks it.

With ``strict: true`` OpenAI takes only schemas whose every object lists all its
properties in ``required`` and sets ``additionalProperties: false``; a hand-written
schema missing either is its most common structured-output 400. The echo engine can
answer such a schema (and never calls a tool), so it was served here and refused at the
real API. The SDKs' ``parse`` helpers and ``pydantic_function_tool`` write schemas that
pass.
"""

from __future__ import annotations

from typing import Any

from ridtrace.frontend_plugin.bodies import InvalidRequest, kind_of
from ridtrace.tracing.identity import shown_text

__all__ = ["check_strict_schema", "strict_flag"]

# Where subschemas sit, as OpenAI's strict mode walks them.
_SCHEMA_MAPS = ("properties", "$defs", "definitions")
_SCHEMA_LISTS = ("anyOf",)
_SHOWN_KEY = 64  # property names are the caller's text


def strict_flag(holder: dict[str, Any], param: str) -> bool:
    """The ``strict`` of a format or a function (``false`` when absent or null): a
    boolean, as OpenAI takes it. ``"true"`` from a config file was served as not
    strict, its schema unchecked, where OpenAI answers 400 naming ``param``."""
    strict = holder.get("strict")
    if strict is not None and not isinstance(strict, bool):
        kind = kind_of(strict)
        article = "an" if kind[0] in "aeiou" else "a"  # OpenAI's wording
        raise InvalidRequest(f"Invalid type for '{param}': expected a boolean, but got "
                             f"{article} {kind} instead.", param=param)
    return strict is True


def check_strict_schema(schema: dict[str, Any], name: str, param: str, *,
                        of: str = "response_format", code: str | None = None,
                        object_root: bool = False) -> None:
    """Refuse ``schema`` (of the ``of`` named ``name``: a response format or a
    ``function``, at ``param``, with the error ``code``) unless every object in it has
    ``additionalProperties: false`` and all its properties ``required``, and, when
    ``object_root`` (a response format's), unless a schema given is of ``type: object``
    (a function's parameters are checked so whether strict or not)."""
    where = f"Invalid schema for {of} '{shown_text(name, 64)}'"
    if object_root and schema and schema.get("type") != "object":
        # Structured Outputs take an object at the root, not an array (a list of
        # items), a string or an anyOf: OpenAI refuses the call.
        got = shown_text(str(schema.get("type")), 64)
        raise InvalidRequest(f"{where}: schema must be a JSON Schema of 'type: \"object\"', "
                             f"got 'type: \"{got}\"'.", param=param, code=code)
    stack: list[tuple[Any, tuple[str, ...]]] = [(schema, ())]
    while stack:
        node, context = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("type") == "object" or "properties" in node:
            _check_object(node, f"{where}: In context={context!r}", param, code)
        for key in _SCHEMA_MAPS:
            children = node.get(key)
            if isinstance(children, dict):
                stack.extend((child, (*context, key, str(k))) for k, child in children.items())
        for key in _SCHEMA_LISTS:
            children = node.get(key)
            if isinstance(children, list):
                stack.extend((child, (*context, key, str(i))) for i, child in enumerate(children))
        if isinstance(node.get("items"), dict):
            stack.append((node["items"], (*context, "items")))


def _check_object(node: dict[str, Any], where: str, param: str, code: str | None) -> None:
    if node.get("additionalProperties") is not False:
        raise InvalidRequest(f"{where}, 'additionalProperties' is required to be supplied "
                             "and to be false.", param=param, code=code)
    properties = node.get("properties")
    keys = list(properties) if isinstance(properties, dict) else []
    required = node.get("required")
    missing = [k for k in keys if not isinstance(required, list) or k not in required]
    if missing:
        raise InvalidRequest(
            f"{where}, 'required' is required to be supplied and to be an array including "
            f"every key in properties. Missing '{shown_text(missing[0], _SHOWN_KEY)}'.",
            param=param, code=code)
