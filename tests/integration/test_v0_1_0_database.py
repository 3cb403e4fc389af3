"""Threads written by neograph-ext 0.1.0 (a full JSON stamp in every checkpoint) keep
planning as they did: minimal rewinds, field-level diffs, kept upstream work."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.drive import Drive
from tests.fixtures import v0_1_0 as fx
from tests.integration.savers import copied


@pytest.fixture
def saver(drive: Drive, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A copy of the checked-in 0.1.0 database, of the drive's mode: tests never touch
    the original."""
    yield from copied(drive, fx.DATABASE, tmp_path)


def test_the_fixture_was_written_by_0_1_0() -> None:
    with sqlite3.connect(fx.DATABASE) as conn:
        rows = conn.execute("SELECT metadata FROM checkpoints").fetchall()
    conn.close()
    assert rows and all(b'"neograph_ext": "{\\"v\\":1' in row[0] for row in rows)


def test_unchanged_threads_plan_as_before(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    graph = fx.graph(saver, runs)
    assert drive.plan(graph, fx.config(fx.DONE)).kind is ne.PlanKind.UP_TO_DATE
    assert drive.plan(graph, fx.config(fx.TWO_TURNS)).kind is ne.PlanKind.UP_TO_DATE
    crashed = drive.plan(graph, fx.config(fx.CRASHED))
    assert crashed.kind is ne.PlanKind.CONTINUE and crashed.next_nodes == {"d"}
    assert drive.run(graph, None, fx.config(fx.CRASHED))["log"] == list("abcd")
    assert drive.run(graph, {"log": [], "value": 1}, fx.config(fx.DONE))["log"] == list("abcd")
    assert runs == Counter("d")


def test_a_changed_type_rewinds_minimally_with_its_diff(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    graph = fx.graph(saver, runs, returns=fx.V2)
    plan = drive.plan(graph, fx.config(fx.DONE))
    assert plan.kind is ne.PlanKind.REWIND
    assert plan.invalidated_nodes == {"c"} and plan.kept == {"a", "b"}
    assert plan.rerun == {"c", "d"}
    assert "Analysis.score: int -> float" in str(plan)

    assert drive.run(graph, None, fx.config(fx.DONE))["log"] == list("abcd")
    assert runs == Counter("cd")
    assert drive.plan(graph, fx.config(fx.DONE)).kind is ne.PlanKind.UP_TO_DATE


def test_a_change_in_an_earlier_turn_still_blocks(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    graph = fx.graph(saver, Counter(), returns=fx.V2)
    plan = drive.plan(graph, fx.config(fx.TWO_TURNS))
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
