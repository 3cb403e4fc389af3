"""No saver call is made while the same saver holds its own lock.

LangGraph's sync savers hold a non-reentrant lock until a listing ends; a ``get_tuple``
made on the same saver while a listing is open waits forever. Each call here runs in a
thread of its own and must return in time: a hang fails the test instead of the suite.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

import neograph_ext as ne
from tests.reliability import harness as h
from tests.reliability import worker


class _Killed(Exception):
    """Stands in for a SIGKILL in the saver's first ``put_writes``: the keeping fork
    is stored, the kept writes are not (a kill itself is in test_owed.py)."""


def _graph(saver: BaseCheckpointSaver[Any], log: Path, code: str | None = None) -> Any:
    parsed = worker.parse_code(code)
    return worker.compiled(saver, worker.build(log, parsed), parsed)


def _fail_first_put_writes(saver: BaseCheckpointSaver[Any], name: str) -> Callable[[], None]:
    """Make the saver's next ``put_writes`` (or ``aput_writes``) raise; returns the undo."""
    original = getattr(saver, name)

    def failing(*args: Any, **kwargs: Any) -> Any:
        setattr(saver, name, original)
        raise _Killed

    setattr(saver, name, failing)
    return lambda: setattr(saver, name, original)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sync_saver(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[BaseCheckpointSaver[Any]]:
    if request.param == "sqlite":
        conn = sqlite3.connect(tmp_path / "db.sqlite", check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
    else:
        with PostgresSaver.from_conn_string(request.getfixturevalue("pg_dsn")) as saver:
            saver.setup()
            yield saver


def test_plan_accept_and_run_return_after_a_fork_left_without_its_kept_writes(
    sync_saver: BaseCheckpointSaver[Any], thread: str, log: Path
) -> None:
    config = {"configurable": {"thread_id": thread}}
    ne.run(_graph(sync_saver, log), dict(worker.INPUT), config)
    graph = _graph(sync_saver, log, "c=float")
    _fail_first_put_writes(sync_saver, "put_writes")
    with pytest.raises(_Killed):
        ne.run(graph, dict(worker.INPUT), config)

    assert h.in_time(lambda: ne.plan(graph, config)).kind is not ne.PlanKind.UP_TO_DATE
    h.in_time(lambda: ne.accept(graph, config))
    h.in_time(lambda: ne.run(graph, dict(worker.INPUT), config))
    assert h.in_time(lambda: ne.plan(graph, config)).kind is ne.PlanKind.UP_TO_DATE


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_async_twins_return_after_a_fork_left_without_its_kept_writes(
    kind: str, thread: str, log: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    config = {"configurable": {"thread_id": thread}}

    async def scenario() -> ne.PlanKind:
        if kind == "sqlite":
            opened: Any = AsyncSqliteSaver.from_conn_string(str(tmp_path / "db.sqlite"))
        else:
            opened = AsyncPostgresSaver.from_conn_string(request.getfixturevalue("pg_dsn"))
        async with opened as saver:
            await saver.setup()
            await ne.arun(_graph(saver, log), dict(worker.INPUT), config)
            graph = _graph(saver, log, "c=float")
            _fail_first_put_writes(saver, "aput_writes")
            with pytest.raises(_Killed):
                await ne.arun(graph, dict(worker.INPUT), config)
            assert (await ne.aplan(graph, config)).kind is not ne.PlanKind.UP_TO_DATE
            await ne.aaccept(graph, config)
            await ne.arun(graph, dict(worker.INPUT), config)
            return (await ne.aplan(graph, config)).kind

    assert h.in_time(lambda: asyncio.run(scenario())) is ne.PlanKind.UP_TO_DATE
