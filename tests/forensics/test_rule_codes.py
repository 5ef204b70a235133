"""Integer codes of id columns (`rules.codes`): equal text, equal code, whichever path."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ridtrace.forensics.rules import codes
from ridtrace.forensics.rules.codes import ranked, shared_codes

_HEX = st.text(alphabet="0123456789abcdef", min_size=16, max_size=16)
_ANY = st.text(max_size=40)


def _check_partition(values: list[str | None], got: np.ndarray, uniques: pa.Array) -> None:
    """Codes map equal texts to equal codes, distinct texts to distinct codes, None to -1."""
    texts = uniques.to_pylist()
    for value, code in zip(values, got.tolist(), strict=True):
        if value is None:
            assert code == -1
        else:
            assert texts[code] == value
    assert len(set(texts)) == len(texts)


@given(st.lists(st.one_of(st.none(), _HEX, st.sampled_from(["0" * 16, "f" * 16])), max_size=60),
       st.lists(st.one_of(st.none(), _HEX), max_size=20))
def test_fixed_width_ids_share_one_code_space(first: list[str | None],
                                             second: list[str | None]) -> None:
    (a, b), uniques = shared_codes(pa.array(first, pa.string()), pa.array(second, pa.string()))
    _check_partition(first + second, np.concatenate([a, b]), uniques)


@given(st.lists(st.one_of(st.none(), _ANY), max_size=60))
def test_any_text_gets_exact_codes(values: list[str | None]) -> None:
    (got,), uniques = shared_codes(pa.array(values, pa.string()))
    _check_partition(values, got, uniques)


def test_fixed_width_path_reads_a_sliced_array_and_large_strings() -> None:
    values = ["a" * 16, None, "b" * 16, "a" * 16, "c" * 16]
    sliced = pa.array(["x" * 16, *values], pa.string()).slice(1)
    assert codes._byte_matrix(sliced) is not None  # the fast path is the one tested
    (got,), uniques = shared_codes(sliced)
    _check_partition(values, got, uniques)
    (got,), uniques = shared_codes(pa.array(values, pa.large_string()))
    _check_partition(values, got, uniques)


def test_a_hash_collision_falls_back_to_exact_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    # A zero multiplier sends every id to one hash: only the byte check tells them apart.
    monkeypatch.setattr(codes, "_PRIME", np.uint64(0))
    values = ["a" * 16, "b" * 16, "a" * 16, None, "c" * 16]
    (got,), uniques = shared_codes(pa.array(values, pa.string()))
    _check_partition(values, got, uniques)
    assert len(set(got.tolist())) == 4


def test_a_dictionary_column_keeps_its_codes() -> None:
    column = pa.array(["x", None, "y", "x"], pa.string()).dictionary_encode()
    (got,), uniques = shared_codes(column)
    _check_partition(["x", None, "y", "x"], got, uniques)


@given(st.lists(_ANY, min_size=1, max_size=40))
def test_ranked_orders_codes_as_their_text(values: list[str]) -> None:
    (got,), uniques = shared_codes(pa.array(values, pa.string()))
    rank = ranked(got, uniques)
    order = sorted(range(len(values)), key=lambda i: values[i].encode())
    assert [values[i] for i in sorted(order, key=lambda i: rank[i])] == [values[i] for i in order]
