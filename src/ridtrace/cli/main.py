"""Entry point of the ``ridtrace`` command."""

import click


@click.group()
def main() -> None:
    """ridtrace: request identity, tracing and log forensics."""
