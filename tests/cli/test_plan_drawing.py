"""``plan --mermaid``: the plan drawn on GRAPH, as ``ResumePlan.draw_mermaid`` draws it."""

from __future__ import annotations

import neograph_ext
from tests.cli import cli_graphs
from tests.cli.cli_graphs import HOSTILE
from tests.cli.support import V2, Database, cli, one_error_line


def test_plan_mermaid_prints_the_drawing_with_kept_changed_and_re_run_nodes(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    graph = neograph_ext.compile(cli_graphs.v2, checkpointer=db.saver)
    expected = neograph_ext.plan(graph, {"configurable": {"thread_id": "t1"}}).draw_mermaid(graph)

    result = cli("plan", V2, "--db", db.url, "--thread", "t1", "--mermaid")

    assert result.exit_code == 0, result.output
    assert result.stdout == expected
    assert "\tclass a,b kept;\n" in result.stdout
    assert "\tclass d rerun;\n" in result.stdout and "\tclass c changed;\n" in result.stdout


def test_mermaid_and_json_together_are_refused(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    line = one_error_line(cli("plan", V2, "--db", db.url, "--thread", "t1", "--mermaid", "--json"))
    assert "--json and --mermaid" in line


def test_a_hostile_node_name_is_printed_escaped(lite: Database) -> None:
    lite.run(cli_graphs.hostile_v1, "t1")
    graph = "tests.cli.cli_graphs:hostile_v2"
    result = cli("plan", graph, "--db", lite.url, "--thread", "t1", "--mermaid")
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert HOSTILE not in result.stdout and "\\x1b]0;pwned\\x07" in result.stdout
