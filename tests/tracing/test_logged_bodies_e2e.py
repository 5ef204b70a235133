"""An application logs what a hostile client put in its JSON body: the line stays JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver
from tests.support.servers import RunningServer
from tests.tracing.conftest import app_server


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, Path]]:
    workdir = tmp_path_factory.mktemp("logged-bodies")
    receiver: OtlpReceiver
    with otlp_receiver() as receiver, app_server(workdir, receiver) as running:
        yield running, workdir / "app.jsonl"


def _not_json(constant: str) -> None:
    raise AssertionError(f"{constant} is not JSON (RFC 8259)")


@pytest.mark.parametrize(("body", "fields"), [
    # Python's json module (Starlette's request.json()) reads NaN and Infinity, ints of
    # any size and lone surrogates; orjson refuses the last two, and the stdlib fallback
    # then wrote NaN / Infinity bare: not JSON, so readers dropped the request's line.
    (b'{"temperature": NaN, "seed": 123456789012345678901234567890}',
     {"temperature": None, "seed": 123456789012345678901234567890}),
    (b'{"top_p": Infinity, "user": "\\ud800", "bias": [-Infinity, 1]}',
     {"top_p": None, "user": "\ud800", "bias": "[null,1]"}),
], ids=["nan-and-big-int", "infinity-and-lone-surrogate"])
def test_non_finite_numbers_a_client_sent_are_logged_as_json(
    app: tuple[RunningServer, Path], body: bytes, fields: dict[str, object]
) -> None:
    running, log_path = app
    response = httpx.post(running.url + "/logged-params", content=body,
                          headers={"content-type": "application/json"}, timeout=10)
    assert response.status_code == 200, response.text
    request_id = response.headers["x-server-request-id"]
    assert response.json()["keys"] == len(fields)
    deadline = time.monotonic() + 20
    while b'"request.end"' not in b"".join(
        raw := [x for x in log_path.read_bytes().splitlines() if request_id.encode() in x]
    ):
        assert time.monotonic() < deadline, "no request.end"
        time.sleep(0.05)
    logged = [json.loads(x, parse_constant=_not_json) for x in raw]
    line = next(x for x in logged if x["message"] == "params received")
    assert line["request_id"] == request_id and line["trace_id"]
    assert {key: line[key] for key in fields} == fields
