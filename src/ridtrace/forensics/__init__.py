"""ridtrace.forensics."""
