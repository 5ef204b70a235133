"""Minting server-side ids and vetting client-supplied ones."""

from __future__ import annotations

import binascii
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from ridtrace.tracing import metrics

__all__ = [
    "mint_span_id",
    "mint_trace_span_ids",
    "shown_text",
    "uuid4_id",
    "uuid7_id",
    "validate_client_id",
]

DEFAULT_MAX_CLIENT_ID_LENGTH = 128

# Ids are made from OS entropy in batches of 256 and handed out one per call. One
# getrandom(2) per id was a visible share of the id-only path's time, and formatting
# 256 ids in one loop costs each id less than formatting it alone. The bytes are the
# same CSPRNG output os.urandom gives. No lock: deque.popleft() and deque.extend(list)
# are atomic, so two threads never get the same id, and two threads refilling at once
# only add more fresh ones.
_BATCH = 256
_T = TypeVar("_T")


def _refill(pool: deque[_T], make: Callable[[int], list[_T]]) -> _T:
    batch = make(_BATCH)
    pool.extend(batch[1:])
    return batch[0]


def _uuid4_batch(count: int) -> list[str]:
    block = bytearray(os.urandom(16 * count))
    block[6::16] = block[6::16].translate(_VERSION_4)  # byte 6: version nibble 4
    block[8::16] = block[8::16].translate(_RFC_4122_VARIANT)  # byte 8: variant bits 10
    digits = binascii.hexlify(block)
    # Lay all ids out as text at once: one strided copy per hex digit puts that digit
    # of every id in its column (8-4-4-4-12, then a space), all in C. Half the cost of
    # splitting the hex into groups and joining each id from them.
    text = bytearray(b"-" * (_UUID_TEXT_STRIDE * count))
    for digit, column in enumerate(_UUID_DIGIT_COLUMNS):
        text[column::_UUID_TEXT_STRIDE] = digits[digit::32]
    text[_UUID_TEXT_STRIDE - 1 :: _UUID_TEXT_STRIDE] = b" " * count
    return text.decode("ascii").split()


_VERSION_4 = bytes((byte & 0x0F) | 0x40 for byte in range(256))
_RFC_4122_VARIANT = bytes((byte & 0x3F) | 0x80 for byte in range(256))
_UUID_TEXT_STRIDE = 37  # 36 characters and a separating space
_UUID_DIGIT_COLUMNS = [column for column in range(36) if column not in (8, 13, 18, 23)]


def _chunk_batch(count: int) -> list[bytes]:
    block = os.urandom(16 * count)
    return [block[i : i + 16] for i in range(0, len(block), 16)]


def _trace_span_batch(count: int) -> list[tuple[str, str]]:
    entropy = os.urandom(24 * count)
    # hex() puts a separator between every 16 (then 8) bytes: split() is then the ids.
    trace_ids = entropy[: 16 * count].hex(" ", 16).split()
    span_ids = entropy[16 * count :].hex(" ", 8).split()
    # All-zero ids are invalid in W3C trace context (odds 2**-64; the SDK checks too).
    if _ZERO_TRACE_ID in trace_ids or _ZERO_SPAN_ID in span_ids:
        return [
            pair for pair in zip(trace_ids, span_ids, strict=True)
            if pair[0] != _ZERO_TRACE_ID and pair[1] != _ZERO_SPAN_ID
        ]
    return list(zip(trace_ids, span_ids, strict=True))


_ZERO_TRACE_ID, _ZERO_SPAN_ID = "0" * 32, "0" * 16
_uuid4_ids: deque[str] = deque()
_entropy_chunks: deque[bytes] = deque()
_trace_span_ids: deque[tuple[str, str]] = deque()
_POOLS: tuple[deque[Any], ...] = (_uuid4_ids, _entropy_chunks, _trace_span_ids)


def _forget_pools() -> None:
    for pool in _POOLS:
        pool.clear()


# A forked child inherits the pools; without this, parent and child would hand out the
# same ids from them.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def uuid4_id() -> str:
    """A random UUID4 string: the default ``request_id`` generator.

    Formatted straight from the OS entropy instead of ``str(uuid.uuid4())``: building
    the ``UUID`` object was the largest single cost of the middleware's id-only path.
    Same bits: 122 random, version 4, RFC 4122 variant.
    """
    try:
        return _uuid4_ids.popleft()
    except IndexError:
        return _refill(_uuid4_ids, _uuid4_batch)


