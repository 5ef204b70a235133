"""How much of a chunked request body may be framing rather than body.

A chunk's size line may carry extensions (``1;name=value``) and leading zeros without
end, and none of it is body: it went by the app's body cap and by the header guard's cap
on unread body bytes, so one client pushed hundreds of MB/s into the server until the
body deadline (Node's CVE-2024-22019).
"""

from __future__ import annotations

__all__ = ["CHUNK_FRAMING_PER_BODY_BYTE", "framing_refusal"]

CHUNK_FRAMING_PER_BODY_BYTE = 16
"""Bytes of chunk-size lines a chunked body may spend per byte of body, beyond room for
its trailers: a body sent one byte a chunk spends 5 (``1\r\nX\r\n``), 9 with an
extension (``1;a=b``)."""


def framing_refusal(received: int, body_bytes: int, max_header_bytes: int) -> str | None:
    """Why a chunked body whose read so far took ``received`` bytes for ``body_bytes``
    bytes of body is refused, or ``None`` while its framing is within bounds: room for
    trailers (twice the header cap) and :data:`CHUNK_FRAMING_PER_BODY_BYTE` per byte."""
    framing = received - body_bytes
    if framing <= 2 * max_header_bytes + CHUNK_FRAMING_PER_BODY_BYTE * body_bytes:
        return None
    return f"chunk sizes and extensions took {framing} bytes for {body_bytes} bytes of body"
