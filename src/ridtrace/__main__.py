"""``python -m ridtrace`` runs the CLI (no console script on PATH needed)."""

from ridtrace.cli.main import run

run()