_RAND_B = 0x3FFF_FFFF_FFFF_FFFF  # the 62 random bits after the variant
_RAND_A = 0x0FFF << 64  # the 12 bits after the version
_last_uuid7 = [0]
_uuid7_lock = threading.Lock()


def uuid7_id() -> str:
    """A time-ordered UUIDv7 string (RFC 9562), sortable by creation time.

    ``rand_a`` holds the sub-millisecond part of the clock (RFC 9562 §6.2, method 3),
    and an id made in the same 244 ns slice as the one before, or after the clock
    stepped back, is that id plus one (method 1): ids of one process sort in the order
    they were made, which random low bits alone do not give within a millisecond.
    """
    millis, sub = divmod(time.time_ns(), 1_000_000)
    try:
        chunk = _entropy_chunks.popleft()
    except IndexError:
        chunk = _refill(_entropy_chunks, _chunk_batch)
    rand = int.from_bytes(chunk[:8], "big")
    value = (millis & 0xFFFF_FFFF_FFFF) << 80
    value |= 0x7 << 76  # version
    value |= (sub * 4096 // 1_000_000) << 64  # rand_a: the fraction of the millisecond
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand & _RAND_B
    with _uuid7_lock:
        if value <= _last_uuid7[0]:
            value = _after(_last_uuid7[0])
        _last_uuid7[0] = value
    return str(uuid.UUID(int=value))


def _after(last: int) -> int:
    """The next UUIDv7 after `last`: its random bits plus one, carried into rand_a and
    then the millisecond, never into the version or variant bits."""
    if last & _RAND_B != _RAND_B:
        return last + 1
    if last & _RAND_A != _RAND_A:
        return (last & ~_RAND_B) + (1 << 64)
    return ((last >> 80) + 1) << 80 | 0x7 << 76 | 0b10 << 62


def mint_trace_span_ids() -> tuple[str, str]:
    """A fresh (trace id, span id): 32 and 16 lower-case hex digits, never all zeros.

    Used when no OpenTelemetry SDK span provides them, so every log line still has a
    trace id and a span id that is unique per request.
    """
    try:
        return _trace_span_ids.popleft()
    except IndexError:
        return _refill(_trace_span_ids, _trace_span_batch)


def mint_span_id() -> str:
    """16 hex digits: a per-request key that stays unique even when request ids collide."""
    return mint_trace_span_ids()[1]


def validate_client_id(
    raw: bytes | str, max_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH
) -> str | None:
    """Return ``raw`` as text when it is a safe correlation id, else ``None``.

    Safe means: 1 to ``max_length`` characters of printable ASCII (space included), so
    the value can go into a log line or a response header without CR/LF or other
    control characters and cannot overflow either.
    """
    if not raw or len(raw) > max_length or not raw.isascii():
        return None
    text = raw.decode("ascii") if isinstance(raw, bytes) else raw
    return text if text.isprintable() else None


def without_blanks(raw: str | bytes) -> str | bytes:
    """A client id sent outside a header without the spaces and tabs around it, as a
    header's value is read: "  id " is the id "id", and one of only blanks is empty."""
    return raw.strip(b" \t") if isinstance(raw, bytes) else raw.strip(" \t")


def adopted_client_id(raw: str | bytes, max_length: int) -> str | None:
    """A client id sent outside a header (a gRPC body field, a worker's envelope) read as
    a header's is (`inbound.read_inbound`): the blanks around it are not part of it, and
    a refused one is counted by its reason. The id, or None when refused."""
    value = without_blanks(raw)
    valid = validate_client_id(value, max_length)
    if valid is None:
        metrics.client_id_rejected(metrics.rejection_reason(value, max_length))
    return valid


def shown_text(text: str, max_length: int) -> str:
    """``text`` as a log line or span attribute may carry it: capped, nothing hidden.

    For client-controlled strings that are kept even when they are not clean ids (a
    request's percent-decoded path): the first ``max_length`` characters, each
    character that is not printable (control characters, CR/LF, bidirectional
    controls) written as its escape (``\\n``, ``\\x01``, ``\\u202e``), and a note of
    the full length when it was cut. Clean text is returned as it is.
    """
    if len(text) <= max_length and text.isprintable():
        return text
    head = text[:max_length]
    if not head.isprintable():
        head = "".join(
            c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in head
        )
    if len(text) > max_length:
        head += f"...[{len(text)} chars]"
    return head
