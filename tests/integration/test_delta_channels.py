"""Threads whose state lives in a ``DeltaChannel``, beside a plain reducer channel.

A ``DeltaChannel`` stores no value in ``channel_values`` (only a snapshot every
``snapshot_frequency`` updates): what a run returns must be what LangGraph rebuilds,
and every fork neograph-ext writes must rebuild to exactly its base's values. Each
case counts node executions and reads the final state back through a new saver
instance on the same database; ``delta-far`` has its only snapshot at the thread's
first checkpoint, ``delta-near`` one at every update.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.integration.delta_support import STATES, fan, reopened

LOG = ["a1", "b1", "c1", "d1"]
CHANGED = ["a1", "b2", "c1", "d1"]
"""What a fresh run gives once ``b`` writes ``b2``."""


@pytest.fixture(params=list(STATES))
def state(request: pytest.FixtureRequest) -> type:
    return STATES[request.param]


def _read_back(
    state: type, saver: BaseCheckpointSaver[Any], tmp_path: Path, config: RunnableConfig
) -> Any:
    with reopened(saver, tmp_path) as fresh:
        return ne.compile(fan(state, Counter()), checkpointer=fresh).get_state(config).values


def test_a_complete_thread_returns_what_langgraph_rebuilds(
    state: type, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(state, runs), checkpointer=saver)
    assert ne.run(graph, {"log": []}, config) == {"log": LOG}
    runs.clear()
    assert ne.run(graph, {"log": []}, config) == {"log": LOG}  # up to date
    assert list(ne.stream(graph, {"log": []}, config, stream_mode="values")) == [{"log": LOG}]
    assert runs == Counter()


async def test_a_complete_thread_returns_what_langgraph_rebuilds_async(
    state: type, async_saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(state, runs), checkpointer=async_saver)
    assert await ne.arun(graph, {"log": []}, config) == {"log": LOG}
    runs.clear()
    assert await ne.arun(graph, {"log": []}, config) == {"log": LOG}
    chunks = [c async for c in ne.astream(graph, {"log": []}, config, stream_mode="values")]
    assert chunks == [{"log": LOG}]
    assert runs == Counter()


def test_a_keeping_rewind_holds_a_fresh_runs_values(
    state: type, saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path
) -> None:
    ne.run(ne.compile(fan(state, Counter()), checkpointer=saver), {"log": []}, config)
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(state, runs, b="b2"), checkpointer=saver, versions={"b": "2"})
    assert ne.plan(graph, config).kept == frozenset({"a", "c"})
    assert ne.run(graph, {"log": []}, config) == {"log": CHANGED}
    assert runs == Counter({"b": 1, "d": 1})  # the sibling `c` was kept
    assert _read_back(state, saver, tmp_path, config) == {"log": CHANGED}
    runs.clear()
    assert ne.run(graph, {"log": []}, config) == {"log": CHANGED}
    assert runs == Counter()


async def test_a_keeping_rewind_holds_a_fresh_runs_values_async(
    state: type, async_saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path
) -> None:
    await ne.arun(ne.compile(fan(state, Counter()), checkpointer=async_saver), {"log": []}, config)
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(state, runs, b="b2"), checkpointer=async_saver, versions={"b": "2"})
    assert await ne.arun(graph, {"log": []}, config) == {"log": CHANGED}
    assert runs == Counter({"b": 1, "d": 1})
    assert _read_back(state, async_saver, tmp_path, config) == {"log": CHANGED}


def test_an_accepted_crashed_thread_keeps_its_finished_sibling_once(
    state: type, saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path
) -> None:
    """``accept`` forks the head and copies its pending writes (``b``'s) onto the fork."""
    crashing = ne.compile(fan(state, Counter(), crash="c"), checkpointer=saver)
    with pytest.raises(RuntimeError, match="c crashed"):
        ne.run(crashing, {"log": []}, config)
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(state, runs), checkpointer=saver, versions={"d": "2"})
    ne.accept(graph, config)
    assert ne.run(graph, None, config) == {"log": LOG}
    assert runs == Counter({"c": 1, "d": 1})
    assert _read_back(state, saver, tmp_path, config) == {"log": LOG}


async def test_an_accepted_crashed_thread_keeps_its_finished_sibling_once_async(
    state: type, async_saver: BaseCheckpointSaver[Any], config: RunnableConfig, tmp_path: Path
) -> None:
    crashing = ne.compile(fan(state, Counter(), crash="c"), checkpointer=async_saver)
    with pytest.raises(RuntimeError, match="c crashed"):
        await ne.arun(crashing, {"log": []}, config)
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(state, runs), checkpointer=async_saver, versions={"d": "2"})
    await ne.aaccept(graph, config)
    assert await ne.arun(graph, None, config) == {"log": LOG}
    assert runs == Counter({"c": 1, "d": 1})
    assert _read_back(state, async_saver, tmp_path, config) == {"log": LOG}


@pytest.mark.parametrize("before, after", [("plain", "delta-far"), ("delta-near", "plain")])
def test_a_channel_that_only_changed_its_langgraph_channel_class_is_no_change(
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    before: str,
    after: str,
) -> None:
    """LangGraph reads the old storage itself (its own migration suites): nothing re-runs,
    and a new turn continues the stored list."""
    ne.run(ne.compile(fan(STATES[before], Counter()), checkpointer=saver), {"log": []}, config)
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(STATES[after], runs), checkpointer=saver)
    plan = ne.plan(graph, config)
    assert plan.kind is ne.PlanKind.UP_TO_DATE
    assert [n for n in plan.notes if n.startswith("channel `log`: only the LangGraph")]
    assert ne.run(graph, {"log": []}, config) == {"log": LOG}
    assert ne.run(graph, {"log": ["new"]}, config) == {"log": [*LOG, "new", *LOG]}
    assert runs == Counter("abcd")
    assert _read_back(STATES[after], saver, tmp_path, config) == {"log": [*LOG, "new", *LOG]}


@pytest.mark.parametrize("changed, reran", [("a", "abcd"), ("d", "d")])
def test_a_rewind_through_langgraphs_time_travel_holds_a_fresh_runs_values(
    state: type,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    changed: str,
    reran: str,
) -> None:
    """Nothing kept: the rewind is LangGraph's own fork of the target, whose pending
    writes (the old branch's) must not reach the new branch."""
    ne.run(ne.compile(fan(state, Counter()), checkpointer=saver), {"log": []}, config)
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(state, runs), checkpointer=saver, versions={changed: "2"})
    assert ne.run(graph, {"log": []}, config) == {"log": LOG}
    assert runs == Counter(reran)
    assert _read_back(state, saver, tmp_path, config) == {"log": LOG}


def test_a_named_complete_checkpoint_returns_its_state_and_writes_nothing(
    state: type, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    """Resuming a named checkpoint would be time travel, which writes a fork."""
    runs: Counter[str] = Counter()
    graph = ne.compile(fan(state, runs), checkpointer=saver)
    ne.run(graph, {"log": []}, config)
    newest = saver.get_tuple(config)
    assert newest is not None
    named: RunnableConfig = {
        "configurable": {**config["configurable"], **newest.config["configurable"]}
    }
    checkpoints = len(list(saver.list(config)))
    runs.clear()
    assert ne.run(graph, {"log": []}, named) == {"log": LOG}
    assert len(list(saver.list(config))) == checkpoints
    assert ne.run(graph, {"log": []}, config) == {"log": LOG}
    assert runs == Counter()
