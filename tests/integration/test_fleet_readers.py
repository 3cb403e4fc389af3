"""The per-backend readers (``_storage``) plan every thread as the saver-agnostic path does.

Each shape writes threads into a fresh database (an SQLite file, a PostgreSQL schema of
its own) under the old code, then ``check_threads`` plans them under the old and the new
code twice: through the reader of the saver's tables, and through the saver's own API
(a subclass of the saver, which no reader claims). Plans and lineage records must be
identical.
"""

from __future__ import annotations

import asyncio
import operator
import shutil
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, TypedDict

import psycopg
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send
from psycopg.rows import dict_row

import neograph_ext
from neograph_ext import PlanKind, acheck_threads, check_threads
from neograph_ext._lineage import alist_threads, list_threads
from neograph_ext.decision._history import lineage
from neograph_ext.storage._storage import areader_for, reader_for, run
from neograph_ext.types import ThreadCheck
from tests.cli.support import pg_url
from tests.fixtures import v0_1_0, v0_2, v0_3
from tests.graphs.delta import STATES, fan
from tests.graphs.pipelines import Crash, asking, deployed, diamond, linear, model

Builder = StateGraph[Any, Any, Any, Any]
V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


class _Plain(SqliteSaver):
    """The same tables, read through the saver's API: no reader knows this class."""


class _PlainPostgres(PostgresSaver):
    """The same tables, read through the saver's API: no reader knows this class."""


class Fan(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def sends(runs: Counter[str], returns: object = None) -> Builder:
    """``a`` sends three ``work`` tasks (push tasks, queued as ``Send``s), then ``z``."""

    def a(state: Fan) -> dict[str, Any]:
        runs["a"] += 1
        return {"log": ["a"]}

    def work(state: dict[str, Any]) -> dict[str, Any]:
        runs["work"] += 1
        return {"log": [f"w{state['i']}"]}

    def z(state: Fan) -> dict[str, Any]:
        runs["z"] += 1
        return {"log": ["z"]}

    if returns is not None:
        z.__annotations__ = {"state": Fan, "return": returns}
    builder = StateGraph(Fan)
    builder.add_node("a", a)
    builder.add_node("work", work)
    builder.add_node("z", z)
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda s: [Send("work", {"i": i}) for i in range(3)])
    builder.add_edge("work", "z")
    builder.add_edge("z", END)
    return builder


Shape = tuple[Callable[[Any], Builder], Callable[[Any], Builder], Callable[..., None]]


def _write_linear(graph: Any, thread: str) -> None:
    neograph_ext.run(graph, {"log": []}, _cfg(thread))
    neograph_ext.run(graph, {"log": ["second turn"]}, _cfg(thread))


def _write_asking(graph: Any, thread: str) -> None:
    neograph_ext.run(graph, {"log": []}, _cfg(thread))
    if thread.endswith("1"):
        neograph_ext.run(graph, Command(resume="yes"), _cfg(thread))


def _write_once(graph: Any, thread: str) -> None:
    with suppress(Crash, RuntimeError):
        neograph_ext.run(graph, {"log": []}, _cfg(thread))


def _cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


SHAPES: dict[str, Shape] = {
    "linear-two-turns": (
        lambda runs: linear(runs, {"c": V1}),
        lambda runs: linear(runs, {"c": V2}),
        _write_linear,
    ),
    "linear-crashed": (
        lambda runs: linear(runs, {"b": V1}, crash="c"),
        lambda runs: linear(runs, {"b": V2}),
        _write_once,
    ),
    "diamond": (lambda runs: diamond(runs, V1), lambda runs: diamond(runs, V2), _write_once),
    "diamond-crashed": (
        lambda runs: diamond(runs, V1, crash="d"),
        lambda runs: diamond(runs, V2),
        _write_once,
    ),
    "asking": (asking, lambda runs: linear(runs, names=("a", "ask", "b")), _write_asking),
    "sends": (sends, lambda runs: sends(runs, V2), _write_once),
    "delta": (
        lambda runs: fan(STATES["delta-near"], runs),
        lambda runs: fan(STATES["delta-near"], runs, b="b2"),
        _write_once,
    ),
}


