"""``check`` at fleet scale: the inventory by stamp, threads paged in batches, the
verified-head shortcut."""

from __future__ import annotations

import json

import pytest

import neograph_ext
from neograph_ext.cli._jobs import chunk_size
from neograph_ext.storage._storage import reader_for
from tests.cli import cli_graphs
from tests.cli.support import V2, Database, cli


def test_check_counts_threads_by_the_code_that_last_wrote_them(db: Database) -> None:
    db.run(cli_graphs.v1, "t1", "t2")
    db.run(cli_graphs.v2, "t3")

    table = cli("check", V2, "--db", db.url, "--inventory")
    report = json.loads(cli("check", V2, "--db", db.url, "--json").stdout)

    assert table.exit_code == 1, table.output
    assert "threads by the code that last wrote them" in table.stdout
    rows = {(row["current"], row["threads"], row["rewind"]) for row in report["inventory"]}
    assert rows == {(True, 1, 0), (False, 2, 2)}
    assert [p["thread_id"] for p in report["plans"]] == ["t1", "t2", "t3"]
    assert report["failing"] == ["t1", "t2"]


def test_threads_are_paged_and_batched(db: Database) -> None:
    names = [f"t{i}" for i in range(5)]
    db.run(cli_graphs.v1, *names)
    graph = neograph_ext.compile(cli_graphs.v2, checkpointer=db.saver)

    small = list(neograph_ext.check_threads(graph, batch=2))

    assert [c.plan.thread_id for c in small] == names  # pages of 2, 2 and 1
    assert small == list(neograph_ext.check_threads(graph))
    assert {c.plan.kind for c in small} == {neograph_ext.PlanKind.REWIND}


def test_a_head_verified_under_the_same_code_decides_alone(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    graph = neograph_ext.compile(cli_graphs.v1, checkpointer=db.saver)

    (checked,) = neograph_ext.check_threads(graph)
    full = neograph_ext.plan(graph, {"configurable": {"thread_id": "t1"}})

    # Same decision; ``plan`` walked the lineage (``kept`` complete), the check did not.
    assert checked.plan.kind is full.kind is neograph_ext.PlanKind.UP_TO_DATE
    assert full.kept and not checked.plan.kept
    assert checked.current and not checked.unfinished


def test_only_threads_their_heads_do_not_settle_have_their_lineage_read(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    db.run(cli_graphs.v1, "t1", "t2")
    db.run(cli_graphs.v2, "t3")
    reader = type(reader_for(db.saver))
    walked: list[str] = []
    read = reader.lineages

    def lineages(self: object, thread_ids: list[str]) -> object:
        walked.extend(thread_ids)
        return read(self, thread_ids)

    monkeypatch.setattr(reader, "lineages", lineages)
    graph = neograph_ext.compile(cli_graphs.v2, checkpointer=db.saver)

    checks = list(neograph_ext.check_threads(graph))

    # t3's head, verified under the code checked, settles it; t1 and t2 rewind.
    assert [c.plan.kind.value for c in checks] == ["rewind", "rewind", "up_to_date"]
    assert walked == ["t1", "t2"]


@pytest.mark.slow
def test_jobs_split_the_threads_over_processes_and_merge_their_checks_in_order(
    db: Database,
) -> None:
    names = [f"t{i}" for i in range(6)]
    db.run(cli_graphs.v1, *names[:4])
    db.run(cli_graphs.v2, *names[4:])
    assert chunk_size(len(names), 2) == 3  # two chunks: one for each process

    one = cli("check", V2, "--db", db.url, "--json", "--inventory", "--jobs", "1")
    two = cli("check", V2, "--db", db.url, "--json", "--inventory", "--jobs", "2")

    assert one.exit_code == two.exit_code == 1, two.output
    assert two.stdout == one.stdout
    assert json.loads(two.stdout)["failing"] == names[:4]


def test_jobs_below_one_are_refused(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")

    found = cli("check", V2, "--db", db.url, "--jobs", "0")

    assert found.exit_code == 2 and "--jobs must be at least 1, got 0" in found.output
