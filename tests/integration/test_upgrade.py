"""``upgrade_threads`` and its async twin over one SQLite file: the same actions, the
carries written once, and what a resume then runs."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

import neograph_ext as ne
from neograph_ext.types import UpgradeAction
from tests.graphs.releases import CALLS, compiled, fleet


def _fleet(path: Path) -> dict[str, list[str]]:
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        return fleet(SqliteSaver(conn), each=2)
    finally:
        conn.close()


def test_the_async_twin_carries_as_the_sync_one_plans(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite"
    made = _fleet(path)
    with SqliteSaver.from_conn_string(str(path)) as saver:
        planned = {u.thread_id: u.action for u in ne.upgrade_threads(compiled(3, saver))}

    async def upgraded() -> dict[str, UpgradeAction]:
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            graph = compiled(3, saver)
            done = {u.thread_id: u async for u in ne.aupgrade_threads(graph, apply=True)}
            again = [u async for u in ne.aupgrade_threads(graph, apply=True)]
        assert all(u.action is not UpgradeAction.CARRY for u in again)
        assert all(done[t].done and done[t].after is not None for t in made["carry"])
        return {t: u.action for t, u in done.items()}

    assert asyncio.run(upgraded()) == planned
    assert {planned[t] for t in made["carry"]} == {UpgradeAction.CARRY}
    CALLS.clear()
    with SqliteSaver.from_conn_string(str(path)) as saver:
        for thread in made["carry"]:
            ne.run(compiled(3, saver), None, {"configurable": {"thread_id": thread}})
    assert not CALLS


def test_named_threads_and_what_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite"
    made = _fleet(path)
    with SqliteSaver.from_conn_string(str(path)) as saver:
        graph = compiled(3, saver)
        named = [u.thread_id for u in ne.upgrade_threads(graph, made["carry"][::-1])]
        with pytest.raises(ValueError, match="needs apply=True"):
            next(ne.upgrade_threads(graph, rewind=True))
        with pytest.raises(ValueError, match="canary is a percent"):
            next(ne.upgrade_threads(graph, canary=0))
    assert named == made["carry"][::-1]
