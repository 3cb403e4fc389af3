"""The one confirmation rule of the commands that write: ``accept`` and ``prune --apply``.

Off a terminal (typer's runner: stdin is no terminal) each refuses without ``--yes``
and writes nothing, writes with it, and says so in its ``--help``; on a terminal (a
pseudo-terminal) ``prune --apply`` says what it would delete and asks.
"""

from __future__ import annotations

import pytest

from neograph_ext.cli._confirm import ASKS
from tests.cli import cli_graphs
from tests.cli.support import V2, Database, answered, cli, one_error_line
from tests.graphs.pruning import written

PRUNE = "tests.graphs.pruning:LAST"


def _accept(db: Database) -> list[str]:
    db.run(cli_graphs.v1, "t1")
    return ["accept", V2, "--db", db.url, "--thread", "t1"]


def _prune(db: Database) -> list[str]:
    written(db.saver)
    return ["prune", PRUNE, "--db", db.url, "--apply"]


WRITERS = [pytest.param(_accept, id="accept"), pytest.param(_prune, id="prune")]


@pytest.mark.parametrize("command", WRITERS)
def test_off_a_terminal_it_refuses_without_yes_and_writes_with_it(
    db: Database, command: object
) -> None:
    args = command(db)  # type: ignore[operator]
    rows = db.rows()
    line = one_error_line(cli(*args))
    assert "stdin is not a terminal to ask on: pass --yes to write" in line
    assert db.rows() == rows
    assert cli(*args, "--yes").exit_code == 0
    assert db.rows() != rows


@pytest.mark.parametrize("name", ["accept", "prune"])
def test_the_help_of_each_writing_command_states_the_rule(name: str) -> None:
    shown = cli(name, "--help")
    flat = " ".join(shown.stdout.replace("│", " ").split())
    assert ASKS in flat and "--yes -y" in flat and "Write without asking" in flat


@pytest.mark.slow
def test_prune_on_a_terminal_says_what_it_would_delete_and_asks(lite: Database) -> None:
    args = _prune(lite)
    rows = lite.rows()
    done = answered("n", *args)
    assert done.returncode == 1, done.stderr
    assert "would remove" in done.stderr and "Write it? [y/N]" in done.stderr
    assert "declined: nothing written" in done.stderr and lite.rows() == rows
