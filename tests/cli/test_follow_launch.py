"""`analyze --follow` starts from the end of what its inputs held when it was launched.

It looked at its inputs only once its modules were loaded and its reader made, a second
or more after the command began: logs a service created, and incidents it wrote, in
that second (`ridtrace analyze logs --follow & start-services`) were skipped as old,
and the run printed nothing and exited 0. A hook stands in for the service here: it
writes the logs right after the command took its inputs' sizes, before the first look.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ridtrace.forensics.live.launch import sizes_at_launch
from ridtrace.testing.synth import SynthSpec, write_logs

_WRITES_WHILE_LOADING = """
import shutil, sys
from pathlib import Path
import ridtrace.forensics.live.launch as launch

real = launch.sizes_at_launch
new, logs = Path(sys.argv[1]), Path(sys.argv[2])

def then_the_service_writes(inputs):
    sizes = real(inputs)
    for file in sorted(new.iterdir()):
        shutil.copyfile(file, logs / f"later-{file.name}")
    return sizes

launch.sizes_at_launch = then_the_service_writes
from ridtrace.cli.main import main
sys.argv = ["ridtrace", "analyze", str(logs), "--follow", "--fail-fast", "--format", "json",
            "--poll-interval", "0.1s"]
main()
"""


def test_logs_written_while_the_follower_loads_are_read(tmp_path: Path) -> None:
    logs, new = tmp_path / "logs", tmp_path / "new"
    logs.mkdir()
    old = write_logs(logs, SynthSpec(requests=200, seed=7))  # there before the launch
    later = write_logs(new, SynthSpec(requests=200, seed=11))
    done = subprocess.run([sys.executable, "-c", _WRITES_WHILE_LOADING, str(new), str(logs)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr  # --fail-fast: an error finding was printed
    printed = [json.loads(line) for line in done.stdout.splitlines()]
    errors = [f for f in printed if f["severity"] == "error"]
    assert errors, done.stdout
    later_spans = {span for _, span in later.expected}
    old_spans = {span for _, span in old.expected}
    assert all(f["span_id"] in later_spans - old_spans for f in errors), errors


def test_the_launch_sizes_name_each_file_an_input_may_follow(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    (logs / "pods" / "a").mkdir(parents=True)
    (logs / "pods" / "a" / "app.jsonl").write_bytes(b"x" * 10)
    (tmp_path / "named.jsonl").write_bytes(b"y" * 3)
    (tmp_path / "named.jsonl.1").write_bytes(b"z" * 5)  # a rotated part beside it
    (tmp_path / "g-1.log").write_bytes(b"")
    (logs / "loop").symlink_to(logs)  # a linked directory is walked once
    sizes = sizes_at_launch([str(logs), str(tmp_path / "named.jsonl"),
                             str(tmp_path / "g-*.log"), "-"])
    by_size = sorted(sizes.values())
    assert by_size == [0, 3, 5, 10]
