"""A stop signal while the follower is still loading its modules."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.forensics.helpers import rt_request

# Runs the CLI with a Ctrl-C delivered right after the pandas import started on its
# thread, while the main thread goes on importing the follower: the moment a user who
# started the follower in the wrong terminal presses Ctrl-C. The import lock is left
# held first, as an earlier Ctrl-C swallowed inside importlib's lock callback leaves it
# ("Exception ignored in: <function _get_module_lock.<locals>.cb>").
_CTRL_C_WHILE_LOADING = textwrap.dedent("""
    import _imp, os, signal, sys
    import ridtrace.cli.background_import as background
    from ridtrace.cli.main import run

    started = background.import_beside

    def import_then_ctrl_c(module):
        thread = started(module)
        os.kill(os.getpid(), signal.SIGINT)
        return thread

    background.import_beside = import_then_ctrl_c
    _imp.acquire_lock()
    sys.argv[0] = "ridtrace"
    run()
""")


def test_a_ctrl_c_while_the_follower_loads_prints_the_summary(tmp_path: Path) -> None:
    # Ctrl-C raised KeyboardInterrupt mid-import: exit 130 and no summary, where the docs
    # promise one for --follow; or, swallowed by importlib with its lock held, a follower
    # that waited for its import thread for good, deaf to Ctrl-C and SIGTERM alike.
    lines = [*rt_request("a1", "dup", 0.0, 2.0), *rt_request("b2", "dup", 1.0, 3.0)]
    lines.sort(key=lambda line: json.loads(line)["time"])
    (tmp_path / "frontend.jsonl").write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_WHILE_LOADING, "analyze", str(tmp_path),
         "--follow", "--from-start", "--format", "json"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "interrupted" not in done.stderr
    finding = json.loads(done.stdout.splitlines()[0])
    assert finding["kind"] == "duplicate_in_flight"
    summary = json.loads(done.stderr.splitlines()[-1])
    assert summary["duplicate_in_flight"] == 1 and summary["requests"] == 2
