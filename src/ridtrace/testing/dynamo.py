"""Generate NVIDIA Dynamo-format JSONL incidents (``DYN_LOGGING_JSONL=1``) with known faults.

The shape follows Dynamo's formatter (see ``shared/samples``): a frontend file with
``http-request``/``generate`` spans and worker files with ``handle_payload`` spans whose
``parent_id`` names the frontend span. The incident is the one the seed describes: under
the legacy id policy the client's ``x-request-id`` became the internal id, so two
concurrent requests with the same id collide and one fails with "Unlinked response".

Each file starts with a plain-text banner (a process's stdout before its JSON logger
starts), and a few torn lines are mixed in, as real incident logs have them.
`DynamoTruth.expected` holds ``(kind, key)`` pairs exactly as `SynthTruth` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ridtrace.contract import UNLINKED_REQUEST, UNLINKED_RESPONSE
from ridtrace.testing.ids import IdMaker

_BASE = datetime(2026, 10, 2, 14, 0, 0, tzinfo=UTC)
_LINES_PER_REQUEST = 9.0  # average, used to size benchmarks


@dataclass(frozen=True)
class DynamoSpec:
    """Volume and faults of one incident."""

    requests: int = 300
    seed: int = 11
    workers: int = 3
    rate_per_s: float = 800.0
    duplicates: int = 3  # colliding pairs: a duplicate in flight and one Unlinked error each
    cancelled: int = 2  # Unlinked request: the caller went away before the engine answered
    deprecated_every: int = 90
    bad_lines: int = 2  # torn lines per file, besides the banner
    worker_skew_us: tuple[int, ...] = ()  # clock offset of each worker file


@dataclass
class DynamoTruth:
    """The files written and the findings a correct analyzer must report."""

    files: list[Path]
    lines: int = 0
    bad_lines: int = 0
    requests: int = 0
    expected: set[tuple[str, str]] = field(default_factory=set)


def dynamo_requests_for_lines(lines: int) -> int:
    """How many requests give about `lines` Dynamo log lines in all."""
    return max(1, int(lines / _LINES_PER_REQUEST))


_FRONT_HEAD = (
    '{{"time":"{t}","level":"{level}","file":"lib/llm/src/http/service/{src}","line":{line},'
    '"target":"dynamo_llm::http::service::{mod}","message":"{msg}"'
)
_WORKER_HEAD = (
    '{{"time":"{t}","level":"DEBUG","file":"lib/runtime/src/pipeline/network/ingress/'
    'push_handler.rs","line":{line},"target":"dynamo_runtime::pipeline::network::ingress::'
    'push_handler","message":"{msg}","component":"backend","endpoint":"generate",'
    '"instance_id":"{instance}","namespace":"dynamo","otel.kind":"server"'
)
_ENGINE = (
    '{{"time":"{t}","level":"INFO","file":"components/src/dynamo/vllm/engine.py","line":412,'
    '"target":"dynamo_vllm::engine","message":"{msg}","batch_size":{batch},'
    '"num_running_reqs":{running},"kv_cache_usage":"{usage:.3f}","gpu_id":{gpu}}}'
)


class _Gen(IdMaker):
    def __init__(self, spec: DynamoSpec) -> None:
        super().__init__(spec.seed, _BASE)
        self.spec = spec


def _ctx(rid: str, xrid: str | None, span: str, name: str, trace: str) -> str:
    x = f',"x_request_id":"{xrid}"' if xrid is not None else ""
    return f',"request_id":"{rid}","span_id":"{span}","span_name":"{name}","trace_id":"{trace}"{x}'


def _proves(line: str) -> bool:
    """Whether tearing `line` would lose a finding of the truth: a deprecated-header WARN,
    an Unlinked error, or a frontend span's first line (a duplicate's overlap)."""
    return (
        '"header":"' in line
        or '"message":"engine generate call failed"' in line
        or ('"message":"request received"' in line and '"span_name":"http-request"' in line)
    )


def write_dynamo_logs(out_dir: Path, spec: DynamoSpec | None = None) -> DynamoTruth:
    """Write ``frontend.jsonl`` and ``worker-N.jsonl`` under `out_dir`; return the truth."""
    spec = spec or DynamoSpec()
    gen = _Gen(spec)
    rng = gen.rng
    out_dir.mkdir(parents=True, exist_ok=True)
    front: list[tuple[int, str]] = []
    workers: list[list[tuple[int, str]]] = [[] for _ in range(spec.workers)]
    truth = DynamoTruth(files=[])
    gap = 1_000_000 / spec.rate_per_s
    n = spec.requests
    # Colliding pairs and cancellations are spread evenly through the run.
    dup_at = {int((k + 0.5) * n / (spec.duplicates + 1)) for k in range(spec.duplicates)}
    cancel_at = {int((k + 0.7) * n / (spec.cancelled + 1)) for k in range(spec.cancelled)}
    cancel_at -= dup_at  # a colliding pair's first request is served, not cancelled
    instances = [str(rng.getrandbits(63)) for _ in range(spec.workers)]
    skews = list(spec.worker_skew_us) + [0] * spec.workers
    t = 0
    for i in range(n):
        t += int(rng.expovariate(1.0) * gap) + 1
        dur = int(rng.lognormvariate(12.5, 0.6)) + 5_000
        xrid = f"rollout-{i}-s{rng.randrange(8)}" if rng.random() < 0.7 else None
        rid = gen.uuid()
        copies = [(rid, xrid, t, dur, False)]
        if i in dup_at:  # legacy policy: the client's id is the internal id, sent twice
            xrid = f"retry-{i}"
            copies = [(xrid, xrid, t, dur, False), (xrid, xrid, t + dur // 4, dur, True)]
            truth.expected.add(("duplicate_in_flight", xrid))
        for rid_c, xrid_c, t0, d, loses in copies:
            truth.requests += 1
            trace, fspan = gen.hex(32), gen.hex(16)
            uri = "/v1/chat/completions" if rng.random() < 0.8 else "/v1/completions"
            fctx = _ctx(rid_c, xrid_c, fspan, "http-request", trace)
            http = f',"method":"POST","uri":"{uri}","version":"HTTP/1.1"'
            every = spec.deprecated_every
            if every and i % every == every - 1 and not loses:
                header = "x-dynamo-request-id" if i % (2 * every) < every else "request-id"
                front.append((t0, _FRONT_HEAD.format(
                    t=gen.ts(t0), level="WARN", src="openai.rs", line=330, mod="openai",
                    msg="ignoring deprecated client request id header",
                ) + f',"header":"{header}"' + fctx + http + "}"))
                truth.expected.add(("deprecated_header", fspan))
            front.append((t0 + 40, _FRONT_HEAD.format(
                t=gen.ts(t0 + 40), level="DEBUG", src="metrics.rs", line=905, mod="metrics",
                msg="request received",
            ) + ',"endpoint":"chat_completions","model":"Qwen/Qwen3-0.6B","request_type":"stream"'
                + fctx + http + "}"))
            if loses or i in cancel_at:
                error = UNLINKED_RESPONSE if loses else UNLINKED_REQUEST
                gspan = gen.hex(16)
                gctx = _ctx(rid_c, xrid_c, gspan, "generate", trace)
                front.append((t0 + 900, _FRONT_HEAD.format(
                    t=gen.ts(t0 + 900), level="ERROR", src="generate.rs", line=712,
                    mod="generate", msg="engine generate call failed",
                ) + f',"error":"{error}","model":"Qwen/Qwen3-0.6B"' + gctx.replace(
                    '"span_name":"generate"', f'"parent_id":"{fspan}","span_name":"generate"'
                ) + "}"))
                front.append((t0 + 1200, _FRONT_HEAD.format(
                    t=gen.ts(t0 + 1200), level="INFO", src="service_v2.rs", line=1187,
                    mod="service_v2", msg="http response sent",
                ) + ',"latency_ms":"1","status":"500"' + fctx + http + "}"))
                truth.expected.add(("unlinked", gspan))  # the span that logged the error
                continue
            w = rng.randrange(spec.workers)
            wspan = gen.hex(16)
            wctx = f',"parent_id":"{fspan}"' + _ctx(rid_c, xrid_c, wspan, "handle_payload", trace)
            ws, we = t0 + 2_000, t0 + d - 3_000
            skew = skews[w]
            rows = workers[w]
            rows.append((ws + skew, _WORKER_HEAD.format(
                t=gen.ts(ws + skew), line=214, msg="request received", instance=instances[w],
            ) + ',"trace_flags":"01"' + wctx + "}"))
            for step in range(3):
                ts = ws + (we - ws) * (step + 1) // 4 + skew
                rows.append((ts, _WORKER_HEAD.format(
                    t=gen.ts(ts), line=240 + step, msg="decode step", instance=instances[w],
                ) + f',"tokens":{16 * (step + 1)},"trace_flags":"01"' + wctx + "}"))
            rows.append((we + skew, _WORKER_HEAD.format(
                t=gen.ts(we + skew), line=178, msg="request completed", instance=instances[w],
            ) + ',"trace_flags":"01"' + wctx + "}"))
            end = t0 + d
            front.append((end, _FRONT_HEAD.format(
                t=gen.ts(end), level="DEBUG", src="metrics.rs", line=1012, mod="metrics",
                msg="request completed",
            ) + f',"elapsed_ms":{d // 1000},"input_tokens":"12","output_tokens":"50",'
                '"model":"Qwen/Qwen3-0.6B","status":"success"' + fctx + http + "}"))
            front.append((end + 100, _FRONT_HEAD.format(
                t=gen.ts(end + 100), level="INFO", src="service_v2.rs", line=1187,
                mod="service_v2", msg="http response sent",
            ) + f',"latency_ms":"{d // 1000}","status":"200"' + fctx + http + "}"))
        if i % 4 == 0:  # the engine's own scheduler lines, no request context
            w = rng.randrange(spec.workers)
            workers[w].append((t + skews[w], _ENGINE.format(
                t=gen.ts(t + skews[w]), msg="scheduler step", batch=rng.randrange(1, 64),
                running=rng.randrange(64), usage=rng.random(), gpu=w,
            )))
    names = ["frontend", *(f"worker-{k}" for k in range(spec.workers))]
    for name, rows in zip(names, [front, *workers], strict=True):
        rows.sort(key=lambda row: row[0])
        text = [row[1] for row in rows]
        # Torn writes: a line cut short mid-object, at evenly spread places. A line that
        # alone proves a finding in the truth, or starts a caller's span, is left whole
        # (the next one is torn instead): the truth must stay what the logs can prove.
        torn: set[int] = set()
        for k in range(min(spec.bad_lines, len(text))):
            at = (k + 1) * len(text) // (spec.bad_lines + 1)
            while at < len(text) and (at in torn or _proves(text[at])):
                at += 1
            if at < len(text):
                torn.add(at)
                text[at] = text[at][: len(text[at]) // 2]
        truth.bad_lines += len(torn) + 1
        banner = f"{name}: starting dynamo {name.split('-')[0]} (pid {4000 + len(name)})"
        path = out_dir / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            fh.write(banner + "\n")
            fh.write("\n".join(text))
            fh.write("\n")
        truth.files.append(path)
        truth.lines += len(text) + 1
    return truth
