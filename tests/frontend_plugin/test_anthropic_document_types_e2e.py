"""A document block's source says a media type Anthropic's API takes for it.

A base64 document on /v1/messages is a PDF (``application/pdf``) and a ``text`` source
is ``text/plain``: a Word file sent as base64 (``application/msword``), or Markdown as
``text/markdown``, was served here and refused there (400), so code tested against the
frontend broke at its first real call with a file, as ``image/jpg`` images did.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest


def _with_document(source: dict[str, Any]) -> Any:
    return [{"role": "user", "content": [
        {"type": "document", "source": source}, {"type": "text", "text": "summarize"}]}]


@pytest.mark.parametrize(("source", "wanted"), [
    ({"type": "base64", "media_type": "application/msword", "data": "UEsDBA=="},
     "application/pdf"),
    ({"type": "base64", "data": "JVBERi0="}, "application/pdf"),
    ({"type": "text", "media_type": "text/markdown", "data": "# notes"}, "text/plain"),
])
def test_a_document_media_type_anthropic_refuses_is_refused(
    claude: anthropic.Anthropic, source: dict[str, Any], wanted: str
) -> None:
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(model="echo", max_tokens=16, messages=_with_document(source))
    message = refused.value.api_message or ""
    assert "'messages[0].content[0].source.media_type'" in message, refused.value.body
    assert wanted in message
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.count_tokens(model="echo", messages=_with_document(source))


def test_the_document_sources_anthropic_takes_are_served(claude: anthropic.Anthropic) -> None:
    for source in (
        {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
        {"type": "text", "media_type": "text/plain", "data": "notes"},
        {"type": "url", "url": "https://example.com/a.pdf"},
        {"type": "content", "content": [{"type": "text", "text": "notes"}]},
    ):
        reply = claude.messages.create(model="echo", max_tokens=16,
                                       messages=_with_document(source))
        assert reply.content[0].text == "echo: user: summarize", source  # type: ignore[union-attr]
