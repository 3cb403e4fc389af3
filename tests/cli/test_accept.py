"""``accept``: ``--dry-run``, ``--json``, the question before it writes, ``--yes``.

Off a terminal it cannot ask: without ``--yes`` it refuses at once (exit 2), never
waiting on stdin. On a terminal (a pseudo-terminal here) it asks on stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from neograph_ext import PlanKind
from tests.cli import cli_graphs
from tests.cli.support import ROOT, V2, Database, answered, cli, one_error_line


@pytest.mark.parametrize("yes", ["--yes", "-y"])
def test_yes_writes_one_fork_and_json_names_it(db: Database, yes: str) -> None:
    db.run(cli_graphs.v1, "t1")
    before = db.plan(cli_graphs.v2, "t1")
    rows = db.rows()

    result = cli("accept", V2, "--db", db.url, "--thread", "t1", yes, "--json")

    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    after = db.plan(cli_graphs.v2, "t1")
    assert after.kind is PlanKind.UP_TO_DATE
    assert got["written"] == after.head_id != before.head_id
    assert (got["dry_run"], got["was"], got["current"]) == (False, "rewind", False)
    assert got["head_id"] == before.head_id and got["plan"]["kind"] == "rewind"
    assert db.rows() > rows


def test_dry_run_says_what_it_would_write_and_writes_nothing(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    before = db.plan(cli_graphs.v2, "t1")
    rows = db.rows()

    text = cli("accept", V2, "--db", db.url, "--thread", "t1", "--dry-run")
    as_json = cli("accept", V2, "--db", db.url, "--thread", "t1", "--dry-run", "--json")

    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("dry run: thread t1: would write one checkpoint, a fork of ")
    assert before.head_id in text.stdout and "nothing written" in text.stdout
    got = json.loads(as_json.stdout)
    assert (got["dry_run"], got["written"], got["current"]) == (True, None, False)
    assert db.rows() == rows
    assert db.plan(cli_graphs.v2, "t1").kind is PlanKind.REWIND


def test_a_current_head_is_not_accepted_twice(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    assert cli("accept", V2, "--db", db.url, "--thread", "t1", "--yes").exit_code == 0
    rows = db.rows()

    dry = json.loads(
        cli("accept", V2, "--db", db.url, "--thread", "t1", "--dry-run", "--json").stdout
    )
    again = cli("accept", V2, "--db", db.url, "--thread", "t1")  # nothing to ask about

    assert dry["current"] is True and dry["written"] is None
    assert again.exit_code == 0, again.output
    assert "is current already; nothing to write" in again.stdout
    assert db.rows() == rows


def test_without_yes_off_a_terminal_it_refuses_and_writes_nothing(db: Database) -> None:
    db.run(cli_graphs.v1, "t1")
    rows = db.rows()
    line = one_error_line(cli("accept", V2, "--db", db.url, "--thread", "t1"))
    assert "stdin is not a terminal" in line and "--yes" in line
    assert db.rows() == rows


@pytest.mark.slow
def test_an_open_stdin_that_is_no_terminal_is_never_waited_on(lite: Database) -> None:
    """A pipe nobody writes to or closes (a CI step): refused at once, not a hang."""
    lite.run(cli_graphs.v1, "t1")
    args = ["accept", V2, "--db", lite.url, "--thread", "t1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "neograph_ext.cli", *args],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    try:
        assert proc.wait(timeout=60) == 2
        assert "stdin is not a terminal" in (proc.stderr.read() if proc.stderr else "")
    finally:
        proc.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream:
                stream.close()


def on_a_terminal(db: Database, answer: str) -> subprocess.CompletedProcess[str]:
    """``accept`` with stdin a pseudo-terminal, answering ``answer``."""
    return answered(answer, "accept", V2, "--db", db.url, "--thread", "t1")


@pytest.mark.slow
def test_on_a_terminal_it_asks_first_and_no_writes_nothing(lite: Database) -> None:
    lite.run(cli_graphs.v1, "t1")
    rows = lite.rows()

    done = on_a_terminal(lite, "n")

    assert done.returncode == 1, done.stderr
    assert "would write one checkpoint, a fork of" in done.stderr
    assert "Write it? [y/N]" in done.stderr and "declined: nothing written" in done.stderr
    assert lite.rows() == rows


@pytest.mark.slow
def test_on_a_terminal_yes_writes(lite: Database) -> None:
    lite.run(cli_graphs.v1, "t1")

    done = on_a_terminal(lite, "y")

    assert done.returncode == 0, done.stderr
    assert "Write it? [y/N]" in done.stderr and "accepted" in done.stdout
    assert lite.plan(cli_graphs.v2, "t1").kind is PlanKind.UP_TO_DATE


def test_a_value_of_a_class_graph_does_not_declare_is_refused(lite: Database) -> None:
    """It would read back as its fields alone and be written so: refused, nothing written."""
    lite.run(cli_graphs.opaque, "t1")
    rows = lite.rows()
    graph = "tests.cli.cli_graphs:opaque"
    result = cli("accept", graph, "--db", lite.url, "--thread", "t1", "--yes")
    assert result.exit_code == 2, result.output
    assert "classes GRAPH does not declare (tests.cli.cli_graphs.Note)" in result.stderr
    assert lite.rows() == rows
