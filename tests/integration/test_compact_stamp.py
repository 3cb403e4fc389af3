"""The compact stamp: at most 256 bytes in any metadata, the description stored once.

Per saver: what neograph-ext adds to checkpoint metadata and to streamed chunks, measured
against the same graph compiled plainly; changes still found with field-level diffs; a
missing description counted as a change; a compiled graph identical to LangGraph's.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

import neograph_ext as ne
from neograph_ext._graph import StampedGraph
from neograph_ext._stamp import MAX_METADATA_BYTES
from neograph_ext._stamp_store import THREAD_PREFIX, save
from tests.integration import big
from tests.integration.pipelines import linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _size(metadata: Any) -> int:
    return len(json.dumps(metadata, sort_keys=True, default=str).encode())


def _metadata_by_step(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> dict[int, Any]:
    return {t.metadata["step"]: t.metadata for t in saver.list(config)}


def _added(saver: BaseCheckpointSaver[Any], plain: RunnableConfig, ours: RunnableConfig) -> int:
    """The most bytes any of ``ours``'s checkpoints carries beyond ``plain``'s, per step."""
    before, after = _metadata_by_step(saver, plain), _metadata_by_step(saver, ours)
    assert before.keys() == after.keys() and before
    return max(_size(after[step]) - _size(before[step]) for step in before)


@pytest.mark.parametrize(
    ("make", "input"),
    [(big.wide, {}), (big.chat, {"messages": [("user", "hi")]})],
    ids=["30-nodes-nested-models", "messages-agent"],
)
def test_checkpoint_metadata_grows_by_at_most_256_bytes(
    saver: BaseCheckpointSaver[Any],
    make: Callable[[Counter[str]], StateGraph[Any, Any, Any, Any]],
    input: Any,
) -> None:
    plain, ours = _thread(), _thread()
    make(Counter()).compile(checkpointer=saver).invoke(input, plain, durability="sync")
    graph = ne.compile(make(Counter()), checkpointer=saver)
    assert len(graph.neograph_ext_stamp.encode()) > 4 * MAX_METADATA_BYTES
    ne.run(graph, input, ours)

    added = _added(saver, plain, ours)
    assert 0 < added <= MAX_METADATA_BYTES


def test_a_streamed_message_chunk_carries_at_most_256_extra_bytes(
    saver: BaseCheckpointSaver[Any],
) -> None:
    input = {"messages": [("user", "hi")]}
    plain = list(
        big.chat(Counter())
        .compile(checkpointer=saver)
        .stream(input, _thread(), stream_mode="messages")
    )
    graph = ne.compile(big.chat(Counter()), checkpointer=saver)
    ours = list(ne.stream(graph, input, _thread(), stream_mode="messages"))
    assert len(plain) == len(ours) > 0
    assert [m.content for m, _ in plain] == [m.content for m, _ in ours]
    extra = [
        _size(ours_md) - _size(plain_md)
        for (_, plain_md), (_, ours_md) in zip(plain, ours, strict=True)
    ]
    assert all(0 < n <= MAX_METADATA_BYTES for n in extra), extra


def test_a_change_deep_inside_a_large_model_is_found_minimal_with_its_diff(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    ne.run(ne.compile(big.wide(runs), checkpointer=saver), {}, config)
    runs.clear()
    graph = ne.compile(big.wide(runs, changed=17), checkpointer=saver)

    plan = ne.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"n17"}
    assert plan.kept == {f"n{i:02d}" for i in range(17)}
    assert any("score: int -> float" in line for c in plan.changes for line in c.diff), plan
    ne.run(graph, None, config)
    assert runs == Counter(f"n{i:02d}" for i in range(17, big.NODES))


def test_a_missing_description_counts_as_changed_never_as_unchanged(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    old = ne.compile(linear(runs, {"c": V1}), checkpointer=saver)
    ne.run(old, {"log": []}, config)
    saver.delete_thread(THREAD_PREFIX + old.neograph_ext_stamp.id)
    # The graph that wrote the thread needs no description to know it is current.
    assert ne.plan(old, config).kind is ne.PlanKind.UP_TO_DATE

    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    plan = ne.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.step == 0
    assert plan.invalidated_nodes == set("abcd") and plan.rerun == set("abcd")
    assert any("may re-run more than the changed nodes" in note for note in plan.notes)
    runs.clear()
    assert ne.run(graph, None, config)["log"] == list("abcd")
    assert runs == Counter("abcd")
    assert ne.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_planning_fetches_each_distinct_description_once(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    ne.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    bumped = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver, versions={"d": "2"})
    ne.run(bumped, None, config)  # rewinds d: the lineage now holds two old stamps
    fetched: list[str] = []
    real = saver.get_tuple

    def counting(cfg: RunnableConfig) -> Any:
        fetched.append(cfg["configurable"]["thread_id"])
        return real(cfg)

    monkeypatch.setattr(saver, "get_tuple", counting)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver, versions={"d": "2"})
    plan = ne.plan(graph, config)

    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    descriptions = [t for t in fetched if t.startswith(THREAD_PREFIX)]
    assert sorted(descriptions) == sorted(set(descriptions)) and len(descriptions) == 2


def test_a_checkpointer_injected_at_run_time_gets_the_description(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    served = ne.compile(linear(Counter(), {"c": V1})).copy(update={"checkpointer": saver})
    served.invoke({"log": []}, config)  # as a server runs it: no run(), its own saver
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    plan = ne.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    assert "Analysis.score: int -> float" in str(plan)


async def test_the_async_path_stores_and_reads_descriptions(
    async_saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    await ne.arun(ne.compile(linear(Counter(), {"c": V1}), checkpointer=async_saver), {}, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=async_saver)
    plan = await ne.aplan(graph, config)
    assert plan.invalidated_nodes == {"c"} and "Analysis.score: int -> float" in str(plan)


class Typed(BaseModel):
    value: str


def _typed() -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(Typed)
    builder.add_node("a", lambda s: {"value": s.value + "_a"})
    builder.add_edge(START, "a")
    builder.add_edge("a", END)
    return builder


def test_the_compiled_graph_keeps_everything_langgraph_sets() -> None:
    plain, ours = _typed().compile(), ne.compile(_typed())
    assert set(vars(ours)) == set(vars(plain))
    assert all(
        (getattr(ours, name) is None) == (getattr(plain, name) is None)
        for name in vars(plain)
        if name != "config"  # ours carries the stamp reference in its metadata
    )
    assert set(ours.config["metadata"]) == {"neograph_ext"}


def test_v2_output_is_the_typed_state(saver: BaseCheckpointSaver[Any]) -> None:
    graph = ne.compile(_typed(), checkpointer=saver)
    result = graph.invoke({"value": "x"}, _thread(), version="v2")
    assert isinstance(result.value, Typed) and result.value.value == "x_a"
    parts = list(graph.stream({"value": "x"}, _thread(), version="v2", stream_mode="values"))
    assert parts and all(isinstance(part["data"], Typed) for part in parts)


class Flow(TypedDict, total=False):
    text: str
    inner: str


def test_a_graph_run_inside_a_node_does_not_inherit_the_runs_mark(
    saver: BaseCheckpointSaver[Any],
) -> None:
    runs: Counter[str] = Counter()

    def work(state: Flow) -> Flow:
        runs["work"] += 1
        return {"inner": state["text"] + "!"}

    inner = ne.compile(
        StateGraph(Flow).add_node("work", work).add_edge(START, "work"), checkpointer=saver
    )
    inner_config = _thread()

    def outer_node(state: Flow) -> Flow:
        return {"inner": inner.invoke({"text": "same"}, inner_config)["inner"]}

    outer = ne.compile(
        StateGraph(Flow).add_node("outer", outer_node).add_edge(START, "outer"),
        checkpointer=saver,
    )
    ne.run(outer, {"text": "outer input"}, _thread())
    assert runs == Counter({"work": 1})

    # The inner thread recorded its own input, so the same input asks for its result.
    assert ne.run(inner, {"text": "same"}, inner_config) == {"text": "same", "inner": "same!"}
    assert runs == Counter({"work": 1})


def test_forged_run_metadata_never_skips_the_check(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    with pytest.raises(RuntimeError):
        ne.run(ne.compile(linear(runs, {"c": V1}, crash="d"), checkpointer=saver), {}, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    stamp_id = graph.neograph_ext_stamp.id
    forged = {
        "neograph_ext_verified": stamp_id,
        "neograph_ext_run": f"{stamp_id[:16]}.up_to_date.",
    }
    # A plain call on top of the stale lineage, its metadata claiming a verified run.
    graph.invoke(None, {**config, "metadata": forged})
    runs.clear()

    assert ne.plan(graph, config).kind is ne.PlanKind.REWIND
    assert ne.run(graph, None, config)["log"] == list("abcd")
    assert runs == Counter("cd")


def test_a_plain_call_that_crashes_still_stores_its_description(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    crashing = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(RuntimeError):
        crashing.invoke({"log": []}, config)  # a plain call, as a server makes it
    plan = ne.plan(ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver), config)
    assert plan.invalidated_nodes == {"c"} and "Analysis.score: int -> float" in str(plan)


class _Recording(InMemorySaver):
    """Records the thread of every checkpoint written, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[str] = []

    async def aput(self, config: RunnableConfig, *args: Any) -> RunnableConfig:
        self.written.append(config["configurable"]["thread_id"])
        return await super().aput(config, *args)


