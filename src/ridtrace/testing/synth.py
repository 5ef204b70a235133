"""Generate realistic frontend/worker log pairs in the ridtrace/1 schema, with known faults.

Used by the tests (small, exact expectations) and by the benchmark (millions of lines).
Every injected fault is recorded in `SynthTruth.expected` as ``(kind, key)`` so a test
can assert that the analyzer finds all of them and invents none. Keys: the request's
``span_id`` for ``crossed_stream``/``unlinked``/``deprecated_header``, the
``request_id`` for ``duplicate_in_flight``, the ``x_request_id`` for ``client_id_reuse``.
"""

from __future__ import annotations

from pathlib import Path

from ridtrace.contract import (
    DEPRECATED_HEADER,
    DISPATCH_ATTEMPT,
    DISPATCH_RETRY,
    LOG_SCHEMA,
    REQUEST_END,
    REQUEST_START,
    RESPONSE_UNLINKED,
    WORKER_END,
    WORKER_REFUSED,
    WORKER_START,
)
from ridtrace.frontend_plugin import dispatch, routes, worker
from ridtrace.testing.synth_plan import (
    PlannedRequest,
    RequestPlanner,
    SynthSpec,
    SynthTruth,
    requests_for_lines,
)
from ridtrace.tracing import deprecation, middleware

# The loggers that write these lines, by the modules' own names: a rename shows here.
_MIDDLEWARE = middleware.__name__
_DEPRECATION = deprecation.__name__
_DISPATCH = dispatch.__name__
_WORKER = worker.__name__
_ROUTES = routes.__name__
_BATCH = 4096

__all__ = ["SynthSpec", "SynthTruth", "requests_for_lines", "write_logs"]


