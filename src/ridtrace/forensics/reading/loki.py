"""Loki's query API answer saved as it came (``curl …/loki/api/v1/query_range > app.json``):
one JSON line holding every stream's lines, ``{"status":"success","data":{"resultType":
"streams","result":[{"stream":{…},"values":[["<ns>","<line>"],…]},…]}}``.

Read as it is, the file was one bad line ("missing time"), the report "none of its lines
is a log record" with 0 requests, exit 3 on a real incident. Each value's line is read
here, written back to back on the answer's line and cited at it, as the OpenTelemetry
Collector's batches are (`reading.otlp`); Loki gives them newest first, which the rules
take as they take ``logcli``'s newest-first output.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ridtrace.forensics.reading.unwrap_parts import LineByLine, batched_record, json_object

__all__ = ["LOKI_HEAD", "LokiAnswerUnwrapper"]

# Loki writes "status" first, then "data" and its "resultType"; only a streams answer
# holds log lines (a metric query's "matrix" holds numbers).
LOKI_HEAD = re.compile(
    rb'\{\s*"status"\s*:\s*"success"\s*,\s*"data"\s*:\s*\{\s*"resultType"\s*:\s*"streams"'
)


class LokiAnswerUnwrapper(LineByLine):
    """Loki's query_range / query answer: each stream's lines, back to back."""

    name = "Loki query answer"

    def unwrap(self, line: bytes, number: int) -> bytes:
        if LOKI_HEAD.match(line) is None:
            return line
        answer = json_object(line)
        data = answer.get("data") if answer is not None else None
        if not isinstance(data, dict):
            return line
        return b"".join(
            record
            for stream in _list(data.get("result"))
            if isinstance(stream, dict)
            for record in self._stream_records(stream, number)
        )

    def _stream_records(self, stream: dict[str, Any], number: int) -> list[bytes]:
        """A stream's records, newest first as Loki lists them; the parts of a line the
        runtime cut, shipped with its CRI prefix (promtail without its `cri` stage), put
        together first, oldest first, by the stream's labels (`batched_part`)."""
        # A value is [time, line] ([time, line, {structured metadata}] since Loki 3).
        texts = [value[1] for value in _list(stream.get("values"))
                 if isinstance(value, list) and len(value) > 1 and isinstance(value[1], str)]
        labels = json.dumps(stream.get("stream"), sort_keys=True, default=str)
        oldest_first: list[bytes] = []
        for text in reversed(texts):
            joined = self.batched_part(text, lambda: labels, number)
            oldest_first.append(batched_record(text) if joined is None else joined)
        return oldest_first[::-1]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
