"""Graphs whose state lives in a ``DeltaChannel`` or a plain reducer channel, and a
fresh saver instance on a saver's database to read a thread back with."""

from __future__ import annotations

import operator
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph

Builder = StateGraph[Any, Any, Any, Any]


def extend(state: list[str], writes: Sequence[list[str]]) -> list[str]:
    """A batching-invariant reducer, as ``DeltaChannel`` requires."""
    return [*state, *(item for write in writes for item in write)]


class Far(TypedDict, total=False):
    """A DeltaChannel whose snapshot is far back: only the first checkpoint has one."""

    log: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=1000)]


class Near(TypedDict, total=False):
    """A DeltaChannel snapshotted at every update."""

    log: Annotated[list[str], DeltaChannel(extend, snapshot_frequency=1)]


class Plain(TypedDict, total=False):
    """The same channel as a plain reducer channel."""

    log: Annotated[list[str], operator.add]


STATES: dict[str, type] = {"delta-far": Far, "delta-near": Near, "plain": Plain}


def fan(state: type, runs: Counter[str], b: str = "b1", crash: str | None = None) -> Builder:
    """``a -> (b | c) -> d``, each appending its label to ``log``; ``b`` writes ``b``."""

    def step(name: str, label: str) -> Callable[[dict[str, Any]], dict[str, list[str]]]:
        def fn(values: dict[str, Any]) -> dict[str, list[str]]:
            runs[name] += 1
            if name == crash:
                raise RuntimeError(f"{name} crashed")
            return {"log": [label]}

        return fn

    builder = StateGraph(state)
    for name, label in (("a", "a1"), ("b", b), ("c", "c1"), ("d", "d1")):
        builder.add_node(name, step(name, label))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("a", "c")
    builder.add_edge(["b", "c"], "d")
    builder.add_edge("d", END)
    return builder


@contextmanager
def reopened(saver: BaseCheckpointSaver[Any], tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A new sync saver instance on ``saver``'s database (the same one in memory, which
    no other instance can read)."""
    if isinstance(saver, InMemorySaver):
        yield saver
    elif isinstance(saver, SqliteSaver | AsyncSqliteSaver):
        if isinstance(saver, SqliteSaver):
            path = saver.conn.execute("PRAGMA database_list").fetchone()[2]
        else:
            path = str(tmp_path / "async_saver.sqlite")  # conftest's async_saver
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            yield SqliteSaver(conn)
        finally:
            conn.close()
    else:
        assert isinstance(saver, PostgresSaver | AsyncPostgresSaver)
        with PostgresSaver.from_conn_string(os.environ["NEOGRAPH_EXT_PG_DSN"]) as fresh:
            yield fresh
