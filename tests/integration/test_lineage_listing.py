"""Planning reads a thread in one listing, whatever order the saver lists it in, and
closes the listing before it reads anything else."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

import neograph_ext as ne
from neograph_ext.storage._storage import areader_for, reader_for
from tests.drive import Drive, Saver
from tests.graphs.pipelines import linear, model
from tests.integration.reads import fetching, lightly, listing

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def test_plan_reads_the_head_and_the_thread_in_one_listing(
    drive: Drive, saver: Saver, config: RunnableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    drive.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    drive.plan(graph, config)  # finds the old stamp's description, kept by the graph
    fetched, listed = fetching(drive, saver, monkeypatch), listing(drive, saver, monkeypatch)
    light = lightly(drive, saver, monkeypatch)
    plan = drive.plan(graph, config)

    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    # No description is fetched: the graph kept the one it found.
    thread = config["configurable"]["thread_id"]
    assert fetched == [thread] and listed + light == [thread]
    # A saver whose tables a reader knows is read through them, no state value decoded.
    has_reader = (areader_for if drive.is_async else reader_for)(saver) is not None
    assert light == ([thread] if has_reader else [])


class _OldestFirst(InMemorySaver):
    """A saver that lists a thread oldest first (its async listing follows, as
    ``InMemorySaver.alist`` reads ``list``)."""

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Any:
        return iter(reversed([*super().list(config, **kwargs)]))


def _forked_thread(drive: Drive, saver: InMemorySaver, config: RunnableConfig) -> ne.ResumePlan:
    """A thread rewound once (so it holds a branch), planned by a graph changed again."""
    drive.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {}, config)
    bumped = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver, versions={"d": "2"})
    drive.run(bumped, None, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver, versions={"d": "2"})
    plan = drive.plan(graph, config)
    assert plan == ne.plan(graph, config)  # and the sync twin's, either way
    return plan


def test_a_saver_listing_oldest_first_plans_as_one_listing_newest_first(drive: Drive) -> None:
    newest_first = _forked_thread(drive, InMemorySaver(), _thread())
    oldest_first = _forked_thread(drive, _OldestFirst(), _thread())

    assert newest_first.kind is ne.PlanKind.REWIND and newest_first.step == 2
    assert newest_first.invalidated_nodes == {"c"} and newest_first.kept == {"a", "b"}
    same = ("kind", "step", "invalidated_nodes", "rerun", "kept", "kept_tasks", "next_nodes")
    for field in same:
        assert getattr(oldest_first, field) == getattr(newest_first, field), field


class _SwappedSqlite(SqliteSaver):
    """Lists a thread's two newest checkpoints in the wrong order, lazily, and keeps its
    listings, as a saver that tracks its open cursors would: a listing left open keeps
    the saver's lock."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self.listings: list[Any] = []

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Any:
        listing = self._swapped(config, **kwargs)
        self.listings.append(listing)
        return listing

    def _swapped(self, config: RunnableConfig | None, **kwargs: Any) -> Any:
        inner = super().list(config, **kwargs)
        try:
            first, second = next(inner, None), next(inner, None)
            yield from (tup for tup in (second, first) if tup is not None)
            yield from inner
        finally:
            inner.close()


# Sync only: the lock a listing left open would hold is the sync SqliteSaver's.
def test_a_listing_out_of_order_is_closed_before_the_head_is_read(tmp_path: Path) -> None:
    saver = _SwappedSqlite(sqlite3.connect(tmp_path / "swapped.sqlite", check_same_thread=False))
    config = _thread()
    ne.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    planned: list[ne.ResumePlan] = []
    worker = threading.Thread(target=lambda: planned.append(ne.plan(graph, config)), daemon=True)
    worker.start()
    worker.join(timeout=10)

    assert planned, "plan() waited for the lock of its own listing, left open"
    assert planned[0].invalidated_nodes == {"c"} and planned[0].kept == {"a", "b"}
