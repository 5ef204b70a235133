"""Minting server-side ids and vetting client-supplied ones."""

from __future__ import annotations

import os
import secrets
import time
import uuid
from collections import deque

__all__ = ["mint_span_id", "mint_trace_id", "uuid4_id", "uuid7_id", "validate_client_id"]

DEFAULT_MAX_CLIENT_ID_LENGTH = 128

# OS entropy fetched 4 KiB at a time and handed out 16 bytes per id. One getrandom(2)
# per id was a visible share of the id-only path's time: a syscall costs more than
# everything else minting does. The bytes are the same CSPRNG output os.urandom gives.
# No lock: deque.popleft() and deque.extend(list) are atomic, so two threads never
# get the same chunk, and two threads refilling at once only add more fresh chunks.
_ENTROPY_CHUNK = 16
_ENTROPY_BATCH = 256
_entropy_pool: deque[bytes] = deque()


def _entropy16() -> bytes:
    try:
        return _entropy_pool.popleft()
    except IndexError:
        size = _ENTROPY_CHUNK
        block = os.urandom(size * _ENTROPY_BATCH)
        _entropy_pool.extend([block[i : i + size] for i in range(size, len(block), size)])
        return block[:size]


# A forked child inherits the pool; without this, parent and child would mint the
# same ids from it.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_entropy_pool.clear)


def uuid4_id() -> str:
    """A random UUID4 string: the default ``request_id`` generator.

    Formatted straight from the OS entropy instead of ``str(uuid.uuid4())``: building
    the ``UUID`` object was the largest single cost of the middleware's id-only path.
    Same bits: 122 random, version 4, RFC 4122 variant.
    """
    h = _entropy16().hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_UUID4_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


# The variant nibble keeps its two low random bits and gets the RFC 4122 bits 10.
_UUID4_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


def uuid7_id() -> str:
    """A time-ordered UUIDv7 string (RFC 9562), sortable by creation time."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(_entropy16()[:10], "big")
    value = (millis & 0xFFFF_FFFF_FFFF) << 80
    value |= 0x7 << 76  # version
    value |= ((rand >> 68) & 0x0FFF) << 64  # rand_a: 12 random bits
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand & 0x3FFF_FFFF_FFFF_FFFF
    return str(uuid.UUID(int=value))


def mint_trace_id() -> str:
    """32 hex digits, used when no OpenTelemetry SDK provides a real trace id."""
    return secrets.token_hex(16)


def mint_span_id() -> str:
    """16 hex digits: a per-request key that stays unique even when request ids collide."""
    return secrets.token_hex(8)


def validate_client_id(
    raw: bytes | str, max_length: int = DEFAULT_MAX_CLIENT_ID_LENGTH
) -> str | None:
    """Return ``raw`` as text when it is a safe correlation id, else ``None``.

    Safe means: 1 to ``max_length`` characters of printable ASCII (space included), so
    the value can go into a log line or a response header without CR/LF or other
    control characters and cannot overflow either.
    """
    if not raw or len(raw) > max_length:
        return None
    if isinstance(raw, bytes):
        if not raw.isascii():
            return None
        text = raw.decode("ascii")
    else:
        if not raw.isascii():
            return None
        text = raw
    return text if text.isprintable() else None
