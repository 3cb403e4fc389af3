"""``show`` under the new code marks the values it would not take as declared: one that
no longer validates (``Brief.words`` is required now), one that reads back as plain data
(``Memo`` moved module), each with its reason, in text and in JSON."""

from __future__ import annotations

import json

from tests.cli import cli_graphs
from tests.cli.support import Database, cli

NEW, OLD = "tests.cli.cli_graphs:briefing_v2", "tests.cli.cli_graphs:briefing_v1"


def test_show_marks_each_stale_value_with_its_reason(db: Database) -> None:
    db.run(cli_graphs.briefing_v1, "t1")
    args = ["show", NEW, "--db", db.url, "--thread", "t1"]

    got = json.loads(cli(*args, "--json").stdout)
    shown = cli(*args).stdout

    assert got["values"]["brief"] == {"title": "draft"}
    assert got["stale"] == {
        "brief": "stored value of `brief` does not validate as declared now: words: Field required",
        "memo": "stored value of `memo` does not read back as `Memo`: got `dict`",
    }
    flat = " ".join(shown.split())
    assert "stale: stored value of `brief` does not validate as declared now: words" in flat
    assert "stale: stored value of `memo` does not read back as `Memo`: got `dict`" in flat


def test_show_under_the_code_that_wrote_the_values_marks_none(db: Database) -> None:
    db.run(cli_graphs.briefing_v1, "t1")
    args = ["show", OLD, "--db", db.url, "--thread", "t1"]
    assert json.loads(cli(*args, "--json").stdout)["stale"] == {}
    assert "stale" not in cli(*args).stdout
