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
from tests.drive import Drive, Saver
from tests.graphs.delta import STATES, fan
from tests.integration.savers import reopened

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
    drive: Drive, state: type, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(fan(state, runs), checkpointer=saver)
    assert drive.run(graph, {"log": []}, config) == {"log": LOG}
    runs.clear()
    assert drive.run(graph, {"log": []}, config) == {"log": LOG}  # up to date
    assert list(drive.stream(graph, {"log": []}, config, stream_mode="values")) == [{"log": LOG}]
    assert runs == Counter()


def test_a_keeping_rewind_holds_a_fresh_runs_values(
    drive: Drive,
    state: type,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    runs: Counter[str],
) -> None:
    drive.run(ne.compile(fan(state, Counter()), checkpointer=saver), {"log": []}, config)
    graph = ne.compile(fan(state, runs, b="b2"), checkpointer=saver, versions={"b": "2"})
    assert drive.plan(graph, config).kept == frozenset({"a", "c"})
    assert drive.run(graph, {"log": []}, config) == {"log": CHANGED}
    assert runs == Counter({"b": 1, "d": 1})  # the sibling `c` was kept
    assert _read_back(state, saver, tmp_path, config) == {"log": CHANGED}
    runs.clear()
    assert drive.run(graph, {"log": []}, config) == {"log": CHANGED}
    assert runs == Counter()


def test_an_accepted_crashed_thread_keeps_its_finished_sibling_once(
    drive: Drive,
    state: type,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    runs: Counter[str],
) -> None:
    """``accept`` forks the head and copies its pending writes (``b``'s) onto the fork."""
    crashing = ne.compile(fan(state, Counter(), crash="c"), checkpointer=saver)
    with pytest.raises(RuntimeError, match="c crashed"):
        drive.run(crashing, {"log": []}, config)
    graph = ne.compile(fan(state, runs), checkpointer=saver, versions={"d": "2"})
    drive.accept(graph, config)
    assert drive.run(graph, None, config) == {"log": LOG}
    assert runs == Counter({"c": 1, "d": 1})
    assert _read_back(state, saver, tmp_path, config) == {"log": LOG}


@pytest.mark.parametrize("before, after", [("plain", "delta-far"), ("delta-near", "plain")])
def test_a_channel_that_only_changed_its_langgraph_channel_class_is_no_change(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    before: str,
    after: str,
    runs: Counter[str],
) -> None:
    """LangGraph reads the old storage itself (its own migration suites): nothing re-runs,
    and a new turn continues the stored list."""
    drive.run(ne.compile(fan(STATES[before], Counter()), checkpointer=saver), {"log": []}, config)
    graph = ne.compile(fan(STATES[after], runs), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.UP_TO_DATE
    assert [n for n in plan.notes if n.startswith("channel `log`: only the LangGraph")]
    assert drive.run(graph, {"log": []}, config) == {"log": LOG}
    assert drive.run(graph, {"log": ["new"]}, config) == {"log": [*LOG, "new", *LOG]}
    assert runs == Counter("abcd")
    assert _read_back(STATES[after], saver, tmp_path, config) == {"log": [*LOG, "new", *LOG]}


@pytest.mark.parametrize("changed, reran", [("a", "abcd"), ("d", "d")])
def test_a_rewind_through_langgraphs_time_travel_holds_a_fresh_runs_values(
    drive: Drive,
    state: type,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    changed: str,
    reran: str,
    runs: Counter[str],
) -> None:
    """Nothing kept: the rewind is LangGraph's own fork of the target, whose pending
    writes (the old branch's) must not reach the new branch."""
    drive.run(ne.compile(fan(state, Counter()), checkpointer=saver), {"log": []}, config)
    graph = ne.compile(fan(state, runs), checkpointer=saver, versions={changed: "2"})
    assert drive.run(graph, {"log": []}, config) == {"log": LOG}
    assert runs == Counter(reran)
    assert _read_back(state, saver, tmp_path, config) == {"log": LOG}


def test_a_named_complete_checkpoint_returns_its_state_and_writes_nothing(
    drive: Drive, state: type, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    """Resuming a named checkpoint would be time travel, which writes a fork."""
    graph = ne.compile(fan(state, runs), checkpointer=saver)
    drive.run(graph, {"log": []}, config)
    newest = saver.get_tuple(config)
    assert newest is not None
    named: RunnableConfig = {
        "configurable": {**config["configurable"], **newest.config["configurable"]}
    }
    checkpoints = len(list(saver.list(config)))
    runs.clear()
    assert drive.run(graph, {"log": []}, named) == {"log": LOG}
    assert len(list(saver.list(config))) == checkpoints
    assert drive.run(graph, {"log": []}, config) == {"log": LOG}
    assert runs == Counter()
