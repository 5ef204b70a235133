"""The echo engine's reply when the caller asked for JSON.

A JSON response format (chat's ``response_format``, the Responses API's
``text.format``, Anthropic's ``output_config.format``) is a promise that the reply
parses: callers ``json.loads`` it, and the SDKs' ``parse`` helpers validate it against
the caller's pydantic model. The plain echo (``"echo: " + prompt``) broke that promise
on every such call, so the engine answers these with a JSON document that still carries
its text reply:

* ``json_object``, or a schema that says nothing of its shape: ``{"reply": TEXT}`` (an
  object schema without properties holds one ``reply`` its ``additionalProperties``
  allow: ``dict[str, int]`` gets ``{"reply": 0}``);
* ``json_schema``: the least document the schema allows, read from its keywords —
  every property of an object (one not required left out when its type recurses),
  ``minItems`` items in an array (none
  by default; ``prefixItems`` one each), an ``enum``'s first value or the ``const``,
  ``0`` (or the bound nearest it) for a number, ``false``, ``null`` only where nothing
  else is allowed, and TEXT in every string (cut to ``maxLength``, padded with dots to
  ``minLength``; a known ``format`` such as ``date-time`` gets a fixed valid value).
  ``$ref`` (within the schema), ``anyOf``/``oneOf`` (the first branch that is not
  ``null`` and does not recurse), ``allOf`` and type lists are followed; ``pattern``
  and ``multipleOf`` are not.

TEXT is the reply a text call would get. The strings together hold at most
:data:`MAX_STRINGS` characters, each cut to its share, so a long prompt in a schema of
many strings cannot make a reply of gigabytes. What the schema itself fixes (property
names, ``const`` and ``enum`` values) is held to :data:`MAX_STRINGS` characters too,
however many times ``minItems`` repeats it. A schema with no finite document (a
required property that is its own type), nested deeper than :data:`MAX_DEPTH` or
needing more than :data:`MAX_STEPS` values is refused with ``ValueError``.
"""

from __future__ import annotations

import json
from typing import Any

from ridtrace.frontend_plugin.bodies import MAX_NESTING, nested_deeper_than
from ridtrace.frontend_plugin.schema_numbers import nearest_allowed_number
from ridtrace.tracing.identity import shown_text

__all__ = ["MAX_DEPTH", "MAX_STEPS", "MAX_STRINGS", "check_schema", "json_document"]

MAX_DEPTH = 64
"""Deepest nesting of a document followed (OpenAI allows 10 levels)."""
MAX_STEPS = 20_000
"""Most schema nodes looked at for one document (OpenAI allows 5000 properties)."""
MAX_STRINGS = 1 << 20
"""Most characters the strings of one document hold together; the most its property
names and fixed values (``const``, ``enum``) hold together, apart."""
# Digits of the largest array index a $ref may name: far more than any array holds.
_MAX_INDEX_DIGITS = 18

# Fixed values for the string formats pydantic and the SDKs write, each one its
# validator accepts.
_FORMATS = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00Z",
    "duration": "PT0S",
    "email": "echo@example.com",
    "uri": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "hostname": "localhost",
}


class _NoDocument(Exception):
    """This branch of the schema has no document (yet another may)."""


class _Text:
    """A string slot, filled once the number of slots (each one's share) is known."""

    __slots__ = ("longest", "shortest")

    def __init__(self, shortest: int, longest: int | None) -> None:
        self.shortest = shortest
        self.longest = longest


