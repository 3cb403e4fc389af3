"""One confirmation rule for every command that writes to the database (``accept``,
``prune --apply``).

Rules:
- ``--yes`` (``-y``) writes without asking.
- On a terminal the command first says, on stderr, what it would write, and asks;
  declined, it writes nothing and exits 1 (``DECLINED``).
- Off a terminal (a pipe, CI, cron) it cannot ask, and it never waits for an answer:
  without ``--yes`` it refuses (exit 2) and writes nothing.
- Each such command's help ends with ``ASKS`` (its epilog), and its ``--yes`` is ``YesOpt``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Annotated

import typer

from neograph_ext.cli._boundary import CliError
from neograph_ext.cli._show import safe

__all__ = ["ASKS", "DECLINED", "YesOpt", "confirm"]

DECLINED = 1
"""The exit code when the question was answered no: nothing was written."""

ASKS = (
    "Writes to the database: on a terminal it asks first; off a terminal (a script, CI) "
    "it refuses unless --yes."
)
"""The epilog of the help of each command that writes."""

YesOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Write without asking (needed off a terminal).")
]


def confirm(writes: str, would: Callable[[], str], yes: bool, instead: str) -> None:
    """Return when the command may write: ``yes``, or answered yes on a terminal.

    Args:
        writes: What the command does, for the refusal: ``"accept writes to"``.
        would: What it would write, said before the question (read only then).
        yes: ``--yes`` was given.
        instead: How to see what it would write without writing: ``"--dry-run"``.

    Raises:
        CliError: stdin is not a terminal, and no ``--yes``.
        typer.Exit: ``DECLINED``, the question answered no.
    """
    if yes:
        return
    if not sys.stdin.isatty():
        raise CliError(
            f"{writes} the database and stdin is not a terminal to ask on: pass --yes to "
            f"write, or {instead} to see what it would write"
        )
    typer.echo(safe(would()), err=True)
    if not typer.confirm("Write it?", default=False, err=True):
        typer.echo("declined: nothing written", err=True)
        raise typer.Exit(DECLINED)