class _Gen(RequestPlanner):
    """A plan's requests as the log lines a frontend and its workers write."""

    def _ctx(self, r: PlannedRequest, span: str, parent: str | None) -> str:
        x = f',"x_request_id":"{r.xrid}"' if r.xrid else ""
        p = f',"parent_span_id":"{parent}"' if parent else ""
        return f'"request_id":"{r.rid}"{x},"trace_id":"{r.trace}","span_id":"{span}"{p}'

    def _head(self, us: int, level: str, msg: str, logger: str, service: str, pid: int) -> str:
        return (
            f'{{"time":"{self.ts(us)}","level":"{level}","message":"{msg}","logger":"{logger}",'
            f'"schema":"{LOG_SCHEMA}","service":"{service}","pid":{pid}'
        )

    def frontend_lines(self, r: PlannedRequest, url: list[str]) -> list[tuple[int, str]]:
        head, ctx = self._head, self._ctx(r, r.fspan, None)
        mw, fp = _MIDDLEWARE, _DISPATCH
        dep = f',"deprecated_headers":"{r.deprecated}"' if r.deprecated else ""
        t, end = r.t0, r.t0 + r.dur + 900
        client = f"10.0.3.17:{40000 + r.t0 % 20000}"
        out = [(t, head(t, "INFO", REQUEST_START, mw, "frontend", 4242)
                + f',"event":"{REQUEST_START}",{ctx},"method":"POST","path":"/v1/chat/completions",'
                f'"client":"{client}","user_agent":"openai-python/1.40.0"{dep}}}')]
        if r.deprecated and ("frontend", r.deprecated) not in self.warned:
            self.warned.add(("frontend", r.deprecated))
            out.append((t + 40, head(t + 40, "WARN", "ignoring deprecated client request id header",
                        _DEPRECATION, "frontend", 4242)
                        + f',"event":"{DEPRECATED_HEADER}","header":"{r.deprecated}",{ctx}}}'))
        attempt = 1
        if r.refused_span:
            other = url[(r.worker + 1) % len(url)]
            out.append((t + 200, head(t + 200, "DEBUG", DISPATCH_ATTEMPT, fp, "frontend", 4242)
                        + f',"event":"{DISPATCH_ATTEMPT}",{ctx},"worker":"{other}","attempt":1}}'))
            out.append((t + 600, head(t + 600, "WARN", DISPATCH_RETRY, fp, "frontend", 4242)
                        + f',"event":"{DISPATCH_RETRY}",{ctx},"worker":"{other}","attempt":1,'
                        '"reason":"conflict","marked_down":false}'))
            attempt = 2
        ta = t + 300 + 400 * (attempt - 1)
        out.append((ta, head(ta, "DEBUG", DISPATCH_ATTEMPT, fp, "frontend", 4242)
                    + f',"event":"{DISPATCH_ATTEMPT}",{ctx},"worker":"{url[r.worker]}",'
                    f'"attempt":{attempt}}}'))
        if self.spec.noise_every and r.t0 % self.spec.noise_every == 0:
            tn = t + 350
            out.append((tn, head(tn, "DEBUG", "prompt tokenized", _ROUTES,
                        "frontend", 4242) + f',{ctx},"tokens":{r.t0 % 900 + 12}}}'))
        if self.spec.engine_noise:
            ta = t + 800
            out.append((ta, head(ta, "INFO", f'{client} - \\"POST /v1/chat/completions HTTP/1.1\\" '
                        f"{r.f_status or 200}", "uvicorn.access", "frontend", 4242) + f",{ctx}}}"))
        if r.unlinked:
            out.append((end - 5, head(end - 5, "ERROR", r.unlinked, fp, "frontend", 4242)
                        + f',"event":"{RESPONSE_UNLINKED}",{ctx}}}'))
        level = "WARN" if r.f_outcome == "error" else "INFO"
        fpo = f',"fp_out":"{r.delivered}"' if r.delivered else ""
        err = f',"error":"{r.unlinked}"' if r.unlinked else ""
        out.append((end, head(end, level, REQUEST_END, mw, "frontend", 4242)
                    + f',"event":"{REQUEST_END}",{ctx},"method":"POST",'
                    f'"path":"/v1/chat/completions",'
                    f'"route":"/v1/chat/completions","status":{r.f_status},"outcome":"{r.f_outcome}",'
                    f'"duration_ms":{(end - t) / 1000:.3f},"bytes_in":{300 + r.t0 % 700},'
                    f'"bytes_out":{0 if not r.delivered else 800 + r.t0 % 3000},'
                    '"endpoint":"chat_completions","model":"Qwen/Qwen3-0.6B","stream":true,'
                    f'"fp_in":"{r.fp_in}"{fpo},"worker":"{url[r.worker]}","attempts":{attempt},'
                    f'"id_policy":"{r.policy}"{err}{dep}}}'))
        return out

    def worker_lines(self, r: PlannedRequest, w: int) -> list[tuple[int, str]]:
        head, svc, pid = self._head, f"worker-{8101 + w}", 5000 + w
        mw, wk = _MIDDLEWARE, _WORKER
        ctx = self._ctx(r, r.wspan, r.fspan)
        t = r.t0 + 500 + (400 if r.refused_span else 0)
        end = r.t0 + r.dur
        fpo = f',"fp_out":"{r.w_out}"' if r.w_out else ""
        code = 200 if r.w_outcome == "ok" else 0
        port = 30000 + r.t0 % 20000
        noise: list[tuple[int, str]] = []
        if self.spec.engine_noise:
            sched = "sglang.srt.managers.scheduler"
            running = r.t0 % 17 + 1
            noise = [
                (t + 100, head(t + 100, "INFO", f'127.0.0.1:{port} - \\"POST /worker/generate '
                 f'HTTP/1.1\\" {code or 200}', "uvicorn.access", svc, pid) + f",{ctx}}}"),
                (t + 120, head(t + 120, "INFO", f"Prefill batch. #new-seq: 1, #new-token: "
                 f"{r.t0 % 900 + 12}, #cached-token: 0, token usage: 0.0{running % 10}, "
                 f"#running-req: {running}, #queue-req: 0", sched, svc, pid) + "}"),
            ]
            if r.t0 % 2:
                td = end - 200
                noise.append((td, head(td, "INFO", f"Decode batch. #running-req: {running}, "
                              f"#token: {r.t0 % 9000 + 300}, token usage: 0.0{running % 10}, "
                              f"gen throughput (token/s): {400 + r.t0 % 500}.{r.t0 % 100:02d}, "
                              "#queue-req: 0", sched, svc, pid) + "}"))
        lifecycle = [
            (t, head(t, "INFO", REQUEST_START, mw, svc, pid) + f',"event":"{REQUEST_START}",{ctx},'
             f'"method":"POST","path":"/worker/generate","client":"127.0.0.1:{port}"}}'),
            (t + 80, head(t + 80, "INFO", WORKER_START, wk, svc, pid)
             + f',"event":"{WORKER_START}",{ctx},"endpoint":"chat_completions",'
             f'"model":"Qwen/Qwen3-0.6B","fp_in":"{r.fp_in}"}}'),
            (end - 300, head(end - 300, "INFO", WORKER_END, wk, svc, pid)
             + f',"event":"{WORKER_END}",{ctx},"outcome":"{r.w_outcome}",'
             f'"duration_ms":{(end - t) / 1000:.3f}{fpo},'
             f'"tokens":{r.t0 % 500 + 1}}}'),
            (end - 100, head(end - 100, "INFO", REQUEST_END, mw, svc, pid)
             + f',"event":"{REQUEST_END}",{ctx},"method":"POST","path":"/worker/generate",'
             '"route":"/worker/generate",'
             f'"status":{code},"outcome":"{r.w_outcome}","duration_ms":{(end - t) / 1000:.3f}}}'),
        ]
        return [*noise, *lifecycle]

    def refused_lines(self, r: PlannedRequest, w: int) -> list[tuple[int, str]]:
        svc, pid, t = f"worker-{8101 + w}", 5000 + w, r.t0 + 400
        ctx = self._ctx(r, r.refused_span or "", r.fspan)
        head = self._head(t, "WARN", WORKER_REFUSED, _WORKER, svc, pid)
        fields = f',"event":"{WORKER_REFUSED}",{ctx},"outcome":"conflict","status":409}}'
        return [(t, head + fields)]


