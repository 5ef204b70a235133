"""ridtrace.frontend_plugin."""
