"""The query string of a request reaches ridtrace's server span as ``url.query``, which
the HTTP semantic conventions require of a server span that received one, with
credentials redacted, as seen by a real OTLP receiver after SIGTERM."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.frontend_plugin.conftest import exporting_frontend
from tests.support.otlp_receiver import otlp_receiver


def test_the_query_is_on_the_span_without_its_credentials(tmp_path: Path) -> None:
    # ridtrace's span had url.path but no url.query: a page asked for with
    # `?after=…&limit=…` showed in the backend as the bare path, where FastAPI's own
    # telemetry and OpenTelemetry's ASGI instrumentation record the query.
    with otlp_receiver() as receiver:
        with (exporting_frontend(tmp_path, receiver.endpoint) as frontend,
              httpx.Client(base_url=frontend.url, timeout=30) as client):
            paged = client.get("/v1/models?limit=2&after_id=m%20one&sig=s3cr3t"
                               "&X-Goog-Signature=abc&AWSAccessKeyId=AKIA&flag",
                               headers={"x-request-id": "paged"})
            assert paged.status_code == 200, paged.text
            hostile = client.get("/v1/models?q=%0D%0Aforged&" + "a" * 5000,
                                 headers={"x-request-id": "hostile"})
            assert hostile.status_code == 200, hostile.text
            plain = client.get("/v1/models", headers={"x-request-id": "plain"})
            assert plain.status_code == 200
        spans = {s.attributes.get("x_request_id"): s for s in receiver.wait_for(4, timeout=20)}
    # As received (still percent-encoded), the credentials the conventions name replaced.
    assert spans["paged"].attributes["url.query"] == (
        "limit=2&after_id=m%20one&sig=REDACTED&X-Goog-Signature=REDACTED"
        "&AWSAccessKeyId=REDACTED&flag"
    )
    assert spans["paged"].attributes["url.path"] == "/v1/models"
    # The client's text, capped as the path is.
    query = spans["hostile"].attributes["url.query"]
    assert query.startswith("q=%0D%0Aforged&aaa") and len(query) < 1100, query[:60]
    assert "url.query" not in spans["plain"].attributes


def test_keys_under_header_names_and_other_credential_names_are_redacted(
    tmp_path: Path,
) -> None:
    # `?x-api-key=…` and `?authorization=Bearer%20…`, the names the docs give for the
    # headers a key travels under, reached the exported span as sent; so did
    # client_secret, password, openai_api_key and access-token.
    sent = ("x-api-key=sk-1&Authorization=Bearer%20sk-2&client_secret=cs&password=pw"
            "&openai_api_key=sk-3&access-token=at&X_Api_Key=sk-4&subscription-key=az"
            "&jwt=eyJ&accessToken=t2&author=bob&monkey=1&max_tokens=64&tokenizer=bpe"
            "&page_token=p2&private_token=gl&user%5Bpassword%5D=pw2&XApiKey=k5"
            "&signing_key=s6&accesstoken=t7&db_pwd=p8&basic_auth=u:p&api-key%5B0%5D=k9"
            "&credentials=c1&max_token=1&sort_key=name")
    with otlp_receiver() as receiver:
        with (exporting_frontend(tmp_path, receiver.endpoint) as frontend,
              httpx.Client(base_url=frontend.url, timeout=30) as client):
            answer = client.get(f"/v1/models?{sent}", headers={"x-request-id": "keyed"})
            assert answer.status_code == 200, answer.text
        (span,) = [s for s in receiver.wait_for(1, timeout=20)
                   if s.attributes.get("x_request_id") == "keyed"]
    # By the name's words, not its letters: what a trace of an inference call is read
    # for (max_tokens, the tokenizer) stays as sent.
    assert span.attributes["url.query"] == (
        "x-api-key=REDACTED&Authorization=REDACTED&client_secret=REDACTED&password=REDACTED"
        "&openai_api_key=REDACTED&access-token=REDACTED&X_Api_Key=REDACTED"
        "&subscription-key=REDACTED&jwt=REDACTED&accessToken=REDACTED&author=bob&monkey=1"
        "&max_tokens=64&tokenizer=bpe&page_token=p2&private_token=REDACTED"
        "&user%5Bpassword%5D=REDACTED&XApiKey=REDACTED&signing_key=REDACTED"
        "&accesstoken=REDACTED&db_pwd=REDACTED&basic_auth=REDACTED&api-key%5B0%5D=REDACTED"
        "&credentials=REDACTED&max_token=1&sort_key=name"
    )