def _threads(saver: BaseCheckpointSaver[Any], name: str) -> None:
    """Three threads of ``name``'s shape under the old code, one of them also rewound by
    the new code (a fork: the thread's history is a tree), one written without a stamp."""
    old, new, write = SHAPES[name]
    deployed(V1)
    for thread in ("t1", "t2", "t3"):
        write(neograph_ext.compile(old(Counter()), checkpointer=saver), thread)
    deployed(V2)
    rewound = neograph_ext.compile(new(Counter()), checkpointer=saver)
    # A shape the new code refuses to resume (a blocker) leaves t3 as it was.
    with suppress(neograph_ext.NeographExtError):
        neograph_ext.run(rewound, None, _cfg("t3"))
    plain = old(Counter()).compile(checkpointer=saver)
    with suppress(RuntimeError):  # a shape that crashes
        plain.invoke({"log": []}, _cfg("unstamped"))


def _checked(saver: BaseCheckpointSaver[Any], builder: Builder) -> list[ThreadCheck]:
    return list(check_threads(neograph_ext.compile(builder, checkpointer=saver), batch=2))


def _planned(saver: BaseCheckpointSaver[Any], builder: Builder) -> list[neograph_ext.ResumePlan]:
    """``plan`` of every thread, which reads each lineage through the reader when the
    saver has one."""
    graph = neograph_ext.compile(builder, checkpointer=saver)
    return [neograph_ext.plan(graph, _cfg(t)) for t in ("t1", "t2", "t3", "unstamped")]


def _same(
    fast: BaseCheckpointSaver[Any], slow: BaseCheckpointSaver[Any], name: str
) -> list[ThreadCheck]:
    """Both paths plan every thread alike, under the old code and the new; the new
    code's checks."""
    assert reader_for(fast) is not None and reader_for(slow) is None
    # Thread ids paged from the tables, reserved ones left out, as a scan finds them.
    assert (
        list_threads(fast)
        == list_threads(slow)
        == (
            "t1",
            "t2",
            "t3",
            "unstamped",
        )
    )
    old, new, _ = SHAPES[name]
    for version, builder in ((V1, old), (V2, new)):
        deployed(version)
        assert _checked(fast, builder(Counter())) == _checked(slow, builder(Counter()))
        assert _planned(fast, builder(Counter())) == _planned(slow, builder(Counter()))
    _read_as_one_by_one(fast, ["t1", "t2", "t3", "unstamped"])
    return _checked(fast, new(Counter()))


def _read_as_one_by_one(saver: BaseCheckpointSaver[Any], threads: list[str]) -> None:
    """A batch's heads are what ``get_tuple`` reads of each thread, and its lineages walk
    as each thread's ``list`` does."""
    reader = reader_for(saver)
    assert reader is not None
    heads = run(saver, reader.heads(threads))
    assert heads == {t: saver.get_tuple(_cfg(t)) for t in threads}
    listed = run(saver, reader.lineages(threads))
    assert listed.keys() == set(threads)
    for thread, tuples in listed.items():
        head = heads[thread].checkpoint["id"]
        whole = list(saver.list({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}))
        assert lineage(tuples, head) == lineage(whole, head), thread


