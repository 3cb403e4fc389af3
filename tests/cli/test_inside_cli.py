"""The command line on threads waiting inside a subgraph: ``plan``'s table names the fork
inside as ``plan --json`` and ``str(plan)`` do, and ``check`` reads a class only a graph
a node's code calls declares as itself, with no note that GRAPH does not declare it."""

from __future__ import annotations

import json

from tests.cli import cli_graphs
from tests.cli.support import Database, cli

INSIDE_V2 = "tests.cli.cli_graphs:inside_v2"


def test_plan_shows_the_fork_inside_a_waiting_subgraph(db: Database) -> None:
    db.run(cli_graphs.inside_v1, "t1")
    expected = db.plan(cli_graphs.inside_v2, "t1")
    (inside,) = expected.inside

    result = cli("plan", INSIDE_V2, "--db", db.url, "--thread", "t1", env={"COLUMNS": "400"})

    assert result.exit_code == 0, result.output
    out = result.stdout
    # The parent is resumed from its head, not forked: the table says so, as str(plan).
    assert (
        f"resume from  step {expected.step}, checkpoint {expected.checkpoint_id}, not forked" in out
    )
    assert "rewind to" not in out
    assert f"subgraph     {inside.describe()}" in out
    assert inside.describe() in str(expected)
    got = json.loads(cli("plan", INSIDE_V2, "--db", db.url, "--thread", "t1", "--json").stdout)
    assert [i["checkpoint_id"] for i in got["inside"]] == [inside.checkpoint_id]


def test_check_reads_a_class_only_a_called_graph_declares_as_itself(lite: Database) -> None:
    lite.run(cli_graphs.calling_v1, "t1")
    args = ["check", "tests.cli.cli_graphs:calling_v2", "--db", lite.url]

    shown = cli(*args)
    got = json.loads(cli(*args, "--json").stdout)

    assert shown.exit_code == 0, shown.output
    assert "does not declare" not in shown.stdout
    assert got["declined"] == []
