"""One conformance matrix: every way out x every channel kind x every saver.

Each cell, through the sync drivers and through the async ones (``drive``), writes a
thread under the old code, changes the code, runs it again, and checks, re-read through
a new saver instance on the same database, that the final
``get_state(cfg).values`` equal a fresh run's under the new code (or the stored values,
for ``migrate`` and ``accept``), and that no kept node ran. A two-turn thread, changed
after both turns, ends as a fresh two-turn run, or is refused naming ``replay_turns``
where an earlier turn's value is still part of the state.

A channel kind is one ``Column`` of ``COLUMNS``: how a node's entry is written into the
thread's history channel and read back. A new kind is one more entry.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel

import neograph_ext as ne
from neograph_ext import PlanKind
from tests.conftest import SAVER_KINDS, _require_pg_dsn
from tests.drive import Drive
from tests.graphs.delta import extend
from tests.graphs.pipelines import as_data, deployed, model, wire

V1 = model("Summary", text=(str, ...))
OPTIONAL = model("Summary", text=(str, ...), words=(int, 0))  # validates: kept
REQUIRED = model("Summary", text=(str, ...), lang=(str, ...))  # does not: re-run or migrate


@dataclass(frozen=True)
class Column:
    """A channel kind: the channels holding the history every node appends to and the
    typed value ``b`` writes."""

    name: str
    annotation: object
    """The channel's annotated type (its reducer included)."""
    entry: Callable[[str], list[Any]]
    """What a node appends."""
    read: Callable[[list[Any]], list[str]]
    """The channel's value as the node names appended, in order."""
    typed: Callable[[type[BaseModel]], object] = lambda summary: summary
    """The typed channel's annotated type, from the type ``b`` writes."""
    listed: bool = False
    """The typed value is held as a one-item list (a ``DeltaChannel``'s type must build
    its empty value)."""


def delta(name: str, frequency: int) -> Column:
    """Both channels in ``DeltaChannel``s snapshotted every ``frequency`` updates."""
    return Column(
        name,
        Annotated[list[str], DeltaChannel(extend, snapshot_frequency=frequency)],
        lambda node: [node],
        lambda value: list(value),
        lambda summary: Annotated[
            list[summary], DeltaChannel(extend, snapshot_frequency=frequency)
        ],
        listed=True,
    )


COLUMNS = [
    Column(
        "reducer",
        Annotated[list[str], operator.add],
        lambda name: [name],
        lambda value: list(value),
    ),
    Column(
        "messages",
        Annotated[list[AnyMessage], add_messages],
        lambda name: [AIMessage(name)],
        lambda value: [str(m.content) for m in value],
    ),
    delta("delta far", 1000),
    delta("delta near", 1),
]


def fan(
    column: Column, summary: type[BaseModel], runs: Counter[str]
) -> StateGraph[Any, Any, Any, Any]:
    """``a -> (b | c) -> d``; ``b`` writes the typed ``summary``."""
    state = TypedDict(  # type: ignore[name-match]  # noqa: UP013
        "Fan", {"history": column.annotation, "summary": column.typed(summary)}, total=False
    )

    def step(name: str) -> Callable[[Any], dict[str, Any]]:
        def fn(state: Any) -> dict[str, Any]:
            runs[name] += 1
            update: dict[str, Any] = {"history": column.entry(name)}
            if name == "b":
                fields = {"text": "t", "lang": "fr"}
                value = summary(**{k: fields[k] for k in summary.model_fields if k in fields})
                update["summary"] = [value] if column.listed else value
            return update

        fn.__name__ = name
        return fn

    builder = StateGraph(state)
    for name in "abcd":
        builder.add_node(name, step(name))
    wire(builder, "a", ["b", "c"], "d")
    return builder


def add_lang(old: Any) -> Any:
    new = REQUIRED(text=as_data(old)["text"], lang="en")
    return [new] if isinstance(old, list) else new


@dataclass(frozen=True)
class Way:
    """One way out of a change: the new code's types and options, and what to expect."""

    new: type[BaseModel]
    options: dict[str, Any]
    kind: PlanKind
    reruns: Counter[str]
    stored: bool = False
    """The final values are the stored ones (migrate, accept), not a fresh run's."""
    accept: bool = False
    plain_call: bool = False
    """Run by a plain ``invoke`` of a graph compiled with ``auto_resume=True``."""


