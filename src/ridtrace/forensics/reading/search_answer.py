"""An Elasticsearch or OpenSearch ``_search`` answer saved as it came (``curl
'…/_search?size=5000' > hits.json``): one JSON line, the documents in ``hits.hits``, each
a hit whose ``_source`` is what a shipper indexed (Filebeat's, its line in ``message``)
or the record itself::

    {"took":12,"timed_out":false,"_shards":{…},"hits":{"total":{"value":2,"relation":"eq"},
     "max_score":1.0,"hits":[{"_index":"logs","_id":"…","_source":{…}},…]}}

Read as it is, the file was one bad line ("missing time") and a real incident an
incomplete read with no finding. Each hit's line is read here, the lines back to back on
the answer's line and cited at it, as Loki's answer is (`reading.loki`). Elasticsearch
answers 10 hits unless asked for more: an answer holding fewer hits than the query
matched is one page of it, its line a bad one ("one page of the query's answer") and the
read incomplete, its hits read all the same. Indented (``?pretty``, Kibana's Dev Tools),
the answer is a document of entries (`reading.documents`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ridtrace.forensics.reading.documents import entry_object
from ridtrace.forensics.reading.judge import PAGE_RECORDS, page_line
from ridtrace.forensics.reading.unwrap_parts import LineByLine, json_object

__all__ = ["SEARCH_ANSWER_HEAD", "SearchAnswerUnwrapper"]

# A search answer's first key: "took", or a scroll's or point in time's id before it.
SEARCH_ANSWER_HEAD = re.compile(rb'\{\s*"(?:took|_scroll_id|pit_id)"\s*:')


def _page(section: dict[str, Any], hits: int) -> bytes | None:
    """`judge.page_line` when the answer holds fewer hits than the query matched (or the
    total is a lower bound, ``"relation": "gte"``), else None."""
    total = section.get("total")
    at_least = False
    if isinstance(total, dict):  # Elasticsearch 7 on: {"value": N, "relation": "eq"}
        at_least = total.get("relation") == "gte"
        total = total.get("value")
    if not isinstance(total, int) or isinstance(total, bool):
        return None
    if hits < total or at_least:
        return page_line(hits, total, at_least=at_least)
    return None


class SearchAnswerUnwrapper(LineByLine):
    """An Elasticsearch or OpenSearch ``_search`` answer a line: its hits back to back."""

    name = "Elasticsearch search answer"

    def unwrap(self, line: bytes, number: int) -> bytes:
        if SEARCH_ANSWER_HEAD.match(line) is None:
            return line
        answer = json_object(line)
        section = answer.get("hits") if answer is not None else None
        if not isinstance(section, dict) or not isinstance(section.get("hits"), list):
            return line
        hits = [hit for hit in section["hits"] if isinstance(hit, dict)]
        # A text line (a banner) among them makes the answer's line a bad one, its
        # other records read all the same (`documents.entry_object`).
        body = b"".join(
            entry_object(json.dumps(hit, separators=(",", ":")).encode("ascii"), number)[0]
            for hit in hits)
        page = _page(section, len(hits))
        return body if page is None else page + PAGE_RECORDS + body
