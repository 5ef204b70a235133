"""`export jaeger` keeps apart the processes that share a service name: Dynamo's workers
all log as `dynamo-worker` (and scaled-out ridtrace frontends all as `frontend`), so one
process per service name made every worker the same process in Jaeger, and which worker
served a request — what an incident asks — was lost, while `ridtrace trace` tells them
apart by file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ridtrace.cli.main import main
from ridtrace.testing.dynamo import DynamoSpec, write_dynamo_logs


def test_each_worker_file_is_its_own_jaeger_process(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_dynamo_logs(logs, DynamoSpec(requests=12, workers=2, duplicates=0, cancelled=0,
                                       deprecated_every=0, bad_lines=0))
    target = tmp_path / "traces.json"
    # Each file opens with a plain-text banner, as Dynamo's stdout does: a bad line.
    result = CliRunner().invoke(main, ["export", "jaeger", str(logs), "-o", str(target),
                                       "--allow-incomplete"])
    assert result.exit_code == 0, result.stderr
    worker_files = set()
    for trace in json.loads(target.read_text())["data"]:
        for span in trace["spans"]:
            process = trace["processes"][span["processID"]]
            tags = {t["key"]: t["value"] for t in process["tags"]}
            assert all(t["type"] == "string" for t in process["tags"])
            side = {t["key"]: t["value"] for t in span["tags"]}["side"]
            expected = "worker-" if side == "worker" else "frontend"
            assert Path(tags["log.file.path"]).name.startswith(expected)
            if side == "worker":
                assert process["serviceName"] == "dynamo-worker"
                worker_files.add(tags["log.file.path"])
    assert worker_files == {str(logs / "worker-0.jsonl"), str(logs / "worker-1.jsonl")}
