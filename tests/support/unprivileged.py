"""A command prefix that runs a child without root's licence to ignore file modes."""

from __future__ import annotations

import os
import shutil

import pytest

_DROP = "-dac_override,-dac_read_search"


def unprivileged_prefix(denied: str) -> list[str]:
    """``setpriv`` arguments that drop the capabilities to read or write any file whatever
    its mode, so a child run as root obeys the modes as an operator's unprivileged run
    does; none when not root. Skips the calling module when root cannot drop them
    (`denied`: what the tests need refused, "a read" or "a write")."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip(f"root without setpriv cannot be denied {denied}", allow_module_level=True)
    return ["setpriv", f"--bounding-set={_DROP}", f"--inh-caps={_DROP}"]
