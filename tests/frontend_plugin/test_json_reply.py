"""The echo engine's JSON replies: documents the caller's schema (and pydantic) accept."""

from __future__ import annotations

import datetime
import enum
import json
import uuid
from typing import Any, Literal

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.lib._pydantic import to_strict_json_schema

from ridtrace.frontend_plugin.engine import echo_reply, echo_tokens
from ridtrace.frontend_plugin.json_reply import MAX_STRINGS, check_schema, json_document

TEXT = "echo: user: what is the answer?"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(pydantic.BaseModel):
    when: datetime.datetime
    day: datetime.date
    key: uuid.UUID
    tags: list[str]
    pair: tuple[int, str]


class Tree(pydantic.BaseModel):
    name: str
    left: Tree | None
    right: Tree | None
    children: list[Tree]


class Answer(pydantic.BaseModel):
    text: str
    count: int = pydantic.Field(ge=3, lt=9)
    ratio: float = pydantic.Field(gt=0, lt=0.25)
    confident: bool
    maybe: str | None
    kind: Literal["a", "b"]
    color: Color
    inner: Inner
    tree: Tree
    short: str = pydantic.Field(min_length=2, max_length=4)
    padded: str = pydantic.Field(min_length=40)
    many: list[int] = pydantic.Field(min_length=2)
    counts: dict[str, int]


@pytest.mark.parametrize("schema", [
    to_strict_json_schema(Answer),                    # what the OpenAI SDK's parse sends
    pydantic.TypeAdapter(Answer).json_schema(),       # plain pydantic
])
def test_the_document_follows_the_schema_pydantic_wrote(schema: dict[str, Any]) -> None:
    answer = Answer.model_validate_json(json_document(schema, TEXT))
    # Every string the schema leaves free carries the text reply.
    assert answer.text == answer.maybe == answer.tree.name == TEXT
    assert answer.short == TEXT[:4] and answer.padded == TEXT.ljust(40, ".")
    assert (answer.count, answer.kind, answer.color, answer.confident) == (3, "a", Color.RED, False)
    assert 0 < answer.ratio < 0.25 and answer.many == [0, 0]
    assert answer.counts == {"reply": 0}  # a map's values follow their own schema
    assert answer.tree.left is None and answer.tree.children == []  # recursion ends
    assert answer.inner.pair == (0, TEXT) and answer.inner.tags == []


def test_a_recursion_through_an_optional_property_ends_by_leaving_it_out() -> None:
    # Anthropic's SDK leaves a defaulted field out of "required" without a null branch.
    linked = {"$defs": {"Node": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "next": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node"}
    assert json.loads(json_document(linked, TEXT)) == {"name": TEXT}
    linked["$defs"]["Node"]["required"] = ["name", "next"]  # type: ignore[index]
    with pytest.raises(ValueError, match="allows no document"):
        check_schema(linked)


def test_json_object_and_schemas_that_say_nothing_carry_the_text_under_reply() -> None:
    for schema in ({}, {"type": "object"}, {"title": "free"}):
        assert json.loads(json_document(schema, TEXT)) == {"reply": TEXT}
    assert json_document({"type": "object", "additionalProperties": False}, TEXT) == "{}"


def test_the_reply_is_json_wherever_the_engine_cuts_it_into_tokens() -> None:
    # The tokens concatenate back to the document, so a whole reply parses.
    tokens, finish = echo_tokens("user: hi  there", 100, json_schema={})
    assert finish == "stop" and json.loads("".join(tokens)) == {"reply": "echo: user: hi  there"}
    assert echo_reply("user: hi") == "echo: user: hi"  # no schema: the text, as always
    cut, finish = echo_tokens("user: hi there", 2, json_schema={})
    assert finish == "length" and "".join(cut) == '{"reply": "echo:'


def test_strings_share_a_bounded_budget_so_long_prompts_stay_bounded() -> None:
    schema = {"type": "object", "properties": {f"s{i}": {"type": "string"} for i in range(1000)}}
    document = json.loads(json_document(schema, "x" * MAX_STRINGS))
    assert all(len(value) == MAX_STRINGS // 1000 for value in document.values())


class Endless(pydantic.BaseModel):
    again: Endless


@pytest.mark.parametrize(("schema", "reason"), [
    (to_strict_json_schema(Endless), "allows no document"),
    ({"properties": {"a": {"$ref": "#/$defs/missing"}}}, "names nothing"),
    # An index past int()'s 4300 digits: the 400 told the caller to call
    # sys.set_int_max_str_digits() (Python's own message) where it names the $ref.
    ({"$defs": {"x": [{"type": "string"}]},
      "properties": {"a": {"$ref": "#/$defs/x/" + "1" * 5000}}}, "'\\$ref' .* names nothing"),
    ({"properties": {"a": {"$ref": "https://example.com/a.json"}}}, "within the schema"),
    ({"$defs": {**{f"L{i}": {"properties": {f"p{j}": {"$ref": f"#/$defs/L{i + 1}"}
                                          for j in range(10)}} for i in range(8)},
                "L8": {"type": "string"}},
      "$ref": "#/$defs/L0"}, "more than"),  # 10**8 strings: the work is bounded
])
def test_a_schema_with_no_answerable_document_is_refused(schema: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        check_schema(schema)


def test_a_deeply_nested_schema_is_refused_not_a_recursion_error() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "object", "properties": {"a": schema}}
    with pytest.raises(ValueError, match="deeper than"):
        check_schema(schema)


def test_a_worker_refuses_an_envelope_whose_schema_it_cannot_answer() -> None:
    # Only a caller of /v1/work other than the frontend (which refuses it first) sends one.
    from ridtrace.frontend_plugin.wire import WorkRequest

    work = WorkRequest(request_id="r", x_request_id=None, endpoint="chat_completions",
                       model="m", prompt="p", max_tokens=8, json_schema={"type": "object"})
    assert WorkRequest.from_json(work.to_json()) == work
    for bad in (b'"json"', b'{"$ref": "#/nowhere"}'):
        envelope = work.to_json().replace(b'"json_schema":{"type":"object"}',
                                          b'"json_schema":' + bad)
        with pytest.raises(ValueError, match="json_schema"):
            WorkRequest.from_json(envelope)


_KEYWORDS = ["type", "properties", "items", "prefixItems", "allOf", "anyOf", "oneOf", "$ref",
             "enum", "const", "minItems", "minLength", "maxLength", "minimum",
             "exclusiveMinimum", "maximum", "format", "additionalProperties", "$defs"]
_SCHEMA_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 1 << 40), st.floats(allow_nan=False),
    st.sampled_from(["string", "object", "array", "integer", "number", "null", "date-time",
                     "#", "#/$defs/a", "#/properties/a", "#/allOf/0", "x"]))
_SCHEMAS = st.recursive(_SCHEMA_VALUES, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.one_of(st.sampled_from(_KEYWORDS), st.sampled_from(["a", "b"])), inner,
                    max_size=4)), max_leaves=20)