@pytest.mark.parametrize("release", [v0_1_0, v0_2, v0_3], ids=["0.1.0", "0.2", "0.3"])
def test_an_old_release_s_database_reads_in_batches_as_thread_by_thread(
    release: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "old.sqlite"
    shutil.copyfile(release.DATABASE, path)
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        threads = list(list_threads(saver))
        assert len(threads) >= 2
        _read_as_one_by_one(saver, threads)
    finally:
        conn.close()


@pytest.mark.parametrize("name", list(SHAPES))
def test_sqlite_reader_plans_as_the_saver_does(name: str, tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "fleet.sqlite", check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        _threads(saver, name)
        checks = _same(saver, _Plain(conn), name)
    finally:
        conn.close()
    assert [c.plan.thread_id for c in checks] == ["t1", "t2", "t3", "unstamped"]
    assert checks[3].plan.kind is PlanKind.UNVERIFIED and checks[3].written_by is None


@contextmanager
def _schema(dsn: str) -> Iterator[str]:
    name = f"fleet_{abs(hash((dsn, id(object())))) % 10**12}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
    try:
        yield pg_url(dsn, name)
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {name} CASCADE")


@pytest.mark.parametrize("name", list(SHAPES))
def test_postgres_reader_plans_as_the_saver_does(name: str, pg_dsn: str) -> None:
    with _schema(pg_dsn) as url:
        kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0}
        with psycopg.connect(url, row_factory=dict_row, **kwargs) as conn:
            saver = PostgresSaver(conn)
            saver.setup()
            _threads(saver, name)
            checks = _same(saver, _PlainPostgres(conn), name)
    assert [c.plan.thread_id for c in checks] == ["t1", "t2", "t3", "unstamped"]


async def _acheck(saver: BaseCheckpointSaver[Any], builder: Builder) -> list[ThreadCheck]:
    graph = neograph_ext.compile(builder, checkpointer=saver)
    return [check async for check in acheck_threads(graph, batch=3)]


async def _aplanned(saver: BaseCheckpointSaver[Any]) -> list[neograph_ext.ResumePlan]:
    graph = neograph_ext.compile(diamond(Counter()), checkpointer=saver)
    return [await neograph_ext.aplan(graph, _cfg(t)) for t in ("t1", "t2", "t3", "unstamped")]


def test_async_readers_plan_as_the_sync_ones(tmp_path: Path, pg_dsn: str) -> None:
    """``acheck_threads`` through the async savers' readers, on SQLite and PostgreSQL."""
    path = tmp_path / "fleet.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        _threads(SqliteSaver(conn), "diamond-crashed")
        deployed(V2)
        expected = _checked(SqliteSaver(conn), diamond(Counter()))
        plans = _planned(SqliteSaver(conn), diamond(Counter()))
    finally:
        conn.close()

    async def lite() -> tuple[list[ThreadCheck], list[neograph_ext.ResumePlan]]:
        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            assert areader_for(saver) is not None and reader_for(saver) is None
            assert await alist_threads(saver) == ("t1", "t2", "t3", "unstamped")
            return await _acheck(saver, diamond(Counter())), await _aplanned(saver)

    assert asyncio.run(lite()) == (expected, plans)

    with _schema(pg_dsn) as url:
        with PostgresSaver.from_conn_string(url) as saver:
            saver.setup()
            _threads(saver, "sends")
            deployed(V2)
            expected = _checked(saver, sends(Counter(), V2))

        async def pg() -> list[ThreadCheck]:
            async with AsyncPostgresSaver.from_conn_string(url) as saver:
                assert areader_for(saver) is not None and reader_for(saver) is None
                return await _acheck(saver, sends(Counter(), V2))

        assert asyncio.run(pg()) == expected


def test_any_other_saver_is_checked_through_its_own_api() -> None:
    """An in-memory saver (no reader): every thread, or those named in their order, with
    a thread named that has no checkpoint planned ``fresh``."""
    saver = InMemorySaver()
    deployed(V1)
    graph = neograph_ext.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    for thread in ("b", "a"):
        neograph_ext.run(graph, {"log": []}, _cfg(thread))
    assert reader_for(saver) is None

    every = [c.plan.thread_id for c in check_threads(graph)]
    named = [c.plan for c in check_threads(graph, ["b", "nope", "b"], batch=1)]

    assert every == ["a", "b"]
    assert [(p.thread_id, p.kind) for p in named] == [
        ("b", PlanKind.UP_TO_DATE),
        ("nope", PlanKind.FRESH),
    ]
    with pytest.raises(ValueError, match="batch must be at least 1"):
        next(check_threads(graph, batch=0))
