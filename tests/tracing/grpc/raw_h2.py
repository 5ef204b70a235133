"""A minimal HTTP/2 gRPC client that sends metadata bytes no real gRPC client would.

grpcio refuses control characters and non-ASCII in metadata on the client side, so
the only way to see what the server does with them is to put them on the wire
ourselves: one unary call, HPACK literals without Huffman coding or indexing.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x7
_END_STREAM, _END_HEADERS, _ACK = 0x1, 0x4, 0x1
_CANCEL = 0x8  # RST_STREAM error code


def _integer(value: int, prefix_bits: int) -> bytes:
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([value])
    out = [limit]
    value -= limit
    while value >= 128:
        out.append((value % 128) + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def _literal(name: bytes, value: bytes) -> bytes:
    # 0x00: literal header field without indexing, new name; lengths without Huffman.
    return b"\x00" + _integer(len(name), 7) + name + _integer(len(value), 7) + value


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream)
        + payload
    )


class RawReply:
    """What came back on stream 1: DATA payload and whether the stream ended cleanly."""

    def __init__(self) -> None:
        self.data = b""
        self.ended = False
        self.reset = False
        self.goaway = False


async def raw_unary_call(
    host: str, port: int, path: str, message: bytes, metadata: list[tuple[bytes, bytes]],
    *, cancel_when: Callable[[], Awaitable[None]] | None = None,
) -> RawReply:
    """Send one unary gRPC call with ``metadata`` verbatim; read until stream 1 ends.

    ``cancel_when``: once it returns, the call is reset with ``CANCEL``, as grpcio's
    client does when the caller cancels or its deadline passes.
    """
    reader, writer = await asyncio.open_connection(host, port)
    block = b"".join(
        _literal(name, value)
        for name, value in [
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", path.encode()),
            (b":authority", f"{host}:{port}".encode()),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            *metadata,
        ]
    )
    body = b"\x00" + struct.pack(">I", len(message)) + message
    writer.write(
        _PREFACE
        + _frame(_SETTINGS, 0, 0, b"")
        + _frame(_HEADERS, _END_HEADERS, 1, block)
        + _frame(_DATA, _END_STREAM, 1, body)
    )
    await writer.drain()
    if cancel_when is not None:
        await cancel_when()
        writer.write(_frame(_RST_STREAM, 0, 1, struct.pack(">I", _CANCEL)))
        await writer.drain()
        writer.close()
        cancelled = RawReply()
        cancelled.reset = True
        return cancelled
    reply = RawReply()
    try:
        while not (reply.ended or reply.reset or reply.goaway):
            header = await reader.readexactly(9)
            length = int.from_bytes(header[:3], "big")
            kind, flags = header[3], header[4]
            stream = int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
            payload = await reader.readexactly(length)
            if kind == _SETTINGS and not flags & _ACK:
                writer.write(_frame(_SETTINGS, _ACK, 0, b""))
            elif kind == _GOAWAY:
                reply.goaway = True
            elif stream == 1 and kind == _RST_STREAM:
                reply.reset = True
            elif stream == 1 and kind == _DATA:
                reply.data += payload
                reply.ended = bool(flags & _END_STREAM)
            elif stream == 1 and kind == _HEADERS:
                reply.ended = bool(flags & _END_STREAM)
    except asyncio.IncompleteReadError:
        pass
    finally:
        writer.close()
    return reply


def grpc_message(data: bytes) -> bytes:
    """The first length-prefixed gRPC message in a DATA payload."""
    if len(data) < 5:
        return b""
    (length,) = struct.unpack(">I", data[1:5])
    return data[5 : 5 + length]
