"""What `ridtrace trace` says when no request matches its ID.

`ridtrace trace LOGDIR ID` (the arguments swapped, as `analyze PATH` and `grep ID FILE`
habits suggest) read the id as the logs and the log folder as the id: when ID was an
existing path it ended "no request with ... 'LOGDIR'", exit 1, and otherwise "no such
file or directory: ID", exit 2, with no word of why. A path given as ID is named, with
the order the command wants.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ridtrace.cli.output import InputError
from ridtrace.forensics.printable import cut_at_shown, visible


def _is_a_path(ident: str) -> bool:
    try:
        return Path(ident).exists()
    except (OSError, ValueError):  # too long a name, a NUL byte: no path
        return False


def _shown(ident: str) -> str:
    """`ident` quoted, cut as the text views cut a value (a pasted log of 120 KB was
    said whole on stderr), spelt as the header of a match spells it: Python's quoted
    form doubled every backslash (two for the one typed)."""
    shown, more = cut_at_shown(ident)
    quoted = f"'{visible(shown)}'"
    return f"{quoted}… ({more} more characters)" if more else quoted


def _order(ident: str) -> str:
    return (f"; {ident!r} is a file or folder: the ID comes first, ridtrace trace ID PATH..."
            if _is_a_path(ident) else "")


@contextmanager
def id_first(ident: str) -> Iterator[None]:
    """Reading trace's PATHs: an input error (the id given where a PATH goes is no file)
    says the ID comes first when `ident` names a path."""
    try:
        yield
    except InputError as exc:
        order = _order(ident)
        if not order:
            raise
        raise InputError(exc.format_message() + order) from exc


def no_match_message(ident: str, *, read_whole: bool) -> str:
    """The error for no request matching `ident` (`read_whole`: all input was read)."""
    message = f"no request with request_id, x_request_id, trace_id or span_id {_shown(ident)}"
    if not read_whole:
        message += " in the input that could be read"
    return message + _order(ident)
