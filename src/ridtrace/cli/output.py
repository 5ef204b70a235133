"""Reports and exports written whole or not at all.

A report written straight to its path was left cut short when the write failed (a full
disk) or the command was stopped (Ctrl-C, SIGTERM, a CI timeout) half way through a
streamed Jaeger export: the next step of a pipeline then read a truncated document as
if it were the answer. Here the text goes to a temporary file beside the target, which
replaces the target only once it is complete.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["whole_file"]


@contextlib.contextmanager
def whole_file(path: Path) -> Iterator[TextIO]:
    """A text handle whose content becomes `path` when the block ends without error.

    Anything but a regular file (``/dev/stdout``, a named pipe, a device) is written in
    place: it cannot be replaced, and a reader may be waiting on it.
    """
    if path.is_symlink():  # replace what the link points to, not the link
        path = Path(os.path.realpath(path))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(path, "w", encoding="utf-8") as handle:
            yield handle
        return
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    # Created as `open` creates a file (0666 less the umask), not mkstemp's 0600.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        if mode is not None:  # replacing a report: it keeps the mode it had
            os.chmod(temporary, stat.S_IMODE(mode))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
