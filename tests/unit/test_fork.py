"""Forking a checkpoint (``_fork``): what is copied, where it is filed, and that nothing
already stored changes. Real graphs compiled by LangGraph alone, on real savers."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import PregelTask

from neograph_ext.drivers._drivers import AsyncDriver, Driver
from neograph_ext.drivers._thread import ThreadCall
from neograph_ext.flows._fork import Fork, address, forked_checkpoint, put_fork, task_ids
from tests.graphs.pipelines import diamond

NULL_TASK = "00000000-0000-0000-0000-000000000000"
"""LangGraph's id for writes of no task (``update_state``, a ``Command``'s update)."""

METADATA: dict[str, Any] = {"source": "fork", "step": 1, "parents": {}, "why": "a test"}


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    with SqliteSaver.from_conn_string(str(tmp_path / "fork.sqlite")) as sqlite_saver:
        yield sqlite_saver


def forked(graph: Any, saver: BaseCheckpointSaver[Any], fork: Fork, old: Any) -> RunnableConfig:
    """The fork written: ``put_fork``'s flow, driven by the sync driver."""
    with Driver(_call(graph, saver, fork)) as driver:
        return driver.run(put_fork(graph, saver, fork, old))


async def _awritten(
    graph: Any, saver: BaseCheckpointSaver[Any], fork: Fork, old: Any
) -> RunnableConfig:
    async with AsyncDriver(_call(graph, saver, fork)) as driver:
        return await driver.run(put_fork(graph, saver, fork, old))


def _call(graph: Any, saver: BaseCheckpointSaver[Any], fork: Fork) -> ThreadCall:
    """What a driver works on: a graph LangGraph compiled alone needs no stamp to fork."""
    thread_id = fork.parent["configurable"]["thread_id"]
    return ThreadCall(graph, fork.parent, None, saver, thread_id)  # type: ignore[arg-type]


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _ran(graph: Any, config: RunnableConfig) -> None:
    graph.invoke({"log": []}, config, durability="sync")


def _at_step(saver: BaseCheckpointSaver[Any], config: RunnableConfig, step: int) -> CheckpointTuple:
    found = [t for t in saver.list(config) if (t.metadata or {}).get("step") == step]
    assert len(found) == 1
    full = saver.get_tuple(found[0].config)  # the listing may leave out pending writes
    assert full is not None
    return full


def _stored(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> dict[str, Any]:
    """Everything the thread holds, per checkpoint id."""
    held = {}
    for listed in list(saver.list(config)):  # read whole first: a listing holds the lock
        tup = saver.get_tuple(listed.config)
        assert tup is not None
        parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        writes = sorted((t, c, repr(v)) for t, c, v in tup.pending_writes or ())
        held[tup.checkpoint["id"]] = (tup.checkpoint, tup.metadata, parent, writes)
    return held


def _b_writes(base: CheckpointTuple, old: list[PregelTask]) -> tuple[str, tuple[Any, ...]]:
    """``b``'s writes in the step after ``a``, as the base holds them (its log entry and
    its edge to ``d``), under the base's id of ``b``'s task."""
    (b,) = [task for task in old if task.name == "b"]
    writes = tuple(
        (channel, value) for task, channel, value in base.pending_writes or () if task == b.id
    )
    assert ("log", ["b"]) in writes
    return b.id, writes


def _diamond_after_a(
    saver: BaseCheckpointSaver[Any],
) -> tuple[Any, RunnableConfig, CheckpointTuple, list[PregelTask]]:
    """A finished run of the diamond, its checkpoint after ``a``, and that one's tasks."""
    config = _thread()
    graph = diamond(Counter()).compile(checkpointer=saver)
    _ran(graph, config)
    base = _at_step(saver, config, 1)
    return graph, config, base, list(graph.get_state(base.config).tasks)


def _fork_of_b(base: CheckpointTuple, old: list[PregelTask]) -> Fork:
    """A fork of the checkpoint after ``a`` holding ``b``'s finished writes."""
    return Fork(address(base), forked_checkpoint(base), METADATA, {}, (_b_writes(base, old),))  # type: ignore[arg-type]


def test_a_forked_checkpoint_is_the_base_under_a_new_newest_id_at_its_step(
    saver: BaseCheckpointSaver[Any],
) -> None:
    config = _thread()
    _ran(diamond(Counter()).compile(checkpointer=saver), config)
    base = _at_step(saver, config, 1)
    newest = saver.get_tuple(config)
    assert newest is not None

    fork = forked_checkpoint(base)

    assert fork["id"] != base.checkpoint["id"]
    # Savers take the greatest id as the head: the fork sorts after every checkpoint.
    assert fork["id"] > newest.checkpoint["id"]
    assert uuid.UUID(fork["id"]).clock_seq == 1  # the base's step, as LangGraph's own ids
    assert fork["ts"] > base.checkpoint["ts"]
    same = ("v", "channel_values", "channel_versions", "versions_seen", "updated_channels")
    for key in same:
        assert fork.get(key) == base.checkpoint.get(key), key
    fork["channel_values"]["carried"] = "changed"
    fork["channel_versions"]["carried"] = "9"
    assert "carried" not in base.checkpoint["channel_values"], "a copy, not the base"
    assert "carried" not in base.checkpoint["channel_versions"], "a copy, not the base"


def test_the_address_names_the_base_checkpoint_with_its_namespace() -> None:
    saver = InMemorySaver()
    config = _thread()
    _ran(diamond(Counter()).compile(checkpointer=saver), config)
    base = _at_step(saver, config, 1)
    # As some savers return it: no namespace, no checkpoint id.
    thread_id = config["configurable"]["thread_id"]
    bare = base._replace(config={"configurable": {"thread_id": thread_id}})

    assert address(bare) == {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": base.checkpoint["id"],
        }
    }


