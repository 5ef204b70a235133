"""Entry point of the ``ridtrace`` command."""

import click


@click.group()
def main() -> None:
    """ridtrace: request identity, tracing and log forensics."""


from ridtrace.cli.serve import serve  # noqa: E402  (frontend plugin commands)

main.add_command(serve)


# Forensics commands (issue 4); they import pandas lazily, inside each command.
from ridtrace.cli.analyze import analyze  # noqa: E402
from ridtrace.cli.forensics_commands import audit, export, trace  # noqa: E402

main.add_command(analyze)
main.add_command(audit)
main.add_command(trace)
main.add_command(export)

# The main job (issue 5).
from ridtrace.cli.demo import demo  # noqa: E402

main.add_command(demo)
