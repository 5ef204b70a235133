"""The files a follow's inputs name now: named files, globs, everything under named
directories, and the parts of a rotation beside a named log.

`InputFiles` is `live.watch.Watch`'s base, as `FileNotes` is: `Watch` holds the state
these methods read. A glob or a path that names nothing yet is waited for (`missing`),
never taken as found.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from ridtrace.forensics.live.file_notes import FileNotes
from ridtrace.forensics.live.parts import parts_of_named
from ridtrace.forensics.reading.globs import glob_matches
from ridtrace.forensics.reading.inputs import walk_tree

STDIN = Path("-")


class InputFiles(FileNotes):
    """The files the inputs of a `Watch` name, which holds these attributes."""

    inputs: Sequence[str]
    missing: set[str]
    appeared: set[str]

    def _candidates(self) -> Iterator[tuple[Path, str]]:
        """(path, how it was found: "named", "walked" or "copy") for every file the
        inputs name now; "copy": a part beside a named log, followed if it is a copy."""
        named: list[Path] = []
        for raw in self.inputs:
            if raw == "-":
                yield STDIN, "named"
                continue
            path = Path(raw)
            try:
                is_dir = path.is_dir()  # raises on Python 3.11 where it may not search
            except OSError as exc:  # not searchable, or a name too long for any file
                self._note_unreadable(raw, f"cannot read it: {exc.strerror}")
                continue
            if is_dir:
                yield from self._walked(path)
            elif path.exists():  # a file, or a pipe or device `discover` sets aside
                yield path, "named"
                if path.is_file():
                    named.append(path)
            elif any(ch in raw for ch in "*?["):
                # Directories matched are walked, as `analyze` walks them ('logs/*' over
                # pod directories followed none). A glob that matches nothing yet is waited
                # for as a missing path is: taken as found, a mistyped one ('*.jsnol') was
                # followed without a word and the summary said complete.
                unlisted: dict[str, str] = {}
                matched = list(map(Path, glob_matches(raw, unlisted)))
                for where, why in unlisted.items():  # as a walk notes them
                    self._note_unreadable(where, why)
                if not matched:
                    self.missing.add(raw)
                    continue
                for match in matched:
                    if match.is_dir():
                        yield from self._walked(match)
                    elif match.is_file():
                        yield match, "named"
                        named.append(match)
                    else:
                        # A pipe or a broken link: listed as a walk lists it (a link to
                        # a log, unreadable until its target appears), never opened.
                        yield match, "walked"
            else:
                self.missing.add(raw)
                continue
            self.missing.discard(raw)
            self.appeared.add(raw)
        yield from ((part, "copy") for part in parts_of_named(named))

    def _walked(self, path: Path) -> Iterator[tuple[Path, str]]:
        # As `ridtrace analyze` walks: linked directories too, each once.
        files, unlisted = walk_tree(path)
        now: set[str] = set()
        for entry in unlisted:
            # A directory removed between its listing and its own (a job's scratch
            # directory) holds nothing left to read: listed, the run was incomplete.
            if entry.path is not None and os.path.lexists(entry.path):
                now.add(entry.name)
                self._block(entry.name, entry.unreadable or "cannot list it")
        # A folder listed since: its files are walked and read from their first line,
        # so it is no longer unreadable (it stayed listed, and a whole read exited 3).
        inside = str(path).rstrip(os.sep) + os.sep
        for name in [d for d in self.unlisted_dirs - now
                     if d == str(path) or d.startswith(inside)]:
            self.unlisted_dirs.discard(name)
            self._unblock(name)
        self.unlisted_dirs |= now
        yield from ((file, "walked") for file in files)
