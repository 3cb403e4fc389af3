"""``check --cost``: what resuming a fleet of three releases would spend again, equal to
what resuming each thread then spends (a counting fake model), but for the threads it
says have no record; and the thresholds CI fails on."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.support import Database, cli, one_error_line
from tests.graphs.releases import PER_RUN, TOKENS, compiled, fleet, resumed_calls

GRAPH = "tests.graphs.releases:current"


def _resumed_spend(db: Database, threads: list[str]) -> dict[str, Counter[str]]:
    """Per thread, the model calls per node that resuming it under release 3 made."""
    return resumed_calls(db.saver, threads)


def test_the_estimate_is_what_resuming_spends_but_for_the_unrecorded(db: Database) -> None:
    made = fleet(db.saver, each=3)
    before = db.rows()

    result = cli("check", GRAPH, "--db", db.url, "--cost", "--json")

    assert result.exit_code == 1, result.output  # rewinds fail without a threshold
    assert db.rows() == before
    cost = json.loads(result.stdout)["cost"]
    spent = _resumed_spend(db, [t for threads in made.values() for t in threads])
    recorded = [t for t in spent if t not in made["unrecorded"]]
    calls = sum(sum(spent[t].values()) for t in recorded)
    assert cost["total"]["threads"] == len(made["rewind"]) + len(made["unrecorded"])
    assert cost["total"]["unrecorded"] == len(made["unrecorded"])
    assert cost["total"]["spend"]["model_calls"] == calls == 3 * len(made["rewind"])
    assert cost["total"]["spend"]["tokens"] == calls * TOKENS
    nodes = {row["node"]: row for row in cost["nodes"]}
    assert set(nodes) == {"review", "publish"}
    for node, row in nodes.items():
        assert row["spend"]["model_calls"] == sum(spent[t][node] for t in recorded)
        assert row["runs"] == row["threads"] == 6
    # The node runs, recorded or not, are the ones resuming repeated.
    runs = sum(sum(spent[t].values()) for t in spent)
    assert runs == sum(PER_RUN[n] * row["runs"] for n, row in nodes.items())
    assert cost["total"]["runs"] == 12
    assert all(not spent[t] for t in made["carry"] + made["current"] + made["newer"])


def test_per_code_version_and_the_table(db: Database) -> None:
    made = fleet(db.saver, each=2)
    old = compiled(1, None).neograph_ext_stamp.id

    as_json = json.loads(cli("check", GRAPH, "--db", db.url, "--cost", "--json").stdout)
    shown = cli("check", GRAPH, "--db", db.url, "--cost")

    (stamp,) = as_json["cost"]["stamps"]
    assert stamp["stamp"] == old and stamp["threads"] == 2 * len(made["rewind"])
    assert "what resuming would spend again" in shown.stdout
    cells = [[c for c in line.split() if c != "│"] for line in shown.stdout.splitlines()]
    assert ["node", "review", "4", "4", "2", "-", "4", str(4 * TOKENS)] in cells
    assert ["total", "4", "8", "2", "4", "6", str(6 * TOKENS)] in cells
    assert "2 of 4 threads have no budget record" in shown.stdout


def test_thresholds_judge_the_rewinds(db: Database) -> None:
    made = fleet(db.saver, each=2)
    named = [
        arg for t in made["rewind"] + made["unrecorded"] + made["carry"] for arg in ("--thread", t)
    ]

    within = cli("check", GRAPH, "--db", db.url, *named, "--max-reruns", "8")
    over = cli("check", GRAPH, "--db", db.url, *named, "--max-reruns", "7", "--json")
    calls = cli("check", GRAPH, "--db", db.url, *named, "--max-cost", "model_calls=5")
    bad = cli("check", GRAPH, "--db", db.url, "--max-cost", "dollars=5")

    assert within.exit_code == 0, within.output
    assert "ok: 6 threads checked" in within.stdout
    assert over.exit_code == 1
    assert json.loads(over.stdout)["cost"]["over"] == ["8 node runs repeated, over --max-reruns 7"]
    assert calls.exit_code == 1
    assert (
        "failed: 6 model_calls estimated, over --max-cost model_calls=5; 6 threads" in calls.stdout
    )
    assert bad.exit_code == 2 and "--max-cost 'dollars=5'" in bad.stderr


def test_a_superseded_thread_still_fails_within_the_thresholds(db: Database) -> None:
    fleet(db.saver, each=1)

    result = cli("check", GRAPH, "--db", db.url, "--max-reruns", "100")

    assert result.exit_code == 1
    assert "newer-0" in result.stdout


def test_offline_the_fixtures_give_the_estimate_the_database_gives(
    db: Database, tmp_path: Path
) -> None:
    made = fleet(db.saver, each=2)
    named = [arg for t in made["rewind"] + made["unrecorded"] for arg in ("--thread", t)]
    exported = cli("export", GRAPH, "--db", db.url, "--out", tmp_path / "threads", *named)
    assert exported.exit_code == 0, exported.output

    online = json.loads(cli("check", GRAPH, "--db", db.url, *named, "--cost", "--json").stdout)
    offline = cli("check", GRAPH, "--fixtures", tmp_path / "threads", "--cost", "--json")
    within = cli("check", GRAPH, "--fixtures", tmp_path / "threads", "--max-reruns", "8")
    over = cli("check", GRAPH, "--fixtures", tmp_path / "threads", "--max-cost", "tokens=1")

    assert offline.exit_code == 1  # rewinds fail without a threshold, as online
    assert json.loads(offline.stdout)["cost"] == online["cost"]
    assert online["cost"]["total"]["unrecorded"] == 2
    assert within.exit_code == 0, within.output
    assert "what resuming would spend again" in within.stdout
    assert over.exit_code == 1
    assert "60 tokens estimated, over --max-cost tokens=1" in over.stdout


@pytest.mark.parametrize(
    "cap",
    ["tokens=²", "tokens=٣", "model_calls=\uff13", "tokens=" + "9" * 5000, "tokens=" + "9" * 19,
     "tokens=-1", "tokens=1e3", "tokens= 3", "tokens="],
)  # fmt: skip
@pytest.mark.parametrize(
    "command", [("check",), ("upgrade", "--apply", "--yes", "--rewind")], ids=["check", "upgrade"]
)
def test_a_max_cost_that_is_not_ascii_digits_within_bounds_is_one_usage_line(
    db: Database, cap: str, command: tuple[str, ...]
) -> None:
    fleet(db.saver, each=1)
    before = db.rows()

    result = cli(command[0], GRAPH, "--db", db.url, *command[1:], "--max-cost", cap)

    line = one_error_line(result)
    assert "give MEASURE=N, a whole number of at most 18 digits 0-9" in line
    assert len(line) < 300
    assert db.rows() == before
