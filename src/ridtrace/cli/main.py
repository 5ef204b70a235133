"""Entry point of the ``ridtrace`` command."""

import click


@click.group()
def main() -> None:
    """ridtrace: request identity, tracing and log forensics."""


from ridtrace.cli.serve import serve  # noqa: E402  (frontend plugin commands)

main.add_command(serve)
