"""The documented one-line key check in an application that mounts `create_router`
itself (`app.add_middleware(SharedSecretMiddleware, secrets=...)`), under a real uvicorn
and the official SDKs: it answers as `create_frontend_app` does.

It answered `/v1/messages` in OpenAI's shape (the Anthropic SDK raised by the status
alone) and labelled every refusal `unmatched`, where docs/frontend-plugin.md gives
Anthropic's shape there and docs/metrics.md counts a refusal under its route.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx
import openai

from tests.support.servers import child_pythonpath, free_port, run_server
from tests.tracing.conftest import wait_for_lines

KEY = "sk-own-app-7f3c"
HI = [{"role": "user", "content": "hi"}]


def test_the_documented_one_liner_answers_in_each_apis_shape_and_names_the_route(
    tmp_path: Path,
) -> None:
    log = tmp_path / "app.jsonl"
    port = free_port()
    env = {"RIDTRACE_TEST_LOG": str(log), "RIDTRACE_TEST_KEY": KEY,
           "PYTHONPATH": child_pythonpath()}
    argv = ["-m", "uvicorn", "tests.frontend_plugin.own_keyed_app:app", "--port", str(port)]
    with run_server(argv, port=port, workdir=tmp_path, env=env) as server:
        claude = anthropic.Anthropic(api_key="wrong", base_url=server.url, max_retries=0)
        try:
            claude.messages.create(model="m", max_tokens=4, messages=HI)
            raise AssertionError("a wrong key was let in")
        except anthropic.AuthenticationError as exc:
            from_anthropic = exc.body
        gpt = openai.OpenAI(api_key="wrong", base_url=server.url + "/v1", max_retries=0)
        try:
            gpt.chat.completions.create(model="m", messages=HI)  # type: ignore[arg-type]
            raise AssertionError("a wrong key was let in")
        except openai.AuthenticationError as exc:
            from_openai = exc.body
        plain = httpx.post(server.url + "/v1/messages", json={}, timeout=30)
        shop = httpx.get(server.url + "/shop/items/3", timeout=30)
        ends = [x for x in wait_for_lines(
            log, lambda got: sum(x.get("event") == "request.end" for x in got) >= 5)
            if x.get("event") == "request.end" and x["path"] != "/"]  # not the readiness poll
    assert isinstance(from_anthropic, dict), from_anthropic
    assert from_anthropic["type"] == "error"
    assert from_anthropic["error"]["type"] == "authentication_error", from_anthropic
    assert plain.status_code == 401 and plain.json()["error"]["type"] == "authentication_error"
    assert isinstance(from_openai, dict) and from_openai["code"] == "invalid_api_key", from_openai
    assert shop.status_code == 401
    assert [(x["route"], x["outcome"]) for x in ends] == [
        ("/v1/messages", "unauthorized"), ("/v1/chat/completions", "unauthorized"),
        ("/v1/messages", "unauthorized"), ("/shop/items/{item}", "unauthorized")]
