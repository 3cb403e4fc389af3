"""The command line refuses a stamp description's thread id, in one line."""

from __future__ import annotations

import pytest

from neograph_ext.storage._stamp_store import THREAD_PREFIX
from tests.cli import cli_graphs
from tests.cli.support import V2, Database, cli, one_error_line


@pytest.mark.parametrize("command", ["plan", "history", "accept", "check"])
def test_the_command_line_refuses_a_reserved_thread_id(db: Database, command: str) -> None:
    db.run(cli_graphs.v1, "t1")
    rows = db.rows()
    graph = [V2] if command != "history" else []
    line = one_error_line(cli(command, *graph, "--db", db.url, "--thread", THREAD_PREFIX + "x"))
    assert "is reserved" in line
    assert db.rows() == rows, "the refused command wrote"
