"""Entrypoint threads written by neograph-ext 0.3, whose cached task results carry no
digest of their calls, resume as 0.3 judged them: by task and position."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from neograph_ext.decision._langgraph_calls import CALL_CHANNEL
from tests.drive import Drive
from tests.fixtures import v0_3 as fx
from tests.graphs.calls import drafts, summaries
from tests.integration.savers import copied

ALPHA_BETA = "first=summary of alpha, second=summary of beta"


@pytest.fixture
def saver(drive: Drive, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A copy of the checked-in 0.3 database, of the drive's mode."""
    yield from copied(drive, fx.DATABASE, tmp_path)


def test_the_fixture_records_no_call_digest() -> None:
    with sqlite3.connect(fx.DATABASE) as conn:
        channels = {row[0] for row in conn.execute("SELECT channel FROM writes")}
    conn.close()
    assert "__return__" in channels and CALL_CHANNEL not in channels


def test_unchanged_calls_without_digests_are_served_as_before(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    graph = ne.compile(summaries(runs, set(), is_async=drive.is_async), checkpointer=saver)
    plan = drive.plan(graph, fx.config(fx.SUMMARIES_CRASHED))
    assert (plan.kind, plan.kept, plan.matched_when_made) == ("continue", {"summ"}, ())
    assert drive.run(graph, None, fx.config(fx.SUMMARIES_CRASHED)) == ALPHA_BETA
    assert runs == Counter(join=1)


def test_swapped_calls_without_digests_are_judged_by_position_alone(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    # What stays out (docs/not-detected.md): 0.3 recorded no arguments, so its cached
    # results answer the calls now at their positions, as they did under 0.3.
    swapped = summaries(runs, set(), swapped=True, is_async=drive.is_async)
    graph = ne.compile(swapped, checkpointer=saver)
    assert drive.plan(graph, fx.config(fx.SUMMARIES_CRASHED)).kind is ne.PlanKind.CONTINUE
    assert drive.run(graph, None, fx.config(fx.SUMMARIES_CRASHED)) == ALPHA_BETA
    assert runs == Counter(join=1)


def test_an_inserted_call_is_planned_as_it_runs_without_digests(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    outlined = drafts(runs, set(), outlined=True, is_async=drive.is_async)
    graph = ne.compile(outlined, checkpointer=saver)
    plan = drive.plan(graph, fx.config(fx.DRAFTS_CRASHED))
    assert (plan.kind, plan.kept) == ("rewind", set())
    assert drive.run(graph, None, fx.config(fx.DRAFTS_CRASHED)) == "published: NOTES ON TIDES"
    assert runs == Counter(outline=1, research=1, write=1, publish=1)
