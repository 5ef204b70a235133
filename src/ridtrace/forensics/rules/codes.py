"""Integer codes for string columns: equal text, equal code.

Hashing the id columns is most of what the rules cost. Arrow's ``dictionary_encode``
does it for any strings, at ~150–300 ns a value for ids that are mostly distinct.
Span, trace and request ids are usually of one length (16 or 32 hex digits, a UUID),
and then their bytes form a matrix: numpy folds each row into a 64-bit hash in a few
passes over whole columns, pandas numbers the hashes, and a byte-wise comparison of
every row with its code's first row proves there was no collision (else the column
takes Arrow's path). Codes are exact either way.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

# A column as pandas hands it over: one array, or chunks (one per file or part).
Arrow: TypeAlias = pa.Array | pa.ChunkedArray
_PRIME = np.uint64(0x100000001B3)  # FNV-1a's 64-bit prime: spreads each word's bits
_LONGEST = 256  # longer fixed-width values are rare; Arrow's hashing is fine for them


def shared_codes(*columns: Arrow) -> tuple[list[np.ndarray], pa.Array]:
    """Integer codes of the columns' values in one shared space, and that space's text.

    Missing values get -1. Codes follow first appearance, not text order (`ranked`
    orders the few that need it). A single dictionary column keeps its dictionary's
    codes.
    """
    if len(columns) == 1 and isinstance(columns[0], pa.DictionaryArray):
        dictionary = columns[0]
        codes = pc.fill_null(dictionary.indices, -1).to_numpy(zero_copy_only=False)
        return [np.asarray(codes, dtype=np.int64)], dictionary.dictionary
    chunks = [c for col in columns for c in (col.chunks if isinstance(col, pa.ChunkedArray)
                                             else [col])]
    if not chunks:
        return [np.zeros(0, dtype=np.int64) for _ in columns], pa.array([], pa.string())
    joined = pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0]
    fast = _fixed_width_codes(joined)
    if fast is not None:
        codes, uniques = fast
    else:
        encoded = pc.dictionary_encode(joined)
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
        codes, uniques = codes.astype(np.int64), encoded.dictionary
    bounds = np.cumsum([len(c) for c in columns])[:-1]
    return [np.asarray(part) for part in np.split(codes, bounds)], uniques


def ranked(codes: np.ndarray, dictionary: Arrow) -> np.ndarray:
    """`codes` (none missing) replaced by their rank in byte order of their text."""
    uniq, inverse = np.unique(codes, return_inverse=True)
    order = pc.sort_indices(dictionary.take(pa.array(uniq))).to_numpy()
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return np.asarray(rank[inverse.reshape(-1)])


def _fixed_width_codes(arr: pa.Array) -> tuple[np.ndarray, pa.Array] | None:
    """Codes and uniques of a string array whose present values share one length.

    None when they do not (or a hash collided): the caller then hashes with Arrow.
    """
    matrix = _byte_matrix(arr)
    if matrix is None:
        return None
    rows, width = matrix.shape
    if rows == 0:
        return None
    padded = width + (-width) % 8
    if padded != width:
        wide = np.zeros((rows, padded), dtype=np.uint8)
        wide[:, :width] = matrix
    else:
        wide = np.ascontiguousarray(matrix)
    words = wide.view(np.uint64)
    digest = np.full(rows, np.uint64(0xCBF29CE484222325))
    for column in range(words.shape[1]):
        digest = (digest ^ words[:, column]) * _PRIME
    digest ^= digest >> np.uint64(32)  # the multiplications carry bits up only: mix down
    found, uniques = pd.factorize(digest)
    first = np.full(len(uniques), -1, dtype=np.int64)
    first[found[::-1]] = np.arange(rows - 1, -1, -1)
    if not (wide == wide[first[found]]).all():  # a collision: two texts, one hash
        return None
    codes = np.full(len(arr), -1, dtype=np.int64)
    if arr.null_count:
        rows_present = np.flatnonzero(arr.is_valid().to_numpy(zero_copy_only=False))
        codes[rows_present] = found
        first = rows_present[first]
    else:
        codes[:] = found
    return codes, arr.take(pa.array(first))


def _byte_matrix(arr: pa.Array) -> np.ndarray | None:
    """The present values' bytes as a (values × width) matrix, without a copy.

    Only when every present value has the same length and missing ones none, so the
    present values lie back to back in the data buffer.
    """
    if arr.type == pa.string():
        offset_type: type[np.integer] = np.int32
    elif arr.type == pa.large_string():
        offset_type = np.int64
    else:
        return None
    n = len(arr)
    buffers = arr.buffers()
    if n == 0 or buffers[1] is None or buffers[2] is None:
        return None
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[arr.offset: arr.offset + n + 1]
    lengths = np.diff(offsets)
    width = int(lengths.max())
    if width == 0 or width > _LONGEST:
        return None
    if arr.null_count:
        present = arr.is_valid().to_numpy(zero_copy_only=False)
        if (lengths[~present] != 0).any() or (lengths[present] != width).any():
            return None
    elif (lengths != width).any():
        return None
    data = np.frombuffer(buffers[2], dtype=np.uint8)[int(offsets[0]): int(offsets[-1])]
    return data.reshape(-1, width)
