"""What the synthetic logs hold: the requests, their timing, and the faults planted.

`ridtrace.testing.synth` writes these plans out as ridtrace/1 log lines; the plan alone
decides what a correct analyzer must find (`SynthTruth.expected`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ridtrace.contract import UNLINKED_REQUEST, UNLINKED_RESPONSE
from ridtrace.testing.ids import IdMaker

_BASE = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)
_LINES_PER_REQUEST = 7.5  # average, with the default noise; used to size benchmarks
_ENGINE_NOISE_LINES = 3.5  # extra lines per request with `SynthSpec.engine_noise`


@dataclass(frozen=True)
class SynthSpec:
    """What to generate: volume, concurrency and how many faults of each kind."""

    requests: int = 200
    seed: int = 7
    workers: int = 2
    rate_per_s: float = 400.0
    crossed: int = 1
    collisions: int = 1
    duplicates: int = 1
    client_reuse: int = 1
    deprecated_every: int = 40
    near_misses: bool = True
    noise_every: int = 2
    # Lines a real deployment interleaves that are no request lifecycle: uvicorn access
    # lines (with request context) on both sides, and the engine's own scheduler lines
    # (SGLang's "Prefill batch" per admitted request, "Decode batch" now and then)
    # without request context.
    engine_noise: bool = False


@dataclass
class SynthTruth:
    """The files written and the findings a correct analyzer must report."""

    files: list[Path]
    lines: int = 0
    requests: int = 0
    expected: set[tuple[str, str]] = field(default_factory=set)


@dataclass
class PlannedRequest:
    t0: int
    rid: str
    xrid: str | None
    trace: str
    fspan: str
    wspan: str
    fp_in: str
    w_out: str | None
    delivered: str | None
    dur: int
    worker: int
    f_outcome: str = "ok"
    f_status: int = 200
    w_outcome: str = "ok"
    unlinked: str | None = None
    deprecated: str | None = None
    refused_span: str | None = None
    policy: str = "safe"


def requests_for_lines(lines: int, *, engine_noise: bool = False) -> int:
    """How many requests give about `lines` log lines in all (default noise)."""
    per_request = _LINES_PER_REQUEST + (_ENGINE_NOISE_LINES if engine_noise else 0.0)
    return max(1, int(lines / per_request))


class RequestPlanner(IdMaker):
    """Plans a `SynthSpec`'s requests, recording each planted fault as it goes."""

    def __init__(self, spec: SynthSpec) -> None:
        super().__init__(spec.seed, _BASE)
        self.spec = spec
        self.truth_expected: set[tuple[str, str]] = set()
        self.warned: set[tuple[str, str]] = set()

    def normal(self, i: int, t0: int) -> PlannedRequest:
        rng = self.rng
        out = self.hex(16)
        xrid = f"rollout-{i}-s{rng.randrange(8)}" if rng.random() < 0.6 else None
        every = self.spec.deprecated_every
        dep = None
        if every and i % every == every - 1:
            dep = "x-dynamo-request-id" if i % (2 * every) < every else "request-id"
        return PlannedRequest(
            t0=t0, rid=self.uuid(), xrid=xrid, trace=self.hex(32), fspan=self.hex(16),
            wspan=self.hex(16), fp_in=self.hex(16), w_out=out, delivered=out,
            dur=int(rng.lognormvariate(12.0, 0.8)) + 2_000, worker=rng.randrange(self.spec.workers),
            deprecated=dep,
        )

    def scenario(self, name: str, i: int, t0: int) -> list[PlannedRequest]:
        a, b = self.normal(i, t0), self.normal(i + 1, t0 + 7_000)
        a.deprecated = b.deprecated = None
        a.dur = b.dur = 400_000
        exp = self.truth_expected
        if name in ("collision", "crossed", "duplicate", "sequential"):
            shared = f"{i}"  # legacy policy: the client's id became the internal id
            for r in (a, b):
                r.rid, r.xrid, r.policy = shared, shared, "legacy"
            if name == "sequential":
                b.t0 = a.t0 + a.dur + 20_000
                return [a, b]
            exp.add(("duplicate_in_flight", shared))
        if name == "collision":
            for r, msg in ((a, UNLINKED_REQUEST), (b, UNLINKED_RESPONSE)):
                r.unlinked, r.delivered, r.f_outcome, r.f_status = msg, None, "error", 500
                exp.add(("unlinked", r.fspan))
        elif name == "crossed":
            b.delivered = a.w_out
            a.unlinked, a.delivered, a.f_outcome, a.f_status = UNLINKED_REQUEST, None, "error", 500
            exp.update({("crossed_stream", b.fspan), ("unlinked", a.fspan), ("unlinked", b.wspan)})
        elif name in ("client_reuse", "client_sequential"):
            a.xrid = b.xrid = f"client-{i}"
            if name == "client_sequential":
                b.t0 = a.t0 + a.dur + 20_000
            else:
                exp.add(("client_id_reuse", a.xrid))
        elif name == "same_prompt":
            b.fp_in, b.w_out, b.delivered = a.fp_in, a.w_out, a.w_out
        elif name == "cancelled":
            a.f_outcome, a.f_status, a.delivered = "cancelled", 0, None
            a.w_outcome, a.w_out = "cancelled", None
            b.f_outcome, b.delivered = "cancelled", self.hex(16)  # left after the worker finished
        elif name == "conflict_retry":
            a.refused_span = self.hex(16)
        return [a, b]

    def plan(self) -> list[PlannedRequest]:
        spec = self.spec
        names: list[str] = (
            ["crossed"] * spec.crossed
            + ["collision"] * spec.collisions
            + ["duplicate"] * spec.duplicates
            + ["client_reuse"] * spec.client_reuse
        )
        if spec.near_misses:
            names += ["sequential", "client_sequential", "same_prompt", "cancelled"]
            names += ["conflict_retry"]
        n = spec.requests
        slots = {int((k + 0.5) * n / (len(names) + 1)): name for k, name in enumerate(names)}
        step = 1_000_000 / spec.rate_per_s
        reqs: list[PlannedRequest] = []
        i = 0
        while i < n:
            t0 = int(i * step + self.rng.random() * step)
            if i in slots:
                reqs.extend(self.scenario(slots[i], i, t0))
                i += 2
            else:
                reqs.append(self.normal(i, t0))
                i += 1
        for r in reqs:
            if r.deprecated:
                self.truth_expected.add(("deprecated_header", r.fspan))
        reqs.sort(key=lambda r: r.t0)
        return reqs
