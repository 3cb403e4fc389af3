"""The nodes a plan re-runs, in the order they run, wherever the plan is read: the
``ResumePlan``, ``plan --json``, the text panel, the Mermaid labels. The graph runs
``z -> y -> c -> a``, so alphabetical order is the wrong one."""

from __future__ import annotations

import json
import pickle

from tests.cli import cli_graphs
from tests.cli.support import Database, cli

GRAPH = "tests.cli.cli_graphs:backwards_v2"


def _planned(db: Database) -> None:
    db.run(cli_graphs.pipeline(cli_graphs.ReviewV1, names="zyca"), "t1")


def test_every_reading_of_the_plan_lists_the_re_runs_in_execution_order(db: Database) -> None:
    _planned(db)
    plan = db.plan(cli_graphs.backwards_v2, "t1")
    assert list(plan.rerun) == ["c", "a"] and list(plan.kept) == ["z", "y"]

    args = ["plan", GRAPH, "--db", db.url, "--thread", "t1"]
    got = json.loads(cli(*args, "--json").stdout)
    assert got["rerun"] == ["c", "a"] and got["kept"] == ["z", "y"]
    assert "re-runs      c, a" in cli(*args).stdout
    drawn = cli(*args, "--mermaid").stdout
    assert "c<hr/><small><em>resume = changed, re-runs, 1 of 2</em></small>" in drawn
    assert "a<hr/><small><em>resume = re-runs, 2 of 2</em></small>" in drawn


def test_the_re_runs_keep_set_semantics(db: Database) -> None:
    _planned(db)
    plan = db.plan(cli_graphs.backwards_v2, "t1")
    assert plan.rerun == {"a", "c"} and "a" in plan.rerun and "z" not in plan.rerun
    assert plan.rerun | plan.kept == frozenset("zyca") and plan.rerun - {"c"} == {"a"}
    assert isinstance(plan.rerun, frozenset) and hash(plan.rerun) == hash(frozenset("ac"))
    again = pickle.loads(pickle.dumps(plan))
    assert again == plan and list(again.rerun) == ["c", "a"]