def test_task_ids_match_tasks_by_node_and_path() -> None:
    push = ("__pregel_push", 0)
    old = [
        PregelTask("old-b", "b", ("__pregel_pull", "b")),
        PregelTask("old-w0", "w", push),
        PregelTask("old-w1", "w", ("__pregel_push", 1)),
        PregelTask("old-gone", "gone", ("__pregel_pull", "gone")),
    ]
    new = [
        PregelTask("new-w1", "w", ("__pregel_push", 1)),
        PregelTask("new-b", "b", ("__pregel_pull", "b")),
        PregelTask("new-w0", "w", push),
        PregelTask("new-c", "c", ("__pregel_pull", "c")),
    ]
    assert task_ids(old, new) == {"old-b": "new-b", "old-w0": "new-w0", "old-w1": "new-w1"}


def test_put_fork_writes_one_child_of_the_base_and_changes_nothing_stored(
    saver: BaseCheckpointSaver[Any],
) -> None:
    graph, config, base, old = _diamond_after_a(saver)
    before = _stored(saver, config)

    written = forked(graph, saver, _fork_of_b(base, old), old)

    after = _stored(saver, config)
    fork_id = written["configurable"]["checkpoint_id"]
    assert after.keys() - before.keys() == {fork_id}
    assert {key: after[key] for key in before} == before, "a stored checkpoint changed"
    checkpoint, metadata, parent, _ = after[fork_id]
    assert parent == base.checkpoint["id"] and metadata == METADATA
    assert checkpoint["channel_values"] == base.checkpoint["channel_values"]
    head = saver.get_tuple(config)
    assert head is not None and head.checkpoint["id"] == fork_id


def test_the_forks_writes_are_filed_under_its_own_task_ids(
    saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    config = _thread()
    graph = diamond(runs).compile(checkpointer=saver)
    _ran(graph, config)
    base = _at_step(saver, config, 1)
    old = list(graph.get_state(base.config).tasks)
    null_write = (NULL_TASK, (("value", 7),))
    fork = _fork_of_b(base, old)
    fork = Fork(fork.parent, fork.checkpoint, fork.metadata, {}, (*fork.writes, null_write))

    written = forked(graph, saver, fork, old)

    (new_b,) = [t for t in graph.get_state(written).tasks if t.name == "b"]
    (old_b,) = [t for t in old if t.name == "b"]
    assert new_b.id != old_b.id
    stored = saver.get_tuple(written)
    assert stored is not None
    _, b_writes = _b_writes(base, old)
    expected = [(new_b.id, channel, value) for channel, value in b_writes]
    assert sorted(map(repr, stored.pending_writes or ())) == sorted(
        map(repr, [*expected, (NULL_TASK, "value", 7)])
    )
    # LangGraph hands b's write back to b's task on the fork: only c and d run.
    runs.clear()
    assert graph.invoke(None, config)["log"] == ["a", "b", "c", "d"]
    assert runs == Counter("cd")


class _Recording(InMemorySaver):
    """Records each write in order: ``put`` and ``put_writes``, by checkpoint id."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str]] = []

    def put(self, config: RunnableConfig, checkpoint: Any, *args: Any) -> RunnableConfig:
        self.calls.append(("put", checkpoint["id"]))
        return super().put(config, checkpoint, *args)

    def put_writes(self, config: RunnableConfig, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("put_writes", config["configurable"]["checkpoint_id"]))
        super().put_writes(config, *args, **kwargs)


def test_the_writes_are_saved_before_the_fork_that_holds_them() -> None:
    saver = _Recording()
    graph, _, base, old = _diamond_after_a(saver)
    fork = _fork_of_b(base, old)
    saver.calls.clear()

    forked(graph, saver, fork, old)

    # A kill between the two leaves writes no checkpoint names: the thread as it was.
    assert saver.calls == [("put_writes", fork.checkpoint["id"]), ("put", fork.checkpoint["id"])]


async def test_the_async_twin_writes_the_same_fork() -> None:
    saver = InMemorySaver()
    config = _thread()
    runs: Counter[str] = Counter()
    graph = diamond(runs).compile(checkpointer=saver)
    await graph.ainvoke({"log": []}, config, durability="sync")
    base = _at_step(saver, config, 1)
    old = list((await graph.aget_state(base.config)).tasks)
    before = _stored(saver, config)

    written = await _awritten(graph, saver, _fork_of_b(base, old), old)

    after = _stored(saver, config)
    assert {key: after[key] for key in before} == before, "a stored checkpoint changed"
    _, metadata, parent, writes = after[written["configurable"]["checkpoint_id"]]
    assert parent == base.checkpoint["id"] and metadata == METADATA
    (new_b,) = [t for t in (await graph.aget_state(written)).tasks if t.name == "b"]
    _, b_writes = _b_writes(base, old)
    assert writes == sorted((new_b.id, channel, repr(value)) for channel, value in b_writes)
    runs.clear()
    assert (await graph.ainvoke(None, config))["log"] == ["a", "b", "c", "d"]
    assert runs == Counter("cd")
