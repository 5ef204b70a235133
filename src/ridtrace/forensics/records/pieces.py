"""One part's per-span rows as the read hands them over, before any pandas frame.

Apart from `records.partials` (which imports pandas), so that the read starts, and a
reading thread holds a file's spans, without waiting for pandas' import.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa


@dataclass
class SpanPiece:
    """One part's per-span rows (`LogTable.spans`): the spans, their evidence lines by
    column (-1: none), the file code of the part (every line of a part is in one file)."""

    spans: pa.Table
    lines: dict[str, np.ndarray]
    file_id: int
    part: int
