"""Docker's ``local`` log driver: a container's lines in a binary file of protobuf
entries (``/var/lib/docker/containers/ID/local-logs/container.log``).

Each entry is moby's ``LogEntry`` (source, time, line, partial) framed by its size, a
big-endian 32-bit number, before and after it. Split at newlines such a file was a few
"not JSON" and "binary data" bad lines that named neither the driver nor a way out, the
lines inside it never read. It is known by its first entry's head, and listed unreadable
with the way to get its lines: ``docker logs`` reads every driver's files.
"""

from __future__ import annotations

import re

__all__ = ["DOCKER_LOCAL", "DOCKER_LOCAL_BYTES", "is_docker_local"]

# The size of the first entry, then its first field: `source` (field 1, a string) of 6
# bytes, stdout or stderr. A JSON or text log never opens with a NUL; a crash's hole of
# NULs is not followed by this.
_FIRST_ENTRY = re.compile(rb"\x00[\x00-\x0f][\x00-\xff]{2}\x0a\x06(?:stdout|stderr)")
DOCKER_LOCAL_BYTES = 12
DOCKER_LOCAL = (
    "Docker's local log driver's binary file (protobuf entries), not JSON lines: read "
    "the container's lines with docker logs CONTAINER > app.jsonl (or run it with "
    "--log-driver json-file) and analyze that"
)


def is_docker_local(head: bytes) -> bool:
    """Whether a file's first bytes are the first entry of Docker's local log driver."""
    return _FIRST_ENTRY.match(head) is not None