async def test_a_plain_call_adds_no_write_before_langgraphs_own() -> None:
    saver = _Recording()
    graph = ne.compile(linear(Counter()), checkpointer=saver)
    config = _thread()
    await graph.ainvoke({"log": []}, config)
    assert saver.written[0] == config["configurable"]["thread_id"]
    assert saver.written[-1].startswith(THREAD_PREFIX)
    assert sum(t.startswith(THREAD_PREFIX) for t in saver.written) == 1
    await graph.ainvoke({"log": []}, _thread())
    assert sum(t.startswith(THREAD_PREFIX) for t in saver.written) == 1  # once per saver


async def test_closing_the_stream_early_cancels_running_tasks_at_once() -> None:
    cancelled: list[str] = []

    async def quick(state: Flow) -> Flow:
        return {"text": "quick"}

    async def slow(state: Flow) -> Flow:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return {"inner": "slow"}

    builder = StateGraph(Flow).add_node("quick", quick).add_node("slow", slow)
    builder.add_edge(START, "quick").add_edge(START, "slow")
    graph = ne.compile(builder, checkpointer=InMemorySaver())
    async with aclosing(graph.astream({"text": ""}, _thread())) as chunks:
        async for _ in chunks:
            break
    assert cancelled == ["slow"]


def test_the_graph_serialises_as_langgraphs_own() -> None:
    def parent(compile_child: Callable[[StateGraph[Any, Any, Any, Any]], Any]) -> Any:
        child = StateGraph(Flow).add_node("inner", lambda s: s).add_edge(START, "inner")
        builder = StateGraph(Flow).add_node("child", compile_child(child))
        return builder.add_edge(START, "child")

    plain = parent(lambda b: b.compile()).compile()
    ours = ne.compile(parent(ne.compile))
    assert json.dumps(ours.get_graph(xray=True).to_json()) == json.dumps(
        plain.get_graph(xray=True).to_json()
    )
    assert type(ours).__name__ == "CompiledStateGraph" and isinstance(ours, StampedGraph)


