"""The nesting check of a body walks its containers without making objects per container.

A 1 MiB body of 300 000 empty arrays (``{"x": [[], [], ...]}``) passes the bracket
count that spares the walk, and the walk kept a ``(child, depth)`` tuple per container:
the tuples kept starting the garbage collector, each pass over every object the process
holds, and the frontend's event loop (every other request) stood still for 0.6 s per
such body, seconds for a few at once. Counted in collections, not seconds: the count
does not depend on how busy the machine is.
"""

from __future__ import annotations

import gc

import orjson

from ridtrace.frontend_plugin.bodies import MAX_NESTING, nested_deeper_than


def _collections() -> int:
    return sum(generation["collections"] for generation in gc.get_stats())


def test_a_wide_body_is_walked_without_starting_the_garbage_collector() -> None:
    wide = orjson.loads(b'{"x": [' + b",".join([b"[]"] * 100_000) + b"]}")
    assert gc.isenabled()
    before = _collections()
    assert not nested_deeper_than(wide, MAX_NESTING)
    assert _collections() - before < 5


def test_the_walk_still_finds_the_level_past_the_limit() -> None:
    deep = orjson.loads(b'{"a": [1, {"b": ' + b"[" * 10 + b"]" * 10 + b"}]}")
    # 1 (the object) + 1 (the array) + 1 (the inner object) + 10 arrays: 13 levels.
    assert nested_deeper_than(deep, 12)
    assert not nested_deeper_than(deep, 13)
    assert not nested_deeper_than("text", 0) and nested_deeper_than({}, 0)