@settings(max_examples=500, deadline=None)
@given(schema=st.dictionaries(st.sampled_from(_KEYWORDS), _SCHEMAS, max_size=4))
def test_any_schema_gets_a_json_document_or_a_value_error(schema: dict[str, Any]) -> None:
    # A body's schema is the caller's: a keyword of the wrong type ('allOf': true, a list
    # of properties) raised TypeError, a 500 from the frontend's parser.
    try:
        document = json_document(schema, TEXT)
    except ValueError:
        return
    json.loads(document)


def test_merging_and_padding_count_against_the_budget() -> None:
    # 2000 references to an allOf of 2000 properties ending in a const: a few steps each,
    # but the merge copied the properties every time (seconds of the event loop).
    wide = {f"p{i}": {"type": "string"} for i in range(2000)}
    schema = {"properties": {f"r{i}": {"$ref": "#/$defs/A"} for i in range(2000)},
              "$defs": {"A": {"allOf": [{"$ref": "#/$defs/B"}]},
                        "B": {"const": 1, "properties": wide}}}
    with pytest.raises(ValueError, match="more than"):
        check_schema(schema)
    with pytest.raises(ValueError, match="minLength"):
        check_schema({"properties": {"a": {"type": "string", "minLength": 1 << 40}}})


@pytest.mark.parametrize(("schema", "why"), [
    ({"type": "object", "properties": {"a": {"enum": []}}, "required": ["a"]}, "an empty enum"),
    ({"type": "integer", "minimum": 5, "maximum": 2}, "bounds that hold no number"),
    ({"type": "integer", "minimum": 1.2, "maximum": 1.8}, "bounds that hold no number"),
    ({"type": "string", "minLength": 5, "maxLength": 2}, "minLength above maxLength"),
    ({"type": "array", "minItems": 3, "maxItems": 1}, "minItems above maxItems"),
    ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "none in common"),
    ({"not": {}}, "every value meets"),
])
def test_a_schema_no_document_meets_is_refused(schema: dict[str, Any], why: str) -> None:
    # Each was answered with a document the schema refuses ({"a": 0} for 5..2, [0, 0, 0]
    # for at most one item): the caller's validation failed on a 200.
    with pytest.raises(ValueError, match="allows no document") as refused:
        check_schema(schema)
    assert why in str(refused.value)


def test_a_property_no_document_meets_is_left_out_when_not_required() -> None:
    schema = {"type": "object", "properties": {"a": {"enum": []}, "b": {"type": "integer"}}}
    assert json.loads(json_document(schema, TEXT)) == {"b": 0}
    mixed = {"allOf": [{"type": "number"}, {"type": "integer", "minimum": 3}]}
    assert json.loads(json_document(mixed, TEXT)) == 3