def _fetching(saver: BaseCheckpointSaver[Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads ``saver.get_tuple`` is asked for from now on."""
    fetched: list[str] = []
    real = saver.get_tuple

    def counting(cfg: RunnableConfig) -> Any:
        fetched.append(cfg["configurable"]["thread_id"])
        return real(cfg)

    monkeypatch.setattr(saver, "get_tuple", counting)
    return fetched


def _afetching(saver: BaseCheckpointSaver[Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Async twin of ``_fetching``, for ``saver.aget_tuple`` (the memory saver's calls
    its own ``get_tuple``, left uncounted so each fetch counts once)."""
    fetched: list[str] = []
    real = saver.aget_tuple

    async def counting(cfg: RunnableConfig) -> Any:
        fetched.append(cfg["configurable"]["thread_id"])
        return await real(cfg)

    monkeypatch.setattr(saver, "aget_tuple", counting)
    return fetched


def test_a_found_description_is_read_once_per_graph(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    ne.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    fetched = _fetching(saver, monkeypatch)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    first, second = ne.plan(graph, config), ne.plan(graph, config)

    assert first == second and second.invalidated_nodes == {"c"}
    assert "Analysis.score: int -> float" in str(second)
    assert sum(t.startswith(THREAD_PREFIX) for t in fetched) == 1


async def test_a_found_description_is_read_once_per_graph_async(
    async_saver: BaseCheckpointSaver[Any], config: RunnableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ne.arun(ne.compile(linear(Counter(), {"c": V1}), checkpointer=async_saver), {}, config)
    fetched = _afetching(async_saver, monkeypatch)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=async_saver)
    first, second = await ne.aplan(graph, config), await ne.aplan(graph, config)

    assert first == second and "Analysis.score: int -> float" in str(second)
    assert sum(t.startswith(THREAD_PREFIX) for t in fetched) == 1


def test_a_missing_description_is_looked_up_again_until_found(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    old = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    ne.run(old, {"log": []}, config)
    saver.delete_thread(THREAD_PREFIX + old.neograph_ext_stamp.id)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    assert ne.plan(graph, config).invalidated_nodes == set("abcd")

    save(saver, old.neograph_ext_stamp)  # as another process storing it meanwhile
    plan = ne.plan(graph, config)
    assert plan.invalidated_nodes == {"c"} and "Analysis.score: int -> float" in str(plan)


def _listing(saver: BaseCheckpointSaver[Any], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads ``saver.list`` is asked for from now on."""
    listed: list[str] = []
    real = saver.list

    def counting(cfg: RunnableConfig | None, **kwargs: Any) -> Any:
        listed.append((cfg or {}).get("configurable", {}).get("thread_id"))
        return real(cfg, **kwargs)

    monkeypatch.setattr(saver, "list", counting)
    return listed


def test_plan_reads_the_head_and_the_thread_in_one_listing(
    saver: BaseCheckpointSaver[Any], config: RunnableConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    ne.run(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {"log": []}, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver)
    ne.plan(graph, config)  # finds the old stamp's description, kept by the graph
    fetched, listed = _fetching(saver, monkeypatch), _listing(saver, monkeypatch)
    plan = ne.plan(graph, config)

    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    # No description is fetched: the graph kept the one it found.
    thread = config["configurable"]["thread_id"]
    assert fetched == [thread] and listed == [thread]


class _OldestFirst(InMemorySaver):
    """A saver that lists a thread oldest first (its async listing follows, as
    ``InMemorySaver.alist`` reads ``list``)."""

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Any:
        return iter(reversed([*super().list(config, **kwargs)]))


async def _forked_thread(saver: InMemorySaver, config: RunnableConfig) -> ne.ResumePlan:
    """A thread rewound once (so it holds a branch), planned by a graph changed again."""
    await ne.arun(ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver), {}, config)
    bumped = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver, versions={"d": "2"})
    await ne.arun(bumped, None, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver, versions={"d": "2"})
    plan = ne.plan(graph, config)
    assert plan == await ne.aplan(graph, config)
    return plan


async def test_a_saver_listing_oldest_first_plans_as_one_listing_newest_first() -> None:
    newest_first = await _forked_thread(InMemorySaver(), _thread())
    oldest_first = await _forked_thread(_OldestFirst(), _thread())

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