class _Builder:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.steps = 0
        self.texts = 0
        self.padding = 0  # the characters minLength asks for, all strings together
        # Characters the schema fixes (keys, const and enum values), each time it is
        # repeated: a const of 300 KB in 1000 items made a reply of 300 MB.
        self.fixed = 0
        self.refs: list[str] = []  # the $refs being expanded, outermost first
        # Each $ref resolved once: a pointer of 400,000 slashes split again at each of
        # 1,500 items held the event loop for 11 s, at one step of the budget each.
        self._targets: dict[str, Any] = {}
        self._sizes: dict[int, int] = {}  # a fixed value's size as JSON, by its id
        self._read_lists: dict[int, Any] = {}  # `once`: a keyword's list read, by its id

    def mark(self) -> tuple[int, int, int]:
        """The budgets spent so far, to give back when a branch has no document."""
        return self.texts, self.padding, self.fixed

    def give_back(self, mark: tuple[int, int, int]) -> None:
        self.texts, self.padding, self.fixed = mark

    def spend_fixed(self, characters: int) -> None:
        self.fixed += characters
        if self.fixed > MAX_STRINGS:
            raise ValueError(f"the schema's property names and const and enum values come "
                             f"to more than {MAX_STRINGS} characters")

    def json_size(self, value: Any) -> int:
        """Characters `value` takes in the document (a control character escaped is six)."""
        size = self._sizes.get(id(value))
        if size is None:
            size = self._sizes[id(value)] = len(json.dumps(value, ensure_ascii=False))
        return size

    def fixed_value(self, value: Any) -> Any:
        """A const or enum value, its size charged each time it is put in the document."""
        self.spend_fixed(self.json_size(value))
        return value

    def once(self, listed: list[Any], read: Any) -> Any:
        """`read(listed)` the first time this list is met, its answer kept: a ``required``
        list of 300,000 names or a ``type`` list of 20,000, read again at every item
        ``minItems`` repeats, held the event loop for seconds. Read once, its cost is its
        length in the body, which the body's size bounds; counted against the steps at
        every visit, a strict schema of 4,999 optional fields was over the budget."""
        if id(listed) not in self._read_lists:
            self._read_lists[id(listed)] = read(listed)
        return self._read_lists[id(listed)]

    def spend(self, steps: int) -> None:
        """Count work against the budget, before doing it. An ``allOf``'s parts, walked at
        every visit, count their number: 500,000 empty parts repeated by ``minItems`` held
        the event loop for minutes at one step a visit."""
        self.steps += steps
        if self.steps > MAX_STEPS:
            raise ValueError(f"the schema needs more than {MAX_STEPS} values")

    def value(self, schema: Any, depth: int) -> Any:
        self.spend(1)
        if depth > MAX_DEPTH:
            raise ValueError(f"the schema nests deeper than {MAX_DEPTH} levels")
        if schema is True:
            schema = {}
        if not isinstance(schema, dict):
            raise _NoDocument("a schema of false, or not an object")
        if "$ref" in schema:
            return self.ref(schema["$ref"], depth)
        if "allOf" in schema:
            return self.value(self.merged(schema), depth + 1)
        if "const" in schema:
            return self.fixed_value(schema["const"])
        if isinstance(schema.get("enum"), list):
            if not schema["enum"]:
                raise _NoDocument("an empty enum")
            return self.fixed_value(schema["enum"][0])
        if schema.get("not") in ({}, True):
            raise _NoDocument("'not' of a schema every value meets")
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                return self.first_of(schema[key], depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = self.once(kind, lambda kinds: next((k for k in kinds if k != "null"), "null"))
        if kind is None:
            # Nothing said of its shape: the document is an object (as json_object
            # asks), a value inside it the text.
            kind = ("object" if depth == 0 or "properties" in schema
                    else "array" if "items" in schema or "prefixItems" in schema else "string")
        return self.typed(kind, schema, depth)

    def typed(self, kind: Any, schema: dict[str, Any], depth: int) -> Any:
        if kind == "object":
            properties = schema.get("properties")
            if not isinstance(properties, dict) or not properties:
                # Nothing said of its keys: the reply under one, unless none are allowed
                # (a map's values follow their schema: dict[str, int] gets a number).
                extra = schema.get("additionalProperties", True)
                if extra is False:
                    return {}
                self.spend_fixed(len("reply"))
                return {"reply": self.value(extra if isinstance(extra, dict) else True,
                                            depth + 1)}
            return self.properties(properties, schema.get("required"), depth)
        if kind == "array":
            return self.array(schema, depth)
        if kind == "string":
            if isinstance(schema.get("format"), str) and schema["format"] in _FORMATS:
                return self.fixed_value(_FORMATS[schema["format"]])
            longest = schema.get("maxLength")
            shortest = _count(schema.get("minLength"))
            if isinstance(longest, int) and shortest > longest:
                raise _NoDocument("minLength above maxLength")
            return self.text(shortest, longest if isinstance(longest, int) else None)
        if kind in ("integer", "number"):
            number = nearest_allowed_number(schema, integer=kind == "integer")
            if number is None:
                raise _NoDocument("bounds that hold no number")
            self.spend_fixed(len(repr(number)))  # a minimum of 1e308 is 309 digits
            return number
        if kind == "boolean":
            return False
        if kind == "null":
            return None
        raise _NoDocument(f"unknown type {_quoted(kind)}")

    def properties(self, properties: dict[str, Any], required: Any, depth: int
                   ) -> dict[str, Any]:
        """Every property; one with no document is left out when not required (a
        recursive type met through an optional property ends there)."""
        needed = self.once(required, lambda names: {n for n in names if isinstance(n, str)}
                           ) if isinstance(required, list) else set()
        document: dict[str, Any] = {}
        for name, sub in properties.items():
            mark = self.mark()
            try:
                self.spend_fixed(self.json_size(name))
                document[str(name)] = self.value(sub, depth + 1)
            except _NoDocument:
                if name in needed:
                    raise
                self.give_back(mark)
        return document

    def array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        if prefix is None and isinstance(schema.get("items"), list):  # draft 4 tuples
            prefix = schema["items"]
        prefix = prefix if isinstance(prefix, list) else []
        items = [self.value(sub, depth + 1) for sub in prefix]
        rest = schema.get("items", True) if not isinstance(schema.get("items"), list) else True
        most = schema.get("maxItems")
        if isinstance(most, int) and _count(schema.get("minItems")) > most:
            raise _NoDocument("minItems above maxItems")
        while len(items) < _count(schema.get("minItems")):
            items.append(self.value(rest, depth + 1))
        return items

    def text(self, shortest: int, longest: int | None) -> _Text:
        self.texts += 1
        self.padding += shortest
        if self.padding > MAX_STRINGS:
            raise ValueError(f"the schema's minLengths ask for more than {MAX_STRINGS} "
                             "characters")
        return _Text(shortest, max(longest, 0) if longest is not None else None)

    def ref(self, ref: Any, depth: int) -> Any:
        if ref in self.refs:
            raise _NoDocument(f"{_quoted(ref)} contains itself")  # another branch may end it
        target = self.target(ref)
        self.refs.append(ref)
        try:
            return self.value(target, depth + 1)
        finally:
            self.refs.pop()

    def first_of(self, branches: list[Any], depth: int) -> Any:
        # null last: a document that carries the reply says more than a bare null.
        self.spend(len(branches))  # the sort's work counts, each time it is done
        ordered = sorted(branches,
                         key=lambda sub: isinstance(sub, dict) and sub.get("type") == "null")
        for branch in ordered:
            mark = self.mark()
            try:
                return self.value(branch, depth + 1)
            except _NoDocument:
                self.give_back(mark)
        raise _NoDocument("no branch of an anyOf/oneOf has a document")

    def merged(self, schema: dict[str, Any]) -> dict[str, Any]:
        """An ``allOf`` as one schema: the keywords of each part, the properties of all."""
        merged = {key: value for key, value in schema.items() if key != "allOf"}
        properties: dict[str, Any] = {}
        parts = schema["allOf"] if isinstance(schema["allOf"], list) else []
        self.spend(len(parts))  # each part looked at here and by _common_type, {} too
        for part in [schema, *parts]:
            if isinstance(part, dict) and "$ref" in part and part is not schema:
                part = self.target(part["$ref"])  # one level: a part's own refs stay
            if not isinstance(part, dict):
                continue
            # Copying counts as work too: a part of thousands of properties merged at
            # each of thousands of references held the event loop for seconds.
            self.spend(len(part))
            if isinstance(part.get("type"), list):  # walked by _common_type
                self.spend(len(part["type"]))
            if isinstance(part.get("properties"), dict):
                self.spend(len(part["properties"]))
                properties.update(part["properties"])
            if part is not schema:
                merged.update({k: v for k, v in part.items() if k != "properties"})
        if properties:
            merged["properties"] = properties
        _common_type([schema, *parts])
        return merged

    def target(self, ref: Any) -> Any:
        """What a ``$ref`` names: a JSON pointer into the schema itself."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise ValueError("only '$ref's within the schema ('#/...') are followed")
        if ref not in self._targets:
            self._targets[ref] = self._resolved(ref)
        return self._targets[ref]

    def _resolved(self, ref: str) -> Any:
        target: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            # The length bounded before int(), which raises past 4300 digits: the 400
            # quoted Python's advice to call sys.set_int_max_str_digits().
            index = part.lstrip("0") or "0"
            if (isinstance(target, list) and part.isdigit() and len(index) <= _MAX_INDEX_DIGITS
                    and int(index) < len(target)):
                target = target[int(index)]
            elif isinstance(target, dict) and part in target:
                target = target[part]
            else:
                raise ValueError(f"'$ref' {_quoted(ref)} names nothing in the schema")
        return target


# The refusals quote the caller's schema, and they end up on log lines (the frontend's
# request.end, a worker's worker.refused): capped and with controls escaped, as every
# client string on a line is. repr() alone left a 1 MB type name whole, and a $ref's
# C1 CSI or bidi override went raw (orjson writes both as they are).
_MAX_QUOTED = 200


def _common_type(parts: list[Any]) -> None:
    """Refuse an ``allOf`` whose parts' types have none in common (a string and an
    integer): the document built from the merged keywords was one the caller's
    validator refused. An integer is a number."""
    common: set[str] | None = None
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind is None:
            continue
        kinds = {k for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str)}
        if "number" in kinds:
            kinds.add("integer")
        common = kinds if common is None else common & kinds
    if common is not None and not common:
        raise _NoDocument("an allOf whose parts' types have none in common")


def _quoted(value: Any) -> str:
    return shown_text(repr(value), _MAX_QUOTED)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _skeleton(schema: dict[str, Any]) -> tuple[Any, int]:
    builder = _Builder(schema)
    try:
        document = builder.value(schema, 0)
    except _NoDocument as exc:
        raise ValueError(f"the schema allows no document ({exc})") from None
    except RecursionError:
        raise ValueError(f"the schema nests deeper than {MAX_DEPTH} levels") from None
    return document, builder.texts


def check_schema(schema: dict[str, Any]) -> None:
    """Raise ``ValueError`` saying why no reply can be built for ``schema``."""
    # Checked apart from the document's depth: keywords the builder never follows
    # (a const's value, a description object) travel in the work envelope too.
    if nested_deeper_than(schema, MAX_NESTING):
        raise ValueError(f"the schema nests deeper than {MAX_NESTING} levels as JSON")
    _skeleton(schema)


def json_document(schema: dict[str, Any], text: str) -> str:
    """The JSON reply for ``schema`` (``{}``: any object) carrying ``text``."""
    document, texts = _skeleton(schema)
    share = MAX_STRINGS // max(texts, 1)

    def fill(slot: Any) -> str:
        if not isinstance(slot, _Text):
            raise TypeError(f"{type(slot).__name__} in a reply document")
        cut = text[:min(share, slot.longest if slot.longest is not None else share)]
        return cut + "." * (slot.shortest - len(cut))

    return json.dumps(document, default=fill, ensure_ascii=False)
