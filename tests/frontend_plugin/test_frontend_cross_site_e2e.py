"""A keyless frontend does no work for a body a web page could make a browser send.

Any page a developer visits can POST to 127.0.0.1 without a CORS preflight when the
body is text/plain, a form, multipart, or has no content-type at all (``fetch(url,
{method: "POST", mode: "no-cors", body: new Blob([json])})``, ``sendBeacon``); its Host
(127.0.0.1:PORT) passes the Host check. The first three get 415 (test_hostile_e2e); a
body of no content-type counted as JSON and was served. Browsers name the page in
``Origin`` on every POST; curl, the SDKs and any program send none.
"""

from __future__ import annotations

import httpx
import pytest

from tests.frontend_plugin.conftest import Stack

BODY = (b'{"model": "echo", "messages": [{"role": "user", "content": "from a page"}],'
        b' "max_tokens": 5, "text": "from a page"}')


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages", "/generate",
                                  "/v1/messages/count_tokens"])
def test_a_page_body_without_a_content_type_gets_415_and_no_work(stack: Stack, path: str) -> None:
    before = stack.inflight()["registered"]
    with httpx.Client(base_url=stack.url, timeout=30) as client:
        refused = client.post(path, content=BODY, headers={"origin": "https://page.example"})
        # A program's body of no content-type (curl --data-binary) is still read as JSON,
        # and a page's JSON body is one its browser asked about first (not granted).
        program = client.post("/v1/completions", content=b'{"prompt": "program"}')
        typed = client.post("/v1/completions", content=b'{"prompt": "typed"}', headers={
            "origin": "https://page.example", "content-type": "application/json"})
    assert refused.status_code == 415, refused.text
    message = (refused.json()["error"]["message"])
    assert "Origin" in message and "application/json" in message
    if path.startswith("/v1/messages"):
        assert refused.json()["type"] == "error"  # Anthropic's shape on its routes
    assert program.status_code == 200 and typed.status_code == 200
    assert stack.inflight()["registered"] == before + 2  # the page's request was not
