"""Alias kept for the import path of earlier releases: use ``ridtrace.tracing.grpc``."""

from ridtrace.tracing.grpc.echo import copy_client_id, correlate_client_id, echo_client_id

__all__ = ["copy_client_id", "correlate_client_id", "echo_client_id"]
