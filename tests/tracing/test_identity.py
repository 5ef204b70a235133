"""Minting server ids: OS entropy fetched in batches, never the same id twice."""

from __future__ import annotations

import os
import sys
import threading
import uuid

import pytest

from ridtrace.tracing import identity
from ridtrace.tracing.identity import mint_trace_span_ids, uuid4_id, uuid7_id


def test_ids_come_from_the_os_in_batches_not_one_syscall_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real_urandom = os.urandom

    def counting_urandom(size: int) -> bytes:
        calls.append(size)
        return real_urandom(size)

    monkeypatch.setattr(identity.os, "urandom", counting_urandom)
    identity._forget_pools()
    ids = [uuid4_id() for _ in range(1000)] + [uuid7_id() for _ in range(1000)]
    pairs = [mint_trace_span_ids() for _ in range(1000)]
    assert len(set(ids)) == 2000 and len(set(pairs)) == 1000
    # 1,000 of each kind from 256-id batches: 4 fetches per kind, not 3,000 in all.
    assert len(calls) == 3 * -(-1000 // identity._BATCH)
    for text in ids[:1000]:
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text
    for text in ids[1000:]:
        assert uuid.UUID(text).version == 7
    for trace_id, span_id in pairs:
        assert len(trace_id) == 32 and len(span_id) == 16
        assert int(trace_id, 16) and int(span_id, 16)


def test_threads_minting_at_once_never_share_an_id() -> None:
    identity._forget_pools()
    per_thread = 5000
    results: list[list[str]] = [[] for _ in range(8)]
    barrier = threading.Barrier(len(results))

    def mint(out: list[str]) -> None:
        barrier.wait()
        out.extend(uuid4_id() for _ in range(per_thread))

    threads = [threading.Thread(target=mint, args=(out,)) for out in results]
    # A tiny switch interval makes threads interleave inside the refill.
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old_interval)
    every_id = [text for out in results for text in out]
    assert all(len(out) == per_thread for out in results)
    assert len(set(every_id)) == len(every_id)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_mint_its_parents_next_ids() -> None:
    identity._forget_pools()
    uuid4_id()  # the pool now holds 255 unused chunks the child would inherit
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report the ids it mints, then leave without cleanup
        os.close(read_end)
        os.write(write_end, "\n".join(uuid4_id() for _ in range(100)).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        child_ids = set(pipe.read().decode().split("\n"))
    os.waitpid(pid, 0)
    parent_ids = {uuid4_id() for _ in range(100)}
    assert len(child_ids) == 100
    assert not child_ids & parent_ids


def test_all_zero_trace_or_span_ids_are_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    count = identity._BATCH
    entropy = bytearray(os.urandom(24 * count))
    entropy[0:16] = bytes(16)  # the first trace id: all zeros
    entropy[16 * count + 8 : 16 * count + 16] = bytes(8)  # the second span id: all zeros
    monkeypatch.setattr(identity.os, "urandom", lambda size: bytes(entropy[:size]))
    identity._forget_pools()
    pairs = [mint_trace_span_ids() for _ in range(count - 2)]
    expected = [
        (entropy[16 * i : 16 * i + 16].hex(), entropy[16 * count + 8 * i :][:8].hex())
        for i in range(2, count)
    ]
    assert pairs == expected
    identity._forget_pools()


def test_uuid7_ids_of_one_process_sort_in_the_order_they_were_made() -> None:
    # Thousands per millisecond: random low bits alone put half of each pair out of order.
    ids = [uuid7_id() for _ in range(20_000)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for text in ids[::997]:
        parsed = uuid.UUID(text)
        assert parsed.version == 7 and parsed.variant == uuid.RFC_4122


def test_the_uuid7_after_a_full_counter_carries_into_the_clock_bits_only() -> None:
    millis = 0x0190_0000_0000
    full = millis << 80 | 0x7 << 76 | 0x0FFF << 64 | 0b10 << 62 | identity._RAND_B
    nxt = uuid.UUID(int=identity._after(full))
    assert nxt.version == 7 and nxt.variant == uuid.RFC_4122
    assert nxt.int >> 80 == millis + 1 and nxt.int > full
    half = millis << 80 | 0x7 << 76 | 0x0123 << 64 | 0b10 << 62 | identity._RAND_B
    assert identity._after(half) == millis << 80 | 0x7 << 76 | 0x0124 << 64 | 0b10 << 62


def test_shown_text_caps_and_escapes_what_is_not_printable() -> None:
    assert identity.shown_text("/v1/chat/completions", 64) == "/v1/chat/completions"
    assert identity.shown_text("/v1/\n\x01\x1b[31m\u202e", 64) == "/v1/\\n\\x01\\x1b[31m\\u202e"
    assert identity.shown_text("/" + "p" * 99, 10) == "/ppppppppp...[100 chars]"
    assert identity.shown_text("caf\u00e9", 8) == "caf\u00e9"  # printable non-ASCII stays
