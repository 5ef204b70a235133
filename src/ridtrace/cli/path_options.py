"""A path option that refuses an empty value."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["NonEmptyPath"]


class NonEmptyPath(click.Path):
    """click's path, but an empty one refused: pathlib reads ``""`` (``"$DIR"`` with
    the variable unset) as ``.``, the working directory, which a command then filled
    (``demo --out ""`` replaced ``./legacy/logs``) or tried to write as a file."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if value == "":
            self.fail("an empty file name (an unset variable?)" if self.file_okay else
                      "an empty path (an unset variable?); name `.` for this directory",
                      param, ctx)
        return super().convert(value, param, ctx)