class _CountedLookups(dict[str, Any]):
    """A schema that counts how often a key of it is looked up by name."""

    looked_up = 0

    def __getitem__(self, key: str) -> Any:
        type(self).looked_up += 1
        return super().__getitem__(key)


def test_a_reference_is_resolved_once_however_many_items_follow_it() -> None:
    # A pointer of 400,000 slashes split again for each of 1,500 items held the
    # frontend's event loop for 11 s: one step of the budget each, whatever its length.
    _CountedLookups.looked_up = 0
    defs = _CountedLookups({"x": {"type": "integer"}})
    schema = {"type": "object", "required": ["a"], "$defs": defs, "properties": {
        "a": {"type": "array", "minItems": 1500, "items": {"$ref": "#/$defs/x" + "/" * 400_000}}}}
    assert json.loads(json_document(schema, TEXT)) == {"a": [0] * 1500}
    assert _CountedLookups.looked_up == 1


@pytest.mark.parametrize("repeated", [
    {"const": "z" * 100_000},
    {"enum": ["z" * 100_000, "y"]},
    {"type": "object", "properties": {"k" * 100_000: {"type": "boolean"}}},
])
def test_what_the_schema_fixes_is_bounded_however_often_it_is_repeated(
        repeated: dict[str, Any]) -> None:
    # A const of 300 KB in 1,000 items made a reply of 300 MB and the worker's memory
    # 633 MB for one request of 300 KB; the strings' budget did not count it.
    schema = {"type": "object", "required": ["a"], "properties": {
        "a": {"type": "array", "minItems": 1000, "items": repeated}}}
    with pytest.raises(ValueError, match="property names and const and enum values"):
        check_schema(schema)
    schema["properties"]["a"]["minItems"] = 5  # five copies are a document, as before
    assert len(json.loads(json_document(schema, TEXT))["a"]) == 5


@pytest.mark.parametrize("item", [
    {"allOf": [{}] * 30_000},
    {"allOf": [True] * 30_000},
    {"allOf": [{"type": ["string"] * 30_000}, {"type": "string"}]},
])
def test_allof_parts_count_against_the_budget(item: dict[str, Any]) -> None:
    # Walked at every visit, one step each: 500,000 empty allOf parts in 30 items held
    # the frontend's event loop for 46 s.
    with pytest.raises(ValueError, match="more than 20000 values"):
        check_schema({"type": "array", "minItems": 2, "items": item})


class _CountedWalks(list[Any]):
    """A keyword's list that counts how often it is walked."""

    walks = 0

    def __iter__(self) -> Any:
        type(self).walks += 1
        return super().__iter__()


@pytest.mark.parametrize("keyword", ["type", "required"])
def test_a_type_or_required_list_is_read_once_however_many_items_repeat_it(
        keyword: str) -> None:
    # Read again at every item: a type list of 20,000 entries in 19,999 items held the
    # event loop for 11 s, a required list of 300,000 names 17 s a pass.
    _CountedWalks.walks = 0
    listed = _CountedWalks(["null"] * 1000 + ["boolean"] if keyword == "type" else ["r"] * 1000)
    item = ({"type": listed} if keyword == "type" else
            {"type": "object", "required": listed, "properties": {"r": {"type": "boolean"}}})
    document = json.loads(json_document({"type": "array", "minItems": 500, "items": item}, TEXT))
    assert document == [False] * 500 if keyword == "type" else [{"r": False}] * 500
    assert _CountedWalks.walks == 1


def test_a_strict_schema_of_4999_optional_fields_is_answered() -> None:
    # What the openai SDK writes for a model of optional fields (four steps each): the
    # lists' reads counted as steps took the most answered from 4,999 to 3,999.
    fields = {f"f{i}": {"anyOf": [{"type": "string"}, {"type": "null"}]} for i in range(4999)}
    schema = {"type": "object", "properties": fields, "required": list(fields),
              "additionalProperties": False}
    assert len(json.loads(json_document(schema, TEXT))) == 4999


@pytest.mark.parametrize(("item", "items"), [
    ({"type": "integer", "minimum": 1e308}, 5000),  # 309 digits each
    # 1,000 characters, 6,000 as JSON: 200 of them are 1.2 MB written.
    ({"type": "object", "properties": {"\x00" * 1000: {"type": "boolean"}}}, 200),
])
def test_numbers_and_escaped_names_count_as_the_document_writes_them(
        item: dict[str, Any], items: int) -> None:
    with pytest.raises(ValueError, match="property names and const and enum values"):
        check_schema({"type": "array", "minItems": items, "items": item})
