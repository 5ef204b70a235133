"""A reader of a response whose app crashed mid-stream gets everything written before
the crash, under `ridtrace serve`'s protocol as under uvicorn's own: the connection is
closed gracefully. Only a stream the app let go of for not reading is reset; reset on
uvicorn's paused writes, which a client reading over a slow link has too, such a reader
got 33 KB of the 4 MiB written, then a reset."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support.servers import child_pythonpath, free_port, run_server


def test_a_reader_gets_all_that_was_written_before_a_crash(tmp_path: Path) -> None:
    port = free_port()
    app = str(Path(__file__).with_name("crash_mid_stream_app.py"))
    with (run_server([app, str(port)], port=port, workdir=tmp_path,
                     env={"PYTHONPATH": child_pythonpath()}),
          socket.create_connection(("127.0.0.1", port)) as sock):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)  # a slower link
        sock.settimeout(30)
        sock.sendall(b"GET /stream HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        got = bytearray()
        while chunk := sock.recv(65536):  # a reset raises: the test fails on it
            got += chunk
    body = bytes(got).split(b"\r\n\r\n", 1)[1]
    for letter in b"AB":  # every chunk whole, in the chunked framing
        assert body.count(bytes([letter])) == 16 << 20
