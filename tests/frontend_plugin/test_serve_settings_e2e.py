"""`ridtrace serve` configured as the docs say: RIDTRACE_* tracing variables honoured,
settings that would fail every request refused at start-up.

A setting refused before anything is served is checked in-process (click's runner, see
`serve_cli` in conftest), as tests/cli/test_serve_options.py does: a `ridtrace serve`
process costs ~1.3 CPU-s of imports, and the refusal is click's usage error, exit 2, either way.
`test_the_real_command_refuses_a_setting_with_exit_2_and_no_traceback` and the log-file
and log-level tests keep the real command's exit code and stderr in view.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from ridtrace.cli.main import main
from tests.frontend_plugin.conftest import ServeStarted, refused, start_stack
from tests.support.servers import free_port, run_server

DEPRECATION_ENV = {
    "RIDTRACE_DEPRECATION_AT": "2026-10-01T00:00:00+00:00",
    "RIDTRACE_SUNSET_AT": "2027-04-01T00:00:00+00:00",
    "RIDTRACE_DEPRECATION_LINK": "https://example.com/docs/request-ids",
    "RIDTRACE_ID_GENERATOR": "uuid7",
}



def test_serve_reads_the_tracing_variables(tmp_path: Path) -> None:
    with start_stack(tmp_path, workers=[[]], env=DEPRECATION_ENV) as stack:
        response = httpx.post(
            stack.url + "/v1/chat/completions",
            json={"model": "echo", "messages": [{"role": "user", "content": "old client"}]},
            headers={"x-dynamo-request-id": "legacy-1"}, timeout=30,
        )
    assert response.status_code == 200, response.text
    assert response.headers["deprecation"] == "@1790812800"  # RFC 9745
    assert response.headers["sunset"] == "Thu, 01 Apr 2027 00:00:00 GMT"  # RFC 8594
    assert 'rel="deprecation"' in response.headers["link"]
    assert uuid.UUID(response.headers["x-server-request-id"]).version == 7


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--max-body-bytes", "-1"], "'--max-body-bytes'"),
        (["--max-body-bytes", "0"], "'--max-body-bytes'"),
        (["--first-byte-timeout", "-5"], "'--first-byte-timeout'"),
        (["--total-timeout", "nan"], "'--total-timeout'"),
        (["--chunk-timeout", "inf"], "'--chunk-timeout'"),
        (["--body-timeout", "0"], "'--body-timeout'"),
    ],
)
def test_a_frontend_setting_that_would_fail_every_request_isrefused(
    serve_cli: Callable[..., Result], flags: list[str], named: str
) -> None:
    # Bad usage, exit 2, naming the option as given (it said "first_byte_timeout", exit 1).
    assert named in refused(serve_cli("frontend", *flags))


def _serve_worker(log_file: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """`ridtrace serve worker` with `flags`, expected to refuse them and exit."""
    return subprocess.run(
        [sys.executable, "-m", "ridtrace", "serve", "worker", "--port", "1",
         "--log-file", str(log_file), *flags],
        capture_output=True, text=True, timeout=60,
    )


@pytest.mark.parametrize(("flags", "env", "named"), [
    (["--token-delay", "-0.5"], {}, "'--token-delay'"),
    (["--first-token-delay", "nan"], {}, "'--first-token-delay'"),
    (["--hang-after-tokens", "-1"], {}, "'--hang-after-tokens'"),
    # A value refused once read is named by its variable, not only by its field.
    ([], {"RIDTRACE_WORKER_TOKEN_DELAY": "-0.5"}, "RIDTRACE_WORKER_TOKEN_DELAY: token_delay"),
    ([], {"RIDTRACE_WORKER_MAX_BODY_BYTES": "many"}, "RIDTRACE_WORKER_MAX_BODY_BYTES"),
])
def test_a_worker_setting_that_would_fail_is_a_usage_error(
    serve_cli: Callable[..., Result], flags: list[str], env: dict[str, str], named: str
) -> None:
    assert named in refused(serve_cli("worker", *flags, env=env))


@pytest.mark.parametrize(
    ("flags", "env", "code", "says"),
    [
        (["--worker", "http://alice:pw/s3cret@127.0.0.1:1"], {}, 2, "percent-encode"),
        (["--worker", "http://127.0.0.1:notaport"], {}, 2, "the port must be"),
        (["--worker", "ftp://127.0.0.1:21"], {}, 2, "http(s)://host"),
        # One worker twice: a retry would reach the worker that just refused the id.
        (["--worker", "http://127.0.0.1:8101", "--worker", "http://u:s3cret@127.0.0.1:8101/"],
         {}, 2, "listed twice"),
        (["--graceful-timeout", "nan"], {}, 2, "not a finite number"),
        ([], {"RIDTRACE_RESPONSE_ID_HEADER": "bad header"}, 2, "not an HTTP header name"),
        ([], {"RIDTRACE_MAX_CLIENT_ID_LENGTH": "0"}, 2, "max_client_id_length"),
        ([], {"RIDTRACE_MAX_CLIENT_ID_LENGTH": "abc"}, 2, "RIDTRACE_MAX_CLIENT_ID_LENGTH"),
        ([], {"RIDTRACE_FRONTEND_MAX_BODY_BYTES": "abc"}, 2, "RIDTRACE_FRONTEND_MAX_BODY_BYTES"),
        ([], {"RIDTRACE_FRONTEND_TOTAL_TIMEOUT": "0"}, 2,
         "RIDTRACE_FRONTEND_TOTAL_TIMEOUT: total_timeout must be a positive number"),
    ],
)
def test_settings_that_would_break_serving_are_refused_naming_what_is_wrong(
    serve_cli: Callable[..., Result], flags: list[str], env: dict[str, str], code: int, says: str,
) -> None:
    stderr = refused(serve_cli("frontend", *flags, env=env))  # exit 2: no crash, no traceback
    assert says in stderr and "s3cret" not in stderr, stderr


@pytest.mark.parametrize(("side", "flags", "env", "says"), [
    ("frontend", [], {"RIDTRACE_API_KEYS": "k1,k 2"},
     "RIDTRACE_API_KEYS: an API key must be printable ASCII"),
    ("frontend", ["--api-key", ""], {}, "--api-key: an API key must not be empty"),
    ("frontend", [], {"RIDTRACE_WORKER_TOKEN": "tok\nx"},
     "RIDTRACE_WORKER_TOKEN: the worker token must be printable ASCII"),
    ("worker", ["--worker-token", "a b"], {}, "--worker-token: the worker token must be"),
])
def test_a_refused_secret_is_named_by_the_option_or_variable_that_set_it(
    serve_cli: Callable[..., Result], side: str, flags: list[str], env: dict[str, str],
    says: str,
) -> None:
    stderr = refused(serve_cli(side, *flags, env=env))
    assert says in stderr, stderr


@pytest.mark.parametrize(("side", "flags", "env"), [
    ("frontend", ["--api-key", "good"], {"RIDTRACE_API_KEYS": "k 1"}),
    ("worker", ["--worker-token", "good"], {"RIDTRACE_WORKER_TOKEN": "a b"}),
    ("frontend", ["--total-timeout", "5"], {"RIDTRACE_FRONTEND_TOTAL_TIMEOUT": "x"}),
])
def test_an_option_given_replaces_its_variable_unread(
    serve_cli: Callable[..., Result], side: str, flags: list[str], env: dict[str, str],
) -> None:
    # A bad inherited variable stopped the start with a complaint about the good value
    # typed on the command line, which the docs say wins over it.
    result = serve_cli(side, *flags, env=env)
    assert isinstance(result.exception, ServeStarted), result.output  # it goes on to serve


@pytest.mark.parametrize(("side", "flags", "env", "says"), [
    ("frontend", ["--worker", "http://alice:pw/s3cret@127.0.0.1:1"], {}, "percent-encode"),
    ("worker", [], {"RIDTRACE_WORKER_TOKEN_DELAY": "-0.5"},
     "RIDTRACE_WORKER_TOKEN_DELAY: token_delay"),
])
def test_the_real_command_refuses_a_setting_with_exit_2_and_no_traceback(
    tmp_path: Path, side: str, flags: list[str], env: dict[str, str], says: str
) -> None:
    # What a user sees of the refusals the tests above check in-process: the process's
    # own exit status and stderr (no traceback, no secret), from `python -m ridtrace`.
    worker = ["--worker", "http://127.0.0.1:9"] if side == "frontend" and not flags else []
    done = subprocess.run(
        [sys.executable, "-m", "ridtrace", "serve", side, "--port", "1", *worker,
         "--log-file", str(tmp_path / f"{side}.jsonl"), *flags],
        capture_output=True, text=True, timeout=60, env={**os.environ, **env},
    )
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert "s3cret" not in done.stderr and "Traceback" not in done.stderr


def test_an_unwritable_log_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")  # a file where the log's directory should be
    done = _serve_worker(tmp_path / "a-file" / "w.jsonl")
    assert done.returncode == 2 and "--log-file" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    # Not "File exists", which the directories' making says.
    assert "a parent is not a directory" in done.stderr, done.stderr


def test_an_unknown_log_level_is_a_usage_error(tmp_path: Path) -> None:
    done = _serve_worker(tmp_path / "w.jsonl", "--log-level", "verbose")
    assert done.returncode == 2 and "--log-level" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("keys", "said"), [("", True), (None, False), ("sk-one", False)])
def test_an_empty_api_keys_variable_is_said_at_start(
    serve_cli: Callable[..., Result], keys: str | None, said: bool
) -> None:
    # `RIDTRACE_API_KEYS=$KEY ridtrace serve frontend` with $KEY unset left every route
    # open without a word: an empty variable counts as not set.
    result = serve_cli("frontend", env={"RIDTRACE_API_KEYS": keys})
    assert isinstance(result.exception, ServeStarted), result.output  # it goes on to serve
    assert ("RIDTRACE_API_KEYS is empty" in result.stderr) is said, result.stderr


@pytest.mark.parametrize("side", ["frontend", "worker"])
@pytest.mark.parametrize(("token", "said"), [("", True), (None, False), ("wt-one", False)])
def test_an_empty_worker_token_variable_is_said_at_start(
    serve_cli: Callable[..., Result], side: str, token: str | None, said: bool
) -> None:
    # `RIDTRACE_WORKER_TOKEN=$WT ridtrace serve worker` with $WT unset served /v1/work
    # to anyone without a word, where RIDTRACE_API_KEYS= is said.
    result = serve_cli(side, env={"RIDTRACE_WORKER_TOKEN": token})
    assert isinstance(result.exception, ServeStarted), result.output  # it goes on to serve
    assert ("RIDTRACE_WORKER_TOKEN is empty" in result.stderr) is said, result.stderr


@pytest.mark.parametrize(("side", "flags", "env", "policy"), [
    # RIDTRACE_*_ID_POLICY and the worker's delays were overwritten by the options'
    # defaults: `RIDTRACE_FRONTEND_ID_POLICY=legacy ridtrace serve frontend` served safe.
    ("frontend", [], {"RIDTRACE_FRONTEND_ID_POLICY": "legacy"}, "legacy"),
    ("frontend", ["--id-policy", "safe"], {"RIDTRACE_FRONTEND_ID_POLICY": "legacy"}, "safe"),
    ("worker", [], {"RIDTRACE_WORKER_ID_POLICY": "legacy"}, "legacy"),
    ("worker", ["--id-policy", "safe"], {"RIDTRACE_WORKER_ID_POLICY": "legacy"}, "safe"),
])
def test_serve_keeps_a_settings_variable_unless_its_option_is_given(
    tmp_path: Path, side: str, flags: list[str], env: dict[str, str], policy: str
) -> None:
    port = free_port()
    where = ["--worker", "http://127.0.0.1:9"] if side == "frontend" else []
    argv = ["-m", "ridtrace", "serve", side, "--port", str(port), *where, "--debug-endpoints",
            "--log-file", str(tmp_path / f"{side}.jsonl"), *flags]
    with run_server(argv, port=port, workdir=tmp_path, env=env, ready_path="/health") as server:
        assert httpx.get(server.url + "/debug/inflight").json()["policy"] == policy


def test_a_worker_reads_its_delays_from_the_variables(tmp_path: Path) -> None:
    port = free_port()
    argv = ["-m", "ridtrace", "serve", "worker", "--port", str(port),
            "--log-file", str(tmp_path / "w.jsonl")]
    env = {"RIDTRACE_WORKER_FIRST_TOKEN_DELAY": "0.5"}
    with run_server(argv, port=port, workdir=tmp_path, env=env, ready_path="/health") as server:
        work = {"request_id": "r-1", "endpoint": "completions", "model": "echo",
                "prompt": "hi", "max_tokens": 4}
        answer = httpx.post(server.url + "/v1/work", json=work, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.elapsed.total_seconds() >= 0.5  # the 0.5 s before the first token


def test_a_frontend_takes_its_workers_from_the_variable_when_no_worker_option_is_given(
    tmp_path: Path,
) -> None:
    # --worker was required and always replaced RIDTRACE_FRONTEND_WORKERS.
    port = free_port()
    argv = ["-m", "ridtrace", "serve", "frontend", "--port", str(port), "--debug-endpoints",
            "--log-file", str(tmp_path / "f.jsonl")]
    env = {"RIDTRACE_FRONTEND_WORKERS": "http://127.0.0.1:9, http://127.0.0.1:10"}
    with run_server(argv, port=port, workdir=tmp_path, env=env, ready_path="/health") as server:
        workers = httpx.get(server.url + "/debug/inflight").json()["workers"]
    assert [w["url"] for w in workers] == ["http://127.0.0.1:9", "http://127.0.0.1:10"]


def test_a_frontend_with_no_worker_anywhere_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [
        "serve", "frontend", "--port", "1", "--log-file", str(tmp_path / "f.jsonl")],
        env={"RIDTRACE_FRONTEND_WORKERS": None})
    stderr = refused(result)
    assert "--worker" in stderr and "RIDTRACE_FRONTEND_WORKERS" in stderr, stderr


@pytest.mark.parametrize(("env", "named"), [
    ({"RIDTRACE_MAX_CLIENT_ID_LENGTH": "0"}, "RIDTRACE_MAX_CLIENT_ID_LENGTH"),
    ({"RIDTRACE_CLIENT_ID_HEADER": "client id"}, "RIDTRACE_CLIENT_ID_HEADER"),
    ({"RIDTRACE_DEPRECATED_HEADERS": "request-id,x dynamo"}, "RIDTRACE_DEPRECATED_HEADERS"),
    ({"RIDTRACE_RESPONSE_ID_HEADER": "x-request-id"}, "RIDTRACE_RESPONSE_ID_HEADER"),
    # The client's id header listed as deprecated was silently not deprecated.
    ({"RIDTRACE_DEPRECATED_HEADERS": "request-id,x-request-id"}, "RIDTRACE_DEPRECATED_HEADERS"),
    # The link goes out in a header. A line break in it (read from a file) made every
    # request that sent a deprecated header end without an answer (uvicorn's "Invalid
    # HTTP header value"), the very clients it is for; a non-Latin-1 IRI crashed the
    # start with a traceback and "internal error (exit 4)".
    ({"RIDTRACE_DEPRECATION_LINK": "https://example.com/ids\n"}, "RIDTRACE_DEPRECATION_LINK"),
    ({"RIDTRACE_DEPRECATION_LINK": "https://例え.jp/ids"}, "RIDTRACE_DEPRECATION_LINK"),
    # The client's id is logged and echoed: under a credential header, so was every key.
    ({"RIDTRACE_CLIENT_ID_HEADER": "Authorization"}, "RIDTRACE_CLIENT_ID_HEADER"),
    ({"RIDTRACE_CLIENT_ID_HEADER": "x-api-key"}, "RIDTRACE_CLIENT_ID_HEADER"),
    # An id under a header HTTP reads broke every response after a start that looked fine.
    ({"RIDTRACE_RESPONSE_ID_HEADER": "content-length"}, "RIDTRACE_RESPONSE_ID_HEADER"),
    ({"RIDTRACE_RESPONSE_ID_HEADER": "Transfer-Encoding"}, "RIDTRACE_RESPONSE_ID_HEADER"),
    ({"RIDTRACE_CLIENT_ID_HEADER": "connection"}, "RIDTRACE_CLIENT_ID_HEADER"),
])
def test_a_tracing_variable_refused_once_read_is_named(
    serve_cli: Callable[..., Result], env: dict[str, str], named: str
) -> None:
    # Said by its field alone ("max_client_id_length must be at least 1, not 0",
    # "not an HTTP header name: 'client id'"), which no variable is called.
    for side in ("frontend", "worker"):
        stderr = refused(serve_cli(side, env=env))
        assert f"Error: {named}: " in stderr, stderr


@pytest.mark.parametrize(("flags", "env"), [
    (["--metrics-require-key"], {}),
    ([], {"RIDTRACE_FRONTEND_METRICS_REQUIRE_KEY": "1"}),
    (["--metrics-require-key"], {"RIDTRACE_API_KEYS": ""}),
])
def test_metrics_require_key_without_any_key_is_a_usage_error(
    serve_cli: Callable[..., Result], flags: list[str], env: dict[str, str]
) -> None:
    # With no key configured there was nothing to require: /metrics answered everyone,
    # without a word, while the operator had asked for it to be closed.
    stderr = refused(serve_cli("frontend", *flags, env={"RIDTRACE_API_KEYS": None, **env}))
    assert "--metrics-require-key" in stderr and "API key" in stderr, stderr
