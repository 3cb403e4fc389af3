"""``upgrade``: a fleet of three releases brought forward as the next resumes would bring
it, counted with a fake model: after ``--apply`` resuming each thread runs exactly what
``check`` said, the carried threads nothing; a kill at any write and a re-run end the
same; a canary then the rest; a thread another process holds is skipped; ``--jobs 2``
upgrades as one process does."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from neograph_ext._upgrade import in_canary
from neograph_ext.storage._lock import thread_lock
from tests.cli.support import Database, cli, killed_at_write, one_error_line, program
from tests.graphs.releases import CALLS, PER_RUN, compiled, fleet, resumed_calls

GRAPH = "tests.graphs.releases:current"


def _resumed(db: Database, threads: list[str]) -> dict[str, Counter[str]]:
    """Per thread, the node runs resuming it under release 3 made."""
    return {
        thread: Counter({n: calls // PER_RUN[n] for n, calls in spent.items()})
        for thread, spent in resumed_calls(db.saver, threads).items()
    }


def _upgrade(db: Database, *args: str) -> dict[str, Any]:
    result = cli("upgrade", GRAPH, "--db", db.url, "--json", *args)
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _check(db: Database) -> dict[str, list[str]]:
    """Per thread, the nodes ``check`` says resuming it re-runs."""
    plans = json.loads(cli("check", GRAPH, "--db", db.url, "--json").stdout)["plans"]
    return {p["thread_id"]: sorted(p["rerun"]) for p in plans}


def test_a_dry_run_lists_and_writes_nothing(db: Database) -> None:
    made = fleet(db.saver, each=2)
    before = db.rows()

    report = _upgrade(db)
    shown = cli("upgrade", GRAPH, "--db", db.url)

    assert db.rows() == before
    actions = {t["thread_id"]: t["action"] for t in report["threads"]}
    assert {actions[t] for t in made["carry"]} == {"carry"}
    assert {actions[t] for t in made["rewind"] + made["unrecorded"]} == {"rewind"}
    assert {actions[t] for t in made["current"]} == {"nothing"}
    assert actions["newer-0"] == "superseded"
    assert report["totals"] == {"carry": 2, "nothing": 2, "rewind": 4, "superseded": 1}
    assert "would upgrade (dry run): 9 threads" in shown.stdout
    assert "run again with --apply to write" in shown.stdout


def test_after_apply_resuming_runs_exactly_what_check_said(db: Database) -> None:
    made = fleet(db.saver, each=3)
    said = _check(db)

    report = _upgrade(db, "--apply", "--yes")

    after = {t["thread_id"]: t for t in report["threads"]}
    assert {after[t]["action"] for t in made["carry"]} == {"carried"}
    assert {after[t]["after"] for t in made["carry"]} == {"up_to_date"}
    assert _check(db) == {**said, **{t: [] for t in made["carry"]}}
    ran = _resumed(db, list(said))
    for thread, nodes in said.items():
        assert sorted(ran[thread]) == nodes, thread
        assert all(count == 1 for count in ran[thread].values())
    assert all(not ran[t] for t in made["carry"] + made["current"] + made["newer"])
    assert said[made["rewind"][0]] == ["publish", "review"]


def test_rewind_runs_the_rewinds_within_the_max_cost(db: Database) -> None:
    made = fleet(db.saver, each=2)
    CALLS.clear()

    result = cli(
        "upgrade", GRAPH, "--db", db.url, "--apply", "--yes", "--rewind",
        "--max-cost", "model_calls=4", "--json",
    )  # fmt: skip

    assert result.exit_code == 1  # rewinds left: one over the cost, two with no record
    totals = json.loads(result.stdout)["totals"]
    assert totals == {
        "carried": 2,
        "nothing": 2,
        "rewind not run": 3,
        "rewound": 1,
        "superseded": 1,
    }
    assert sum(CALLS.values()) == 3  # the one rewind run: review twice, publish once
    ran = _resumed(db, made["rewind"] + made["carry"])
    assert sum(1 for t in made["rewind"] if not ran[t]) == 1
    assert all(not ran[t] for t in made["carry"])


def test_a_canary_then_the_rest(db: Database) -> None:
    made = fleet(db.saver, each=6)
    picked = [t for t in made["carry"] if in_canary(t, 50)]
    assert 0 < len(picked) < len(made["carry"])  # the ids make a real canary

    first = _upgrade(db, "--apply", "--yes", "--canary", "50")
    second = _upgrade(db, "--apply", "--yes")
    third = _upgrade(db, "--apply", "--yes")

    carried = [t["thread_id"] for t in first["threads"] if t["action"] == "carried"]
    assert carried == picked
    later = [t["thread_id"] for t in first["threads"] if t["action"] == "later"]
    assert later == [t["thread_id"] for t in first["threads"] if not in_canary(t["thread_id"], 50)]
    rest = [t["thread_id"] for t in second["threads"] if t["action"] == "carried"]
    assert sorted(rest + picked) == sorted(made["carry"])
    assert "carried" not in third["totals"]


def test_a_thread_another_process_holds_is_skipped(db: Database) -> None:
    made = fleet(db.saver, each=2)
    held = made["carry"][0]

    with thread_lock(compiled(3, db.saver).checkpointer, held, on_busy="raise"):
        result = cli("upgrade", GRAPH, "--db", db.url, "--apply", "--yes", "--json")

    assert result.exit_code == 1
    actions = {t["thread_id"]: t["action"] for t in json.loads(result.stdout)["threads"]}
    assert actions[held] == "busy" and actions[made["carry"][1]] == "carried"
    again = _upgrade(db, "--apply", "--yes")
    assert [t["thread_id"] for t in again["threads"] if t["action"] == "carried"] == [held]


def test_apply_off_a_terminal_needs_yes(db: Database) -> None:
    fleet(db.saver, each=1)
    before = db.rows()

    result = cli("upgrade", GRAPH, "--db", db.url, "--apply")

    assert result.exit_code == 2 and "pass --yes" in result.stderr
    assert db.rows() == before


@pytest.mark.parametrize("args", [(), ("--apply", "--yes"), ("--apply", "--yes", "--jobs", "2")])
def test_a_thread_named_that_does_not_exist_is_refused_before_any_write(
    db: Database, args: tuple[str, ...]
) -> None:
    made = fleet(db.saver, each=1)
    before = db.rows()

    result = cli("upgrade", GRAPH, "--db", db.url, "--thread", made["carry"][0], "--thread",
                 "no-such-thread", *args)  # fmt: skip

    line = one_error_line(result)
    assert line == "error: thread 'no-such-thread' has no checkpoints in this database"
    assert db.rows() == before  # the thread named first, which exists, was not carried


@pytest.mark.slow
@pytest.mark.parametrize("at", [1, 2, 5])
def test_killed_at_a_write_and_run_again_ends_the_same(lite: Database, at: int) -> None:
    made = fleet(lite.saver, each=3)
    said = _check(lite)

    killed = program(
        "upgrade", GRAPH, "--db", lite.url, "--apply", "--yes", prelude=killed_at_write(at)
    )
    report = _upgrade(lite, "--apply", "--yes")

    assert killed.returncode == 17, killed.stderr
    assert _check(lite) == {**said, **{t: [] for t in made["carry"]}}
    ran = _resumed(lite, list(said))
    assert all(sorted(ran[t]) == nodes for t, nodes in said.items())
    assert all(not ran[t] for t in made["carry"])
    assert report["totals"]["carried"] >= 1


def test_off_a_terminal_a_plain_line_per_batch(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet(db.saver, each=1)
    monkeypatch.setattr("neograph_ext.cli._upgrade.BATCH", 2)

    result = cli("upgrade", GRAPH, "--db", db.url, "--json")

    assert result.stderr.splitlines() == [
        "upgrade: 2 threads so far: 1 carry, 1 nothing",
        "upgrade: 4 threads so far: 1 carry, 1 nothing, 1 rewind, 1 superseded",
    ]
    assert json.loads(result.stdout)["totals"]["rewind"] == 2


@pytest.mark.slow
def test_jobs_upgrade_in_processes_as_one_process_does(
    lite: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = fleet(lite.saver, each=5)
    monkeypatch.setattr("neograph_ext.cli._jobs._SENT", 2)  # 11 chunks, the carries in 3
    twin = Database(str(tmp_path / "twin.sqlite"), lite.saver, lite.rows)
    with contextlib.closing(sqlite3.connect(twin.url)) as copy:
        lite.saver.conn.backup(copy)  # type: ignore[attr-defined]
    # Checked on the copy: a read-only open reads the file's header, and closing that file
    # drops this process's POSIX locks on it, the ones the fixture's open connection
    # holds, so a process of the upgrade closing last would take the WAL from under it.
    said = _check(twin)

    one = cli("upgrade", GRAPH, "--db", twin.url, "--apply", "--yes", "--json", "--jobs", "1")
    two = cli("upgrade", GRAPH, "--db", lite.url, "--apply", "--yes", "--json", "--jobs", "2")

    assert one.exit_code == two.exit_code == 0, two.output
    assert two.stdout == one.stdout
    assert json.loads(two.stdout)["totals"]["carried"] == len(made["carry"])
    assert _check(lite) == {**said, **{t: [] for t in made["carry"]}}
    ran = _resumed(lite, list(said))
    assert all(sorted(ran[t]) == nodes for t, nodes in said.items())
    assert all(not ran[t] for t in made["carry"])


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--jobs", "0"), "--jobs must be at least 1, got 0"),
        (("--apply", "--yes", "--rewind", "--max-cost", "model_calls=4", "--jobs", "2"),
         "--max-cost caps the rewinds' running total in one process"),
    ],
)  # fmt: skip
def test_jobs_below_one_or_beside_a_max_cost_are_refused(
    lite: Database, args: tuple[str, ...], error: str
) -> None:
    fleet(lite.saver, each=1)
    before = lite.rows()

    result = cli("upgrade", GRAPH, "--db", lite.url, *args)

    assert result.exit_code == 2 and error in result.output
    assert lite.rows() == before
