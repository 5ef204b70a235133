"""Every command and Python example shown in README.md and docs/ runs (docs that rot are bugs).

Shell examples run against a real demo run's output (``demo-out/`` in a scratch folder);
``ridtrace serve`` examples start the real server on a free port and wait for /health.
Synopsis lines (``ridtrace analyze PATH...``) are grammar, not examples, and are skipped.
Live ``analyze --follow`` examples are started before their logs exist, as cli.md shows
them, and stopped with Ctrl-C once the demo's logs have appeared and been reported.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from tests.support.follower import FollowProcess
from tests.support.inprocess_cli import plain_ridtrace_args, run_in_process
from tests.support.servers import child_pythonpath, free_port, stop_process, wait_until_serving

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_GRAMMAR = re.compile(r"\b(PATH|ID|FILE)\.\.\.|\bID PATH\b")
# Covered elsewhere: the mounting and traffic examples have their own tests against a
# real stack (tests/frontend_plugin/test_docs_example.py); gRPC blocks need generated stubs
# (tests/tracing/grpc); `make` and docker lines are not ridtrace's commands.
_OWN_TEST_MARKERS = ("# example: mount", "# example: send traffic", "ridtrace_inference_pb2", "aio_server_interceptor",
                     "# triton_stream_example.py")


def _blocks(kind: str) -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for lang, body in _FENCE.findall(doc.read_text()):
            if lang == kind or (kind == "shell" and lang in ("", "sh", "bash", "console")):
                found.append((f"{doc.name}", body))
    return found


_ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
# A pipeline that feeds ridtrace (`cat logs/*.jsonl | ridtrace analyze - --quiet`).
_FEEDS_RIDTRACE = re.compile(r"^cat [^|]+\| ridtrace ")


def _shell_examples() -> list[tuple[str, str]]:
    examples = []
    for doc, body in _blocks("shell"):
        joined = body.replace("\\\n", " ")
        for line in joined.splitlines():
            command = line.split("  #")[0].split(" # ")[0].strip()
            # Variables set for the one command (docs/migration.md) are part of it.
            bare = _ENV_PREFIX.sub("", command)
            # Live `--follow` lines run until Ctrl-C: test_follow_example_runs runs them.
            live = "--follow" in command.split()
            # A command shown again in another doc (the serve lines of README.md and
            # cli.md) runs once: the same words in the same folder prove nothing more.
            seen = any(command == shown for _, shown in examples)
            if (bare.startswith("ridtrace ") or _FEEDS_RIDTRACE.match(bare)) \
                    and not _GRAMMAR.search(command) and not live and not seen:
                examples.append((doc, command))
    return examples


def _python_examples() -> list[tuple[str, str]]:
    return [(doc, body) for doc, body in _blocks("python")
            if not any(marker in body for marker in _OWN_TEST_MARKERS)]


# What in an example needs an optional extra: without it installed, the example's test
# skips (tests/support/extras.py), as the docs name the extra the example needs.
_EXTRA_USES = {
    "dask": re.compile(r"--engine[ =]dask|ridtrace\.forensics\.dask_engine|^\s*(?:import|from) (?:dask|distributed|fsspec)\b", re.M),
    "plot": re.compile(r"--plot\b|^\s*(?:import|from) matplotlib\b", re.M),
    "grpc": re.compile(r"PROTOCOL=grpc\b"),
}


def _with_extras(examples: list[tuple[str, str]]) -> list[object]:
    """``examples`` as parameters, each marked with the extras its text uses."""
    return [pytest.param(doc, text, marks=[pytest.mark.extra(extra)
                                           for extra, use in _EXTRA_USES.items()
                                           if use.search(text)])
            for doc, text in examples]


def test_the_docs_do_show_examples() -> None:
    assert len(_shell_examples()) >= 10
    assert len(_python_examples()) >= 3


@pytest.fixture(scope="module")
def scratch(demo_output: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``demo-out/`` and ``logs/`` as the docs' examples expect."""
    folder = tmp_path_factory.mktemp("docs")
    shutil.copytree(demo_output, folder / "demo-out")
    shutil.copytree(demo_output / "safe" / "logs", folder / "logs")
    return folder


def _ridtrace_env() -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}


@pytest.mark.parametrize(("doc", "command"), _with_extras(_shell_examples()))
def test_shell_example_runs(doc: str, command: str, scratch: Path) -> None:
    words = shlex.split(_ENV_PREFIX.sub("", command))
    if words[0] == "cat":
        words = ["cat", *shlex.split(command.split("| ", 1)[1])]
    if words[1] == "demo":
        pytest.skip("the demo itself runs once for the whole session (tests/conftest.py)")
    if words[1] == "serve":
        _run_server_example(command, scratch)
        return
    args = plain_ridtrace_args(command)
    if args is not None:  # tests/support/inprocess_cli.py: a plain report command
        code, stdout, stderr = run_in_process(args, scratch)
    else:
        done = subprocess.run(["bash", "-c", command], cwd=scratch, env=_ridtrace_env(),
                              capture_output=True, text=True, timeout=120)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    # 1 is "an error finding exists" — the legacy run's logs are meant to have them.
    assert code in (0, 1), f"{doc}: {command}\n{stderr[-2000:]}"
    assert stdout or "-o " in command or "--plot" in command, f"{doc}: {command} printed nothing"


