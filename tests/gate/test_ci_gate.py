"""The CI gate end to end: threads exported from a SQLite database, the database removed,
then three deploys (a breaking change, a compatible change, no change) judged by the
pytest check (``assert_resumable``) and by ``neograph-ext check --fixtures``, offline."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

import neograph_ext as ne
from neograph_ext.testing import Outcome, assert_resumable, check_fixtures
from tests.cli.support import cli
from tests.gate import app
from tests.graphs.pipelines import Crash

DONE, CRASHED = "done", "crashed"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Two threads written by ``v1`` (one finished, one crashed in ``d``), exported with
    and without values; the database is deleted before any test plans against them."""
    root = tmp_path_factory.mktemp("gate")
    db = root / "prod.sqlite"
    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    ne.run(app.deploy("v1", checkpointer=saver), {"doc": "x"}, _config(DONE))
    with contextlib.suppress(Crash):
        ne.run(app.deploy("v1", checkpointer=saver, crash="d"), {"doc": "x"}, _config(CRASHED))
    conn.close()
    folders = {"blind": root / "blind", "values": root / "values"}
    assert cli("export", "tests.gate.app:v1", "--db", db, "--out", folders["blind"]).exit_code == 0
    result = cli(
        "export", "tests.gate.app:v1", "--db", db, "--out", folders["values"], "--with-values"
    )
    assert result.exit_code == 0, result.output
    db.unlink()  # offline from here on
    yield folders


def _config(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def test_no_change_passes(exported: dict[str, Path], runs: Counter[str]) -> None:
    report = assert_resumable(app.pipeline(app.ReviewV1, runs), exported["blind"])
    kinds = {v.thread_id: v.plan.kind for v in report.verdicts if v.plan}
    assert kinds == {DONE: ne.PlanKind.UP_TO_DATE, CRASHED: ne.PlanKind.CONTINUE}
    assert runs == Counter()  # planning ran nothing
    result = cli("check", "tests.gate.app:unchanged", "--fixtures", exported["blind"])
    assert result.exit_code == 0, result.output
    assert "all resume cleanly" in result.stdout


def test_a_breaking_change_fails_naming_what_reruns_and_why(exported: dict[str, Path]) -> None:
    breaking = app.deploy("breaking")
    with pytest.raises(AssertionError) as caught:
        assert_resumable(breaking, exported["values"])
    report = str(caught.value)
    assert "2 would not resume cleanly" in report
    assert f"FAIL thread {DONE!r}" in report and "rewind from step 2" in report
    assert "re-runs: c, d" in report and "Review" in report
    result = cli("check", "tests.gate.app:breaking", "--fixtures", exported["values"])
    assert result.exit_code == 1, result.output
    assert "re-runs: c, d" in result.stdout and "2 would not resume cleanly" in result.stdout


def test_allowing_rewinds_passes_a_rewind_but_not_strict_mode(exported: dict[str, Path]) -> None:
    assert_resumable(app.deploy("breaking"), exported["values"], allow="rewind")
    allowed = cli(
        "check", "tests.gate.app:breaking", "--fixtures", exported["values"], "--allow", "rewind"
    )
    assert allowed.exit_code == 0, allowed.output
    report = check_fixtures(app.deploy("strict"), exported["values"], allow=["rewind"])
    assert {v.outcome for v in report.verdicts} == {Outcome.RAISE} and not report.ok
    strict = cli(
        "check", "tests.gate.app:strict", "--fixtures", exported["values"], "--allow", "rewind"
    )
    assert strict.exit_code == 1 and "raises:" in strict.stdout, strict.output


def test_a_compatible_change_passes_when_the_values_were_exported(
    exported: dict[str, Path],
) -> None:
    report = assert_resumable(app.deploy("compatible"), exported["values"])
    assert {v.plan.kind for v in report.verdicts if v.plan} == {ne.PlanKind.MIGRATE}
    result = cli("check", "tests.gate.app:compatible", "--fixtures", exported["values"], "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True
    # Without values, keep_compatible cannot be judged: the gate fails and says why.
    blind = cli("check", "tests.gate.app:compatible", "--fixtures", exported["blind"])
    assert blind.exit_code == 1 and "--with-values" in blind.stdout, blind.output


def test_fixtures_hold_no_value_unless_asked(exported: dict[str, Path]) -> None:
    blind = "".join(p.read_text() for p in exported["blind"].glob("*.json"))
    values = "".join(p.read_text() for p in exported["values"].glob("*.json"))
    assert '"values": false' in blind and '"redacted": true' in blind
    assert '"values": true' in values and '"redacted"' not in values


def test_a_fixture_check_with_a_database_or_without_fixtures_is_one_line(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    both = cli("check", "tests.gate.app:v1", "--fixtures", exported["blind"], "--db", "x.db")
    assert both.exit_code == 2 and "drop --db" in both.stderr
    named = cli("check", "tests.gate.app:v1", "--fixtures", exported["blind"], "--thread", DONE)
    assert named.exit_code == 2 and "drop --thread" in named.stderr
    allowing = cli("check", "tests.gate.app:v1", "--db", tmp_path / "x.db", "--allow", "rewind")
    assert allowing.exit_code == 2 and "--allow applies to --fixtures" in allowing.stderr
    empty = cli("check", "tests.gate.app:v1", "--fixtures", tmp_path)
    assert empty.exit_code == 2 and "holds no thread fixture" in empty.stderr
    neither = cli("check", "tests.gate.app:v1")
    assert neither.exit_code == 2 and "--fixtures DIR" in neither.stderr
    (tmp_path / "future.json").write_text(
        json.dumps({"format": 99, "kind": "neograph-ext thread fixture"})
    )
    future = cli("check", "tests.gate.app:v1", "--fixtures", tmp_path)
    assert future.exit_code == 2 and "format 99" in future.stderr


def test_a_thread_that_cannot_be_planned_fails_with_the_reason(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    for source in exported["blind"].glob("*.json"):
        document = json.loads(source.read_text())
        if document["thread_id"] == DONE:
            head = next(c for c in document["checkpoints"] if c["id"] == document["head"])
            head["metadata"]["step"] = "two"  # as damaged metadata would read
        (tmp_path / source.name).write_text(json.dumps(document))
    report = check_fixtures(app.deploy("unchanged"), tmp_path, allow="rewind")
    (damaged,) = report.failing
    assert damaged.thread_id == DONE and damaged.outcome is Outcome.ERROR
    assert damaged.error is not None and "cannot be read" in damaged.error
    result = cli("check", "tests.gate.app:unchanged", "--fixtures", tmp_path)
    assert result.exit_code == 1 and f"FAIL thread {DONE!r}" in result.stdout
    assert "raises: thread 'done': its stored checkpoints cannot be read" in result.stdout
