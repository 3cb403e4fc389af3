"""``--jobs``: a process of the pool that dies (``SIGKILL``, as an out-of-memory kill is)
as it starts or at its first write ends the command at once, exit 2, with one line naming
it; the same command run again finishes the work, each thread brought forward once."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cli.support import Database, cli, program
from tests.cli.test_upgrade import _check, _resumed, _upgrade
from tests.graphs.releases import fleet

DYING = "tests.cli.dying_graph:current"

pytestmark = pytest.mark.slow


def _dying(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, at: str, *args: str
) -> tuple[str, float]:
    """The command run with one process of its pool dying ``at``: its one line and how
    long it took."""
    monkeypatch.setenv("DYING_AT", at)
    monkeypatch.setenv("DYING_FLAG", str(tmp_path / "died"))
    started = time.monotonic()
    done = program(*args)  # a hung command fails the test at its timeout
    took = time.monotonic() - started
    assert (tmp_path / "died").exists()  # one process was killed
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0], took


def _named(line: str) -> None:
    assert line.startswith("error: --jobs: process "), line
    assert "(killed by SIGKILL, out of memory?) died" in line
    assert "Run the same command again" in line


def test_check_ends_at_once_when_a_process_dies_as_it_starts(
    db: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fleet(db.saver, each=3)

    line, took = _dying(
        monkeypatch, tmp_path, "start", "check", DYING, "--db", db.url, "--jobs", "2"
    )

    _named(line)
    assert took < 60


@pytest.mark.parametrize("at", ["start", "write"])
def test_upgrade_ends_at_once_when_a_process_dies_and_a_re_run_finishes(
    db: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, at: str
) -> None:
    made = fleet(db.saver, each=3)
    said = _check(db)
    apply = ("upgrade", DYING, "--db", db.url, "--apply", "--yes", "--json", "--jobs", "2")

    line, took = _dying(monkeypatch, tmp_path, at, *apply)
    monkeypatch.delenv("DYING_AT")
    again = cli(*apply)

    _named(line)
    assert took < 60
    assert again.exit_code == 0, again.output
    carried = [
        t["thread_id"] for t in json.loads(again.stdout)["threads"] if t["action"] == "carried"
    ]
    assert set(carried) <= set(made["carry"])  # a carry the dead run made is found done
    assert _upgrade(db)["totals"].get("carry") is None  # nothing left to carry
    assert _check(db) == {**said, **{t: [] for t in made["carry"]}}
    ran = _resumed(db, list(said))
    assert all(sorted(ran[t]) == nodes for t, nodes in said.items())
    assert all(not ran[t] for t in made["carry"])
