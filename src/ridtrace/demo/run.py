"""The demo's two runs: the same traffic under the legacy and the safe id policy."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from ridtrace.demo.callers import CallerSpans
from ridtrace.demo.plan import CallResult, PlannedCall, is_own_output
from ridtrace.demo.processes import start_stack
from ridtrace.demo.traffic import send_traffic

__all__ = ["PolicyRun", "forget_earlier_run", "run_policy", "written_whole"]

POLICIES: tuple[str, ...] = ("legacy", "safe")
# What a run leaves in its policy's folder besides logs/ and stderr/ (demo.proof writes
# the last three).
RESULT_FILES: tuple[str, ...] = (
    "calls.json", "report.json", "traces.json", "deprecated-headers.png",
)


@contextlib.contextmanager
def written_whole(path: Path) -> Iterator[Path]:
    """A name to write ``path``'s content under, renamed to ``path`` once it is complete.

    Ctrl-C while the demo wrote a result left it half written (an empty traces.json,
    measured) among the run's results; now there is none. The name keeps the extension,
    which the plot's format is chosen by.
    """
    partial = path.with_name(f".partial-{path.name}")
    try:
        yield partial
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def forget_earlier_run(out_dir: Path, policy: str) -> None:
    """Remove what an earlier run left for ``policy``: its logs would mix two runs into one
    report, its stderr files (workers listen on fresh ports, so each run names its own)
    would pass for this run's processes', and its results, if this run is stopped before
    it writes its own, would sit beside this run's logs as if they described them."""
    folder = out_dir / policy
    for earlier in (folder / "logs", folder / "stderr"):
        if earlier.exists():
            shutil.rmtree(earlier)
    for name in RESULT_FILES:
        (folder / name).unlink(missing_ok=True)


@dataclass
class PolicyRun:
    """One policy's traffic, what the callers saw, and what the logs say."""

    policy: str
    log_dir: Path
    results: list[CallResult]
    inflight_after: int | None
    report: dict[str, Any] = field(default_factory=dict)
    trace_of_span: dict[str, str] = field(default_factory=dict)

    @property
    def answered(self) -> list[CallResult]:
        """Calls whose client waited for the whole answer (no deliberate hang-up)."""
        return [r for r in self.results if not r.call.disconnect]

    @property
    def non_200(self) -> int:
        return sum(1 for r in self.answered if r.status != 200)

    @property
    def not_own_output(self) -> list[CallResult]:
        """200 answers that were not the caller's own output."""
        return [r for r in self.answered if r.status == 200 and not is_own_output(r)]

    def findings(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.report.get("findings", []) if f["kind"] == kind]


def _inflight(frontend_url: str) -> int | None:
    try:
        # The stack is on loopback: not through the shell's proxy (`processes.start_stack`),
        # where the check was skipped (`?`) or, under a SOCKS proxy httpx cannot use, a
        # traceback and exit 4.
        body = httpx.get(frontend_url + "/debug/inflight", timeout=5, trust_env=False).json()
    except (httpx.HTTPError, ValueError):
        return None
    size = body.get("size", body.get("inflight")) if isinstance(body, dict) else None
    return size if isinstance(size, int) else None


def run_policy(
    policy: str,
    plan: list[PlannedCall],
    out_dir: Path,
    *,
    concurrency: int,
    token_delay: float,
    env: dict[str, str] | None = None,
    on_done: Callable[[CallResult], None] | None = None,
    keep_running: Callable[[str], None] | None = None,
) -> PolicyRun:
    """Start a stack with ``policy``, send ``plan``, stop it, and return what was seen.

    ``keep_running`` is called with the frontend URL before the stack stops (the
    ``--keep-running`` option waits there for Ctrl-C).
    """
    log_dir = out_dir / policy / "logs"
    forget_earlier_run(out_dir, policy)
    run_env = {**(env or {})}
    run_env["OTEL_RESOURCE_ATTRIBUTES"] = _with_policy(policy, {**os.environ, **run_env})
    # The callers' spans go where the stack's go, named as they are (see demo.callers).
    spans = CallerSpans({**os.environ, **run_env})
    try:
        with start_stack(log_dir, id_policy=policy, token_delay=token_delay,
                         env=run_env) as stack:
            results = send_traffic(stack.frontend_url, plan, concurrency=concurrency,
                                   on_done=on_done, spans=spans)
            inflight = _inflight(stack.frontend_url)
            if keep_running is not None:
                keep_running(stack.frontend_url)
    finally:
        spans.shutdown()
    run = PolicyRun(policy, log_dir, results, inflight)
    with written_whole(out_dir / policy / "calls.json") as calls:
        calls.write_bytes(
            orjson.dumps([_call_record(r) for r in results], option=orjson.OPT_INDENT_2) + b"\n"
        )
    return run


def _with_policy(policy: str, env: dict[str, str]) -> str:
    """The run's resource attributes: the user's own (``deployment.environment=…``),
    which replacing the variable dropped from every frontend and worker span, then the
    policy, last so it names this run whatever the user's variable held."""
    own = env.get("OTEL_RESOURCE_ATTRIBUTES", "").strip().strip(",")
    return ",".join(filter(None, (own, f"ridtrace.demo.policy={policy}")))


def _call_record(result: CallResult) -> dict[str, Any]:
    call = result.call
    return {
        "index": call.index,
        "route": call.route,
        "stream": call.stream,
        "prompt": call.prompt,
        "trace_id": call.trace_id,
        "headers": call.headers,
        "body_client_id": call.body_client_id,
        "disconnect": call.disconnect,
        "status": result.status,
        "server_request_id": result.server_request_id,
        "own_output": is_own_output(result),
        "foreign_prompts": result.foreign_prompts,
        "error": result.error,
    }
