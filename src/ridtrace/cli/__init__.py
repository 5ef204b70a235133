"""ridtrace.cli."""