def _run_server_example(command: str, scratch: Path) -> None:
    port = free_port()
    prefix = _ENV_PREFIX.match(command)
    variables = dict(word.split("=", 1) for word in shlex.split(prefix[0])) if prefix else {}
    command = _ENV_PREFIX.sub("", command)
    command = re.sub(r"--port \d+", f"--port {port}", command)
    process = subprocess.Popen(["bash", "-c", "exec " + command], cwd=scratch,
                               env={**_ridtrace_env(), **variables}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(url, process, path="/health")
        assert httpx.get(url + "/health").status_code == 200
        if "RIDTRACE_DEPRECATION_AT" in variables:  # docs/migration.md: the headers it sets
            answer = httpx.get(url + "/health", headers={"x-dynamo-request-id": "old"})
            assert answer.headers["deprecation"].startswith("@"), answer.headers
            assert "sunset" in answer.headers and 'rel="deprecation"' in answer.headers["link"]
    finally:
        stop_process(process)


_HARNESS = """
import asyncio, httpx
async def _check():
    routes = {getattr(r, "path", None) for r in getattr(app, "routes", [])}
    if "/hello" in routes:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.get("/hello")
        assert response.status_code == 200, response.text
        assert response.json()["request_id"] == response.headers["x-server-request-id"]
        print("checked /hello")
    if "/metrics" in routes:  # docs/metrics.md: the scrape shows ridtrace's instruments
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            await client.get("/metrics")
            scrape = await client.get("/metrics")
            # A scraper's or a probe's HEAD (docs/metrics.md) was answered 405.
            head = await client.head("/metrics")
        assert scrape.status_code == 200, scrape.text
        assert head.status_code == 200 and not head.content, head.status_code
        assert head.headers["content-type"] == scrape.headers["content-type"]
        assert 'ridtrace_requests_total{' in scrape.text and 'route="/metrics"' in scrape.text, scrape.text
        print("checked /metrics")
    # An example that configures telemetry must flush it when the server stops: under
    # uvicorn atexit never runs on SIGTERM, so without telemetry_lifespan (or a lifespan
    # nesting it) the last spans and metrics are lost (docs/tracing.md).
    from ridtrace.tracing import lifecycle
    if lifecycle._owned and hasattr(app, "router"):
        async with app.router.lifespan_context(app):
            pass
        assert not lifecycle._owned, "configures telemetry but its lifespan never shuts it down"
        print("checked the lifespan flushes telemetry")
asyncio.run(_check())
"""


@pytest.mark.parametrize(("doc", "code"), _with_extras(_python_examples()))
def test_python_example_runs(doc: str, code: str, tmp_path: Path, scratch: Path) -> None:
    # A fresh interpreter per example: examples set process-wide things (the global
    # tracer provider, loguru sinks) that must not leak into other tests.
    script = tmp_path / "example.py"
    script.write_text("from fastapi import FastAPI\napp = FastAPI()\n" + code + _HARNESS)
    done = subprocess.run([sys.executable, str(script)], cwd=scratch, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": child_pythonpath()})
    assert done.returncode == 0, f"{doc}:\n{code}\n{done.stderr[-3000:]}"
    if "metrics_endpoint" in code:
        assert "checked /metrics" in done.stdout, f"{doc}: the example serves no /metrics"


def _follow_examples() -> list[tuple[str, str]]:
    """The live `analyze --follow` lines (README, cli.md's `$ ` session), as printed: they
    run until Ctrl-C, so test_shell_example_runs leaves them out."""
    examples = []
    for doc, body in _blocks("shell"):
        for line in body.splitlines():
            command = line.split("  #")[0].removeprefix("$ ").strip()
            if command.startswith("ridtrace analyze ") and "--follow" in command.split() \
                    and not _GRAMMAR.search(command):
                examples.append((doc, " ".join(command.split())))
    return examples


def test_the_docs_show_the_live_follow() -> None:
    assert {doc for doc, _ in _follow_examples()} >= {"README.md", "cli.md"}


@pytest.mark.parametrize(("doc", "command"), _with_extras(_follow_examples()))
def test_follow_example_runs(doc: str, command: str, demo_output: Path, tmp_path: Path) -> None:
    # As cli.md's session shows it: started before the demo wrote its logs, the follower
    # waits for the directory, reads the files that appear from their first line, prints
    # each error finding as a table line and, on Ctrl-C, the summary; exit 1 (findings).
    process = subprocess.Popen(["bash", "-c", "exec " + command], cwd=tmp_path,
                               env=_ridtrace_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    follower = FollowProcess(process)
    for stream, into_stdout in ((process.stdout, True), (process.stderr, False)):
        thread = threading.Thread(target=follower._pump, args=(stream, into_stdout), daemon=True)
        thread.start()
        follower._threads.append(thread)
    try:
        follower.wait_for(lambda: any("to appear" in line for line in follower.stderr),
                          timeout=60, what=f"{doc}: {command} waiting for its input")
        shutil.copytree(demo_output / "legacy" / "logs", tmp_path / "demo-out" / "legacy" / "logs")
        follower.wait_for(lambda: any(" crossed_stream " in p.text for p in follower.stdout),
                          timeout=60, what=f"{doc}: {command} printing a crossed stream")
    finally:
        code = follower.stop(signal.SIGINT)
    printed = [p.text for p in follower.stdout]
    assert code == 1, (doc, command, follower.stderr[-5:])
    assert "summary" in printed, printed  # the Ctrl-C summary, after the findings
    where = "the start" if "--from-start" in command.split() else "the end"
    assert follower.stderr[0].startswith(f"ridtrace: following 0 file(s) from {where}"), follower.stderr


def _demo_requests_named_before(text: str, index: int) -> int:
    """The ``--requests`` of the ``ridtrace demo`` the prose before ``index`` names, else
    the demo's default (what ``make demo`` runs)."""
    from ridtrace.cli.demo import demo

    named = re.findall(r"ridtrace demo --requests (\d+)", text[:index])
    if named:
        return int(named[-1])
    default = next(p.default for p in demo.params if p.name == "count")
    return int(default)  # type: ignore[arg-type]


def test_the_trace_example_matches_the_demo_it_names() -> None:
    # cli.md's `ridtrace trace rollout-7 demo-out/legacy/logs --limit 2` sample said 11
    # requests matched "on the legacy run of `make demo`", whose 240 calls hold 66 with
    # that id: the sample came from the tests' 36-call demo. Every call of the seeded plan
    # is one frontend request, so the count it prints is known before any run.
    from ridtrace.demo.plan import make_plan

    text = (REPO / "docs" / "cli.md").read_text()
    sample = re.search(r"^(rollout-7): (\d+) matching request\(s\), (\d+) shown", text, re.M)
    assert sample, "cli.md shows no `ridtrace trace rollout-7` sample"
    requests = _demo_requests_named_before(text, sample.start())
    plan = make_plan(requests)
    holding = sum(1 for call in plan
                  if "rollout-7" in (call.headers.get("x-request-id"), call.body_client_id))
    matched, shown = int(sample[2]), int(sample[3])
    assert matched == holding, (requests, matched, holding)
    assert f"… {matched - shown} more matching request(s)" in text
    assert f'"id": "rollout-7", "matched": {matched}, "shown": {shown}, "more": {matched - shown}' in text


def test_examples_hold_no_optional_parts_in_brackets() -> None:
    # Brackets are grammar in a synopsis (`ridtrace analyze PATH... [-q]`), not in an
    # example a reader copies: README's `ridtrace analyze demo-out/legacy/logs --follow
    # [--from-start]` followed a path named `[--from-start]` that never appeared (the run
    # incomplete), frontend-plugin.md's `ridtrace serve worker ... [--token-delay 0.01]`
    # exited 2 ("unexpected extra arguments"). This file skipped the one and stripped the
    # brackets from the other before running them, so neither was ever run as printed.
    bracketed = []
    for doc, body in _blocks("shell"):
        for line in body.replace("\\\n", " ").splitlines():
            command = line.split("  #")[0].removeprefix("$ ").strip()
            if command.startswith("ridtrace ") and not _GRAMMAR.search(command) \
                    and re.search(r"\[-", command):
                bracketed.append((doc, command))
    assert not bracketed


def _heading_anchors(text: str) -> set[str]:
    # GitHub's anchors: a heading lower-cased, its punctuation (backticks, dots, colons)
    # dropped, spaces made hyphens; a repeated heading gets -1, -2, …
    anchors: set[str] = set()
    for heading in re.findall(r"^#+\s+(.+)$", _FENCE.sub("", text), re.M):
        anchor = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        repeat, numbered = 0, anchor
        while numbered in anchors:
            repeat += 1
            numbered = f"{anchor}-{repeat}"
        anchors.add(numbered)
    return anchors


def test_every_link_between_the_docs_resolves() -> None:
    # A reader going from docs/index.md through the docs follows these links: a renamed
    # heading or file left them pointing at nothing, silently, on GitHub.
    anchors = {doc: _heading_anchors(doc.read_text(encoding="utf-8")) for doc in DOCS}
    broken = []
    for doc in DOCS:
        prose = _FENCE.sub("", doc.read_text(encoding="utf-8"))
        for link in re.findall(r"\]\(([^)\s]+)\)", prose):
            if re.match(r"[a-z]+:", link):
                continue  # http(s), mailto: outside the repository
            path, _, fragment = link.partition("#")
            target = (doc.parent / path).resolve() if path else doc
            if not target.exists() or (fragment and target.suffix == ".md"
                                       and fragment not in anchors.get(target, set())):
                broken.append(f"{doc.relative_to(REPO)}: {link}")
    assert not broken
