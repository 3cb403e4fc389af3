"""The drivers, sync and async, streaming or not, behave exactly like ``run``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import Crash, linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


def test_the_twins_rewind_alike(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = drive.ran_before(
        linear(runs, {"c": V1}, crash="d"), saver, {"log": []}, config, runs, crash=Crash
    )
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    with pytest.raises(ne.CheckpointSchemaError):
        drive.run(graph, None, config, resume=ne.ResumePolicy(on_change="raise"))
    assert runs == Counter()
    assert drive.run(graph, None, config)["log"] == list("abcd")
    assert runs == Counter("cd")
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_stream_yields_the_rewound_nodes_updates_only(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs, {"c": V1}), checkpointer=saver)
    chunks = list(drive.stream(graph, {"log": []}, config, stream_mode="updates"))
    assert chunks == [{name: {"log": [name]}} for name in "abcd"]
    runs.clear()
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    chunks = list(drive.stream(graph, None, config, stream_mode="updates"))
    assert chunks == [{"c": {"log": ["c"]}}, {"d": {"log": ["d"]}}]
    assert list(drive.stream(graph, None, config)) == []


def test_stream_yields_exactly_langgraphs_chunks(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    plain_config: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-plain"}
    }
    expected = list(
        drive.graph_stream(
            linear(runs).compile(checkpointer=saver),
            {"log": []},
            plain_config,
            stream_mode="values",
            durability="sync",
        )
    )
    graph = ne.compile(linear(runs), checkpointer=saver)
    assert list(drive.stream(graph, {"log": []}, config, stream_mode="values")) == expected
    runs.clear()
    graph = ne.compile(linear(runs, {"b": V2}), checkpointer=saver)
    chunks = list(drive.stream(graph, None, config, stream_mode=["updates", "values"]))
    assert [c for mode, c in chunks if mode == "updates"] == [
        {name: {"log": [name]}} for name in "bcd"
    ]
    assert chunks[-1] == ("values", {"log": list("abcd")})
    assert runs == Counter("bcd")


def test_run_defaults_to_sync_durability_and_an_explicit_one_wins(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    graph = ne.compile(linear(Counter()), checkpointer=saver)
    drive.run(graph, {"log": []}, config)
    per_step = len(list(saver.list(config)))
    other: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-x"}
    }
    drive.run(graph, {"log": []}, other, durability="exit")
    assert per_step == 6
    assert len(list(saver.list(other))) == 1


def test_run_records_its_decision_in_run_metadata(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    graph = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    drive.run(graph, {"log": []}, config)
    drive.run(ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver), None, config)
    head = saver.get_tuple(config)
    assert head is not None
    bound_to, decision, _ = head.metadata["neograph_ext_run"].split(".")
    assert decision == "rewind"
    assert head.metadata["neograph_ext"].startswith(f"2:{bound_to}")
    assert head.metadata["source"] == "loop"


def test_a_stamp_forwarded_in_caller_metadata_never_replaces_the_graphs(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    old = ne.compile(linear(Counter(), {"c": V1}), checkpointer=saver)
    drive.run(old, {"log": []}, config)
    stale = saver.get_tuple(config)
    assert stale is not None
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    # e.g. metadata copied from an old checkpoint for tracing
    drive.run(graph, None, {**config, "metadata": dict(stale.metadata)})
    assert runs == Counter("cd")
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_bad_lock_options_are_clear_errors_before_anything_runs(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs), checkpointer=saver)
    with pytest.raises(ValueError, match=r"lock_timeout\) must be a number of seconds >= 0"):
        drive.run(graph, {"log": []}, config, lock=ne.LockPolicy(timeout=-1))
    with pytest.raises(ValueError, match="on_busy must be 'wait' or 'raise'"):
        drive.run(graph, {"log": []}, config, lock=ne.LockPolicy(on_busy="later"))  # type: ignore[arg-type]
    assert runs == Counter()
    assert saver.get_tuple(config) is None