def write_logs(out_dir: Path, spec: SynthSpec | None = None) -> SynthTruth:
    """Write ``frontend.jsonl`` and ``worker-81NN.jsonl`` files under `out_dir`."""
    spec = spec or SynthSpec()
    gen = _Gen(spec)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "frontend.jsonl"] + [
        out_dir / f"worker-{8101 + w}.jsonl" for w in range(spec.workers)
    ]
    urls = [f"http://127.0.0.1:{8101 + w}" for w in range(spec.workers)]
    truth = SynthTruth(files=paths)
    plan = gen.plan()
    truth.expected = set(gen.truth_expected)
    truth.requests = len(plan)
    handles = [p.open("w", encoding="utf-8") for p in paths]
    pending: list[list[tuple[int, str]]] = [[] for _ in paths]
    try:
        for start in range(0, len(plan), _BATCH):
            batch = plan[start : start + _BATCH]
            for r in batch:
                pending[0].extend(gen.frontend_lines(r, urls))
                pending[1 + r.worker].extend(gen.worker_lines(r, r.worker))
                if r.refused_span:
                    other = (r.worker + 1) % spec.workers
                    pending[1 + other].extend(gen.refused_lines(r, other))
            nxt = start + _BATCH
            # Lines after the next batch's first arrival wait for it: files stay time-sorted.
            cutoff = plan[nxt].t0 if nxt < len(plan) else None
            for k, handle in enumerate(handles):
                lines = sorted(pending[k], key=lambda item: item[0])
                keep = len(lines) if cutoff is None else next(
                    (j for j, item in enumerate(lines) if item[0] >= cutoff), len(lines)
                )
                handle.write("".join(text + "\n" for _, text in lines[:keep]))
                truth.lines += keep
                pending[k] = lines[keep:]
    finally:
        for handle in handles:
            handle.close()
    return truth