WAYS = {
    "kept siblings": Way(REQUIRED, {}, PlanKind.REWIND, Counter("bd")),
    "version bump": Way(V1, {"versions": {"a": "v2"}}, PlanKind.REWIND, Counter("abcd")),
    "migrate": Way(
        REQUIRED, {"migrations": {"summary": add_lang}}, PlanKind.MIGRATE, Counter(), True
    ),
    "keep_compatible": Way(OPTIONAL, {"keep_compatible": True}, PlanKind.MIGRATE, Counter(), True),
    "accept": Way(REQUIRED, {}, PlanKind.REWIND, Counter(), True, accept=True),
    "auto_resume plain call": Way(
        REQUIRED, {"attach": [ne.AutoResume()]}, PlanKind.REWIND, Counter("bd"), plain_call=True
    ),
}


@contextmanager
def opened(kind: str, path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    """A saver of ``kind`` on the test's database; each call is a new instance."""
    if kind == "sqlite":
        with SqliteSaver.from_conn_string(str(path)) as sqlite_saver:
            yield sqlite_saver
    else:
        with PostgresSaver.from_conn_string(_require_pg_dsn()) as pg:
            pg.setup()
            yield pg


KINDS = [
    pytest.param(k, marks=[pytest.mark.postgres] if k == "postgres" else []) for k in SAVER_KINDS
]


@asynccontextmanager
async def aopened(kind: str, path: Path) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Async twin of ``opened``."""
    if kind == "sqlite":
        async with AsyncSqliteSaver.from_conn_string(str(path)) as lite:
            yield lite
    else:
        async with AsyncPostgresSaver.from_conn_string(_require_pg_dsn()) as pg:
            await pg.setup()
            yield pg


def savers(drive: Drive, kind: str, path: Path) -> Callable[[], AbstractContextManager[Any]]:
    """Opens a new saver instance of ``kind`` and of the drive's mode at each call (the
    same one in memory, which no other instance can read)."""
    memory = InMemorySaver()

    @contextmanager
    def saver() -> Iterator[BaseCheckpointSaver[Any]]:
        if kind == "memory":
            yield memory
        else:
            with drive.opened(lambda: opened(kind, path), lambda: aopened(kind, path)) as fresh:
                yield fresh

    return saver


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("column", COLUMNS, ids=[c.name for c in COLUMNS])
@pytest.mark.parametrize("way", list(WAYS))
def test_the_thread_ends_as_a_fresh_run_or_the_stored_values(
    drive: Drive,
    kind: str,
    column: Column,
    way: str,
    tmp_path: Path,
    config: RunnableConfig,
    runs: Counter[str],
) -> None:
    w = WAYS[way]
    saver = savers(drive, kind, tmp_path / "matrix.sqlite")
    deployed(V1)  # stored values revive as the class of the code running, as in an app
    with saver() as s:
        drive.run(ne.compile(fan(column, V1, runs), checkpointer=s), {"history": []}, config)
        old = ne.compile(fan(column, V1, Counter()), checkpointer=s)
        stored = drive.get_state(old, config).values
    runs.clear()
    deployed(w.new)
    with saver() as s:
        graph = ne.compile(fan(column, w.new, runs), checkpointer=s, **w.options)
        assert drive.plan(graph, config).kind is w.kind
        if w.accept:
            drive.accept(graph, config)
        elif w.plain_call:
            drive.invoke(graph, {"history": []}, config)
        else:
            drive.run(graph, {"history": []}, config)
        assert runs == w.reruns, "a kept node ran, or a changed one did not"
    with saver() as s:  # read back through a new saver instance
        graph = ne.compile(fan(column, w.new, Counter()), checkpointer=s, **w.options)
        final = drive.get_state(graph, config).values
        assert drive.plan(graph, config).kind is PlanKind.UP_TO_DATE
        drive.run(graph, {"history": []}, _fresh(config))
        fresh = drive.get_state(graph, _fresh(config)).values
    _check(column, way, stored, final, fresh)


Step = tuple[Any, dict[str, Any]]
"""One call of ``ne.run``: its input and keywords."""


@dataclass(frozen=True)
class Shape:
    """A graph shape with its own way out: the old code's calls, the new code's, and what
    re-runs. ``build(column, runs, changed)`` declares the changed node's output as
    ``REQUIRED`` (else ``V1``); every node appends to ``history``."""

    build: Callable[[Column, Counter[str], bool], StateGraph[Any, Any, Any, Any]]
    before: list[Step]
    after: list[Step]
    reruns: Counter[str]
    answers: list[Step] = field(default_factory=list)
    """What a fresh thread is answered after ``before`` (a question's answer)."""


def _appends(
    column: Column, runs: Counter[str], name: str, returns: object
) -> Callable[[Any], dict[str, Any]]:
    def fn(state: Any) -> dict[str, Any]:
        runs[name] += 1
        item = state.get("item") if isinstance(state, dict) else None
        return {"history": column.entry(name if item is None else f"{name}{item}")}

    fn.__name__ = name.replace("-", "_")
    fn.__annotations__ = {"state": dict, "return": returns}
    return fn


def _state(column: Column) -> type:
    return TypedDict("Shaped", {"history": column.annotation, "note": str}, total=False)  # type: ignore[operator]


def sends(column: Column, runs: Counter[str], changed: bool) -> StateGraph[Any, Any, Any, Any]:
    """``a`` sends ``w`` three items, then ``d``; ``w`` changed."""
    builder = StateGraph(_state(column))
    builder.add_node("a", _appends(column, runs, "a", V1))
    builder.add_node("w", _appends(column, runs, "w", REQUIRED if changed else V1))
    builder.add_node("d", _appends(column, runs, "d", V1))
    builder.add_edge(START, "a")
    builder.add_conditional_edges("a", lambda _: [Send("w", {"item": i}) for i in (1, 2, 3)])
    builder.add_edge("w", "d")
    builder.add_edge("d", END)
    return builder


def subgraph(column: Column, runs: Counter[str], changed: bool) -> StateGraph[Any, Any, Any, Any]:
    """``a -> sub(inner-1 -> inner-2) -> z``; ``inner-2`` changed."""
    inner = StateGraph(_state(column))
    inner.add_node("inner-1", _appends(column, runs, "inner-1", V1))
    inner.add_node("inner-2", _appends(column, runs, "inner-2", REQUIRED if changed else V1))
    inner.add_edge(START, "inner-1")
    inner.add_edge("inner-1", "inner-2")
    builder = StateGraph(_state(column))
    builder.add_node("a", _appends(column, runs, "a", V1))
    builder.add_node("sub", ne.compile(inner))
    builder.add_node("z", _appends(column, runs, "z", V1))
    wire(builder, "a", "sub", "z")
    return builder


def chain(column: Column, runs: Counter[str], changed: bool) -> StateGraph[Any, Any, Any, Any]:
    """``a -> b`` on the first turn, ``b`` alone on later ones; ``a`` changed, so the
    first turn is the one to re-run."""
    first = _appends(column, runs, "a", REQUIRED if changed else V1)

    def a(state: Any) -> dict[str, Any]:
        # A value no later turn writes again: the first turn's change stays live.
        return {**first(state), "note": "a"}

    a.__annotations__ = first.__annotations__
    builder = StateGraph(_state(column))
    builder.add_node("a", a)
    builder.add_node("b", _appends(column, runs, "b", V1))
    builder.add_conditional_edges(
        START, lambda state: "a" if len(state["history"]) == 1 else "b", ["a", "b"]
    )
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return builder


def asking(column: Column, runs: Counter[str], changed: bool) -> StateGraph[Any, Any, Any, Any]:
    """``a -> ask -> z``, ``ask`` waiting on an ``interrupt``; ``a`` changed."""

    def ask(state: Any) -> dict[str, Any]:
        runs["ask"] += 1
        return {"history": column.entry(f"ask={interrupt('approve?')}")}

    builder = StateGraph(_state(column))
    builder.add_node("a", _appends(column, runs, "a", REQUIRED if changed else V1))
    builder.add_node("ask", ask)
    builder.add_node("z", _appends(column, runs, "z", V1))
    wire(builder, "a", "ask", "z")
    return builder


def _turn(column: Column, text: str) -> dict[str, Any]:
    return {"history": column.entry(text)}


SHAPES = {
    "send fan-out": lambda c: Shape(sends, [(_turn(c, "in"), {})], [(None, {})], Counter("wwwd")),
    "subgraph": lambda c: Shape(
        subgraph, [(_turn(c, "in"), {})], [(None, {})], Counter(["inner-1", "inner-2", "z"])
    ),
    "replay_turns": lambda c: Shape(
        chain,
        [(_turn(c, "in1"), {}), (_turn(c, "in2"), {})],
        [(None, {"replay_turns": True})],
        Counter("abb"),
    ),
    "re-asked interrupt": lambda c: Shape(
        asking,
        [(_turn(c, "in"), {})],
        [(Command(resume="yes"), {}), (Command(resume="yes"), {})],
        Counter(["a", "ask", "ask", "z"]),
        [(Command(resume="yes"), {})],
    ),
}
"""Per shape, from the column: the ``Shape``."""


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("column", COLUMNS, ids=[c.name for c in COLUMNS])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_shape_ends_as_a_fresh_run(
    drive: Drive,
    kind: str,
    column: Column,
    shape: str,
    tmp_path: Path,
    config: RunnableConfig,
    runs: Counter[str],
) -> None:
    sh = SHAPES[shape](column)
    saver = savers(drive, kind, tmp_path / "matrix.sqlite")
    with saver() as s:
        graph = ne.compile(sh.build(column, Counter(), False), checkpointer=s)
        for given, options in sh.before:
            drive.run(graph, given, config, **options)
    with saver() as s:
        graph = ne.compile(sh.build(column, runs, True), checkpointer=s)
        for given, options in sh.after:
            drive.run(graph, given, config, **options)
        assert runs == sh.reruns, "a kept node ran, or a changed one did not"
    with saver() as s:  # read back through a new saver instance
        graph = ne.compile(sh.build(column, Counter(), True), checkpointer=s)
        final = drive.get_state(graph, config).values
        assert drive.plan(graph, config).kind is PlanKind.UP_TO_DATE
        for given, options in sh.before + sh.answers:
            drive.run(graph, given, _fresh(config), **options)
        fresh = drive.get_state(graph, _fresh(config)).values
    assert column.read(final["history"]) == column.read(fresh["history"])


def _fresh(config: RunnableConfig) -> RunnableConfig:
    """Another thread, for a fresh run under the new code."""
    return {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-fresh"}}


def _check(
    column: Column,
    way: str,
    stored: dict[str, Any],
    final: dict[str, Any],
    fresh: dict[str, Any],
) -> None:
    """The final values are a fresh run's, or the stored ones (``Way.stored``), in order."""
    w = WAYS[way]
    expected = stored if w.stored else fresh
    assert column.read(final["history"]) == column.read(expected["history"])
    assert len(column.read(final["history"])) == 4, "an entry is missing or repeated"
    if way == "migrate":
        assert as_data(final["summary"]) == {"text": "t", "lang": "en"}
    elif w.stored:
        assert as_data(final["summary"])["text"] == as_data(stored["summary"])["text"]
    else:
        assert as_data(final["summary"]) == as_data(fresh["summary"])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("column", COLUMNS, ids=[c.name for c in COLUMNS])
@pytest.mark.parametrize("replay", [False, True], ids=["latest turn", "replay_turns"])
def test_two_turns_end_as_a_fresh_two_turn_run_or_block(
    drive: Drive,
    kind: str,
    column: Column,
    replay: bool,
    tmp_path: Path,
    config: RunnableConfig,
    runs: Counter[str],
) -> None:
    # A DeltaChannel keeps every turn's summary (turn 1's, of the old type, is still in
    # the value): only replaying turn 1 ends as a fresh run. A plain channel holds turn
    # 2's alone: rewinding the latest turn does.
    turns = [{"history": column.entry(f"in{i}")} for i in (1, 2)]
    saver = savers(drive, kind, tmp_path / "matrix.sqlite")
    deployed(V1)
    with saver() as s:
        old = ne.compile(fan(column, V1, Counter()), checkpointer=s)
        for given in turns:
            drive.run(old, given, config)
    deployed(REQUIRED)
    policy = ne.ResumePolicy(replay_turns=replay)
    with saver() as s:
        graph = ne.compile(fan(column, REQUIRED, runs), checkpointer=s, resume=policy)
        if column.listed and not replay:
            with pytest.raises(ne.CheckpointSchemaError, match="replay_turns"):
                drive.run(graph, None, config)
            assert runs == Counter()
            return
        drive.run(graph, None, config)
        assert runs == (Counter(a=1, b=2, c=1, d=2) if column.listed else Counter("bd"))
    with saver() as s:  # read back through a new saver instance
        graph = ne.compile(fan(column, REQUIRED, Counter()), checkpointer=s, resume=policy)
        final = drive.get_state(graph, config).values
        assert drive.plan(graph, config).kind is PlanKind.UP_TO_DATE
        for given in turns:
            drive.run(graph, given, _fresh(config))
        fresh = drive.get_state(graph, _fresh(config)).values
    assert column.read(final["history"]) == column.read(fresh["history"])
    assert _items(final["summary"]) == _items(fresh["summary"])


def _items(value: Any) -> list[dict[str, Any]]:
    """A summary channel's value as data, item by item (a ``DeltaChannel`` holds a list)."""
    return [as_data(v) for v in (value if isinstance(value, list) else [value])]
