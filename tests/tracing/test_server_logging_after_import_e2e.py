"""uvicorn's lines reach the JSON log when the server sets up its logging after the app
called configure_logging: ``uvicorn.run(app)``, ``fastapi run`` / ``fastapi dev``
(which import the app to find it, then call ``uvicorn.run``), gunicorn's ``--preload``.

Each gives uvicorn's loggers console handlers that do not propagate once the app module
has run, so the startup lines, every access line with its request's ids and
``Exception in ASGI application`` with its traceback went to the console only: the
JSON log of the README's two lines held none of them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx

from ridtrace import configure_logging
from ridtrace.tracing.stdlib_bridge import reclaim_server_loggers
from tests.support.servers import child_pythonpath, free_port, run_server
from tests.tracing.conftest import wait_for_lines

# The README's FastAPI set-up, run as `python my_api.py` with uvicorn.run(app): the
# same order of events as `fastapi run my_api.py`, which needs fastapi-cli.
_SCRIPT_APP = '''
import sys

import uvicorn
from fastapi import FastAPI

from ridtrace import RequestTracingMiddleware, configure_logging, telemetry_lifespan

configure_logging(sys.argv[2], service="script")
app = FastAPI(lifespan=telemetry_lifespan)
app.add_middleware(RequestTracingMiddleware)


@app.get("/")
async def root() -> dict[str, str]:
    return {}


@app.get("/boom")
async def boom() -> dict[str, str]:
    raise RuntimeError("boom")


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]))
'''


def test_uvicorn_run_with_its_own_log_config_still_logs_into_the_json_sink(
    tmp_path: Path,
) -> None:
    script = tmp_path / "my_api.py"
    script.write_text(_SCRIPT_APP)
    log_path = tmp_path / "app.jsonl"
    port = free_port()
    env = {"PYTHONPATH": child_pythonpath()}
    with run_server([str(script), str(port), str(log_path)], port=port, workdir=tmp_path,
                    env=env) as running:  # fmt: skip
        ok_id = httpx.get(running.url + "/", timeout=10).headers["x-server-request-id"]
        crashed = httpx.get(running.url + "/boom", timeout=10)
        assert crashed.status_code == 500
        crash_id = crashed.headers["x-server-request-id"]
        lines = wait_for_lines(log_path, lambda ls: any(
            x.get("logger") == "uvicorn.access" and x.get("request_id") == ok_id for x in ls
        ) and any(
            _is_crash_line(x) and x.get("request_id") == crash_id for x in ls
        ))  # fmt: skip
    (crash,) = [x for x in lines if _is_crash_line(x)]
    assert crash["level"] == "ERROR" and crash["exception"] == "RuntimeError: boom"
    assert any(x.get("message") == "Application startup complete." for x in lines)


def _is_crash_line(line: dict[str, object]) -> bool:
    return str(line.get("message", "")).startswith("Exception in ASGI application")


def test_a_server_logger_switched_off_stays_off(tmp_path: Path) -> None:
    # uvicorn.run(app, access_log=False) leaves uvicorn.access with no handler and not
    # propagating: switched off, not routed elsewhere, and kept so.
    access = logging.getLogger("uvicorn.access")
    error = logging.getLogger("uvicorn.error")
    saved = [(x, x.handlers, x.propagate) for x in (access, error)]
    try:
        configure_logging(tmp_path / "app.jsonl", service="svc")
        access.handlers, access.propagate = [], False
        error.handlers, error.propagate = [logging.StreamHandler()], False
        reclaim_server_loggers()
        assert (access.handlers, access.propagate) == ([], False)
        assert (error.handlers, error.propagate) == ([], True)
    finally:
        for std, handlers, propagate in saved:
            std.handlers, std.propagate = handlers, propagate
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)


def test_a_server_logger_the_app_sent_to_a_file_stays_so(tmp_path: Path) -> None:
    # The app's own dictConfig after configure_logging sends uvicorn.access to a file of
    # its own: not the server's console handler, so not taken back into the JSON sink.
    access = logging.getLogger("uvicorn.access")
    saved = (access.handlers, access.propagate)
    own = logging.FileHandler(tmp_path / "access.log")
    try:
        configure_logging(tmp_path / "app.jsonl", service="svc")
        access.handlers, access.propagate = [own], False
        reclaim_server_loggers()
        assert (access.handlers, access.propagate) == ([own], False)
    finally:
        own.close()
        access.handlers, access.propagate = saved
        logging.basicConfig(handlers=[logging.NullHandler()], force=True)


_ACCESS_FILE_APP = '''
import os

from fastapi import FastAPI

from ridtrace import RequestTracingMiddleware, configure_logging

configure_logging(os.environ["RIDTRACE_TEST_LOG"], service="access-file")
app = FastAPI()
app.add_middleware(RequestTracingMiddleware)


@app.get("/")
async def root() -> dict[str, str]:
    return {}
'''


def test_an_access_log_file_the_server_config_set_up_is_kept(tmp_path: Path) -> None:
    # `uvicorn --log-config` (and gunicorn's --access-logfile) set logging up before the
    # app is imported: configure_logging dropped the file handler the operator put on
    # uvicorn.access, and that file stayed empty. A console handler is still taken over.
    (tmp_path / "access_file_app.py").write_text(_ACCESS_FILE_APP)
    access = tmp_path / "access.log"
    config = {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"plain": {"format": "ACCESS %(message)s"}},
        "handlers": {
            "access_file": {"class": "logging.FileHandler", "filename": str(access),
                            "formatter": "plain"},
            "console": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"},
        },
        "loggers": {
            "uvicorn.access": {"handlers": ["access_file"], "level": "INFO",
                               "propagate": False},
            "uvicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
        },
    }
    (tmp_path / "log-config.json").write_text(json.dumps(config))
    log_path = tmp_path / "app.jsonl"
    port = free_port()
    env = {"PYTHONPATH": f"{tmp_path}:{child_pythonpath()}", "RIDTRACE_TEST_LOG": str(log_path)}
    with run_server(["-m", "uvicorn", "access_file_app:app", "--host", "127.0.0.1", "--port",
                     str(port), "--log-config", str(tmp_path / "log-config.json")],
                    port=port, workdir=tmp_path, env=env) as running:
        served = httpx.get(running.url + "/", timeout=10)
        request_id = served.headers["x-server-request-id"]
        wait_for_lines(log_path, lambda ls: any(
            x.get("event") == "request.end" and x.get("request_id") == request_id for x in ls))
        # uvicorn writes its access line when the response is sent, before request.end.
        written = access.read_text()
    assert written.count('ACCESS 127.0.0.1') >= 2, written  # the wait probe's and ours
    lines = [json.loads(x) for x in log_path.read_text().splitlines()]
    assert not any(x.get("logger") == "uvicorn.access" for x in lines)
    # The console handler uvicorn.error had is taken into the JSON log as before.
    assert any(x.get("message") == "Application startup complete." for x in lines)
