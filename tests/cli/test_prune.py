"""``neograph-ext prune``: a dry run by default, ``--apply``, its options, its errors."""

from __future__ import annotations

import json

import neograph_ext as ne
from tests.cli.support import Database, cli, one_error_line, postgres_database
from tests.graphs.pruning import LAST, ids, written

GRAPH = "tests.graphs.pruning:LAST"


def test_a_dry_run_shows_what_would_go_and_writes_nothing(db: Database) -> None:
    written(db.saver)
    rows = db.rows()
    expected = ne.prune(ne.compile(LAST, checkpointer=db.saver))

    shown = cli("prune", GRAPH, "--db", db.url)

    assert shown.exit_code == 0, shown.output
    assert "would prune (dry run)" in shown.stdout
    assert "skipped: waiting" in shown.stdout
    assert (
        f"would remove {expected.checkpoints} checkpoints, {expected.writes} writes and "
        f"{len(expected.descriptions)} descriptions: {expected.bytes} bytes"
    ) in shown.stdout
    assert "--apply" in shown.stdout
    assert db.rows() == rows


def test_json_then_apply_removes_exactly_what_the_json_named(db: Database) -> None:
    written(db.saver)
    before = ids(db.saver)
    dry = json.loads(cli("prune", GRAPH, "--db", db.url, "--json").stdout)
    named = {t["thread_id"]: set(t["checkpoints"]) for t in dry["threads"]}
    assert dry["applied"] is False and dry["total"]["checkpoints"] > 0
    assert dry["total"]["bytes"] > 0

    applied = cli("prune", GRAPH, "--db", db.url, "--apply", "--yes", "--json")

    assert applied.exit_code == 0, applied.output
    report = json.loads(applied.stdout)
    assert report["applied"] is True and report["total"] == dry["total"]
    after = ids(db.saver)
    for thread, checkpoints in named.items():
        assert before[thread] - after[thread] == checkpoints, thread
    gone = {d["thread_id"] for d in dry["descriptions"]}
    assert gone and set(before) - set(after) == gone
    again = json.loads(cli("prune", GRAPH, "--db", db.url, "--json").stdout)
    assert again["total"]["checkpoints"] == 0


def test_all_branches_and_keep_last_take_more(db: Database) -> None:
    written(db.saver)
    default = json.loads(cli("prune", GRAPH, "--db", db.url, "--json").stdout)
    more = json.loads(
        cli("prune", GRAPH, "--db", db.url, "--json", "--all-branches", "--keep-last", "1").stdout
    )
    users = {t["thread_id"]: t["checkpoints"] for t in more["threads"]}["user"]
    assert users and more["total"]["checkpoints"] > default["total"]["checkpoints"]


def test_vacuum_gives_the_space_back_to_the_file(lite: Database) -> None:
    written(lite.saver)
    applied = cli("prune", GRAPH, "--db", lite.url, "--apply", "--vacuum", "--yes", "--json")
    assert applied.exit_code == 0, applied.output
    before, after = json.loads(applied.stdout)["vacuumed"]
    assert after < before
    shown = cli("prune", GRAPH, "--db", lite.url, "--apply", "--vacuum", "--yes")
    assert "VACUUM:" in shown.stdout


def test_vacuum_without_apply_is_one_error_line(lite: Database) -> None:
    written(lite.saver)
    rows = lite.rows()
    line = one_error_line(cli("prune", GRAPH, "--db", lite.url, "--vacuum"))
    assert "needs apply" in line
    assert lite.rows() == rows


def test_keep_last_below_one_is_refused(lite: Database) -> None:
    refused = cli("prune", GRAPH, "--db", lite.url, "--keep-last", "0")
    assert refused.exit_code == 2
    assert "--keep-last" in refused.stderr


def test_vacuum_on_postgresql_is_one_error_line_before_anything_goes(pg_dsn: str) -> None:
    opened = postgres_database(pg_dsn)
    pg = next(opened)
    try:
        written(pg.saver)
        rows = pg.rows()
        line = one_error_line(cli("prune", GRAPH, "--db", pg.url, "--apply", "--vacuum", "--yes"))
        assert "vacuum is for SQLite" in line and "autovacuum" in line
        assert pg.rows() == rows
    finally:
        opened.close()
