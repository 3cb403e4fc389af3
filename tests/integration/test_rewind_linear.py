"""A linear pipeline a -> b -> c -> d: what re-runs after each kind of change."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.drive import SYNC_ONLY, Drive, Saver
from tests.graphs.pipelines import Crash, linear, model

V1 = model(score=(int, ...), label=(str, ...))

CHANGES: dict[str, tuple[type[Any], str]] = {
    "field added": (model(score=(int, ...), label=(str, ...), extra=(float, ...)), "extra"),
    "field removed": (model(score=(int, ...)), "label"),
    "field retyped": (model(score=(float, ...), label=(str, ...)), "score"),
    "class renamed": (model("Analysis2", score=(int, ...), label=(str, ...)), "Analysis2"),
}


def count_checkpoints(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> int:
    return len(list(saver.list(config)))


def completed(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    returns: dict[str, object],
) -> Counter[str]:
    runs: Counter[str] = Counter()
    drive.run(ne.compile(linear(runs, returns), checkpointer=saver), {"log": []}, config)
    assert runs == Counter("abcd")
    return runs


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_changed_output_type_reruns_the_node_and_downstream_only(
    drive: Drive, saver: Saver, config: RunnableConfig, change: str, runs: Counter[str]
) -> None:
    completed(drive, saver, config, {"c": V1})
    new_type, named = CHANGES[change]
    graph = ne.compile(linear(runs, {"c": new_type}), checkpointer=saver)

    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND
    assert plan.invalidated_nodes == {"c"}
    assert named in str(plan)

    result = drive.run(graph, {"log": []}, config)
    assert runs == Counter({"c": 1, "d": 1})
    # The reducer channel was restored from the fork point: no duplicate appends.
    assert result["log"] == ["a", "b", "c", "d"]

    assert drive.run(graph, {"log": []}, config)["log"] == ["a", "b", "c", "d"]
    assert runs == Counter({"c": 1, "d": 1}), "a third run must execute nothing"
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


@pytest.mark.parametrize(
    ("changed", "expected"),
    [({"a"}, "abcd"), ({"d"}, "d"), ({"b", "d"}, "bcd")],
    ids=["root", "leaf", "b-and-d"],
)
def test_earliest_change_decides_what_reruns(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    changed: set[str],
    expected: str,
    runs: Counter[str],
) -> None:
    completed(drive, saver, config, dict.fromkeys("abcd", V1))
    new = CHANGES["field retyped"][0]
    returns = {n: new if n in changed else V1 for n in "abcd"}
    graph = ne.compile(linear(runs, returns), checkpointer=saver)
    assert drive.plan(graph, config).invalidated_nodes == changed
    drive.run(graph, {"log": []}, config)
    assert runs == Counter(expected)


def test_strict_mode_raises_before_running_and_writes_nothing(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    completed(drive, saver, config, {"c": V1})
    before = count_checkpoints(saver, config)
    graph = ne.compile(linear(runs, {"c": CHANGES["field retyped"][0]}), checkpointer=saver)
    with pytest.raises(ne.CheckpointSchemaError) as caught:
        drive.run(graph, {"log": []}, config, resume=ne.ResumePolicy(on_change="raise"))
    assert caught.value.invalidated_nodes == {"c"}
    assert caught.value.plan.kind is ne.PlanKind.REWIND
    message = str(caught.value)
    assert "node `c`" in message and "score" in message and "on_change='rewind'" in message
    assert runs == Counter()
    assert count_checkpoints(saver, config) == before


def test_strict_mode_passes_when_nothing_changed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    completed(drive, saver, config, {"c": V1})
    graph = ne.compile(linear(runs, {"c": V1}), checkpointer=saver)
    assert drive.run(graph, {"log": []}, config, resume=ne.ResumePolicy(on_change="raise"))[
        "log"
    ] == list("abcd")
    assert runs == Counter()
    # plan() reads the lineage even when run() could trust the head it verified.
    assert drive.plan(graph, config).kept == set("abcd")


def test_plan_explains_at_field_level_and_writes_nothing(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    completed(drive, saver, config, {"c": V1})
    before = count_checkpoints(saver, config)
    graph = ne.compile(linear(Counter(), {"c": CHANGES["field retyped"][0]}), checkpointer=saver)
    plan = drive.plan(graph, config)
    (change,) = plan.changes
    assert change.node == "c" and change.reason is ne.types.ChangeReason.OUTPUT_TYPE
    assert change.old != change.new
    assert any("score" in line and "int" in line and "float" in line for line in change.diff)
    assert plan.rerun == {"c", "d"} and plan.kept == {"a", "b"}
    assert plan.step is not None and plan.checkpoint_id is not None
    assert "score" in str(plan) and "c" in str(plan)
    assert count_checkpoints(saver, config) == before


def test_hyphenated_node_names(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    names = ("load-doc", "call-llm", "parse-out", "save-it")
    graph = ne.compile(linear(runs, {"parse-out": V1}, names=names), checkpointer=saver)
    drive.run(graph, {"log": []}, config)
    runs.clear()
    new = CHANGES["field added"][0]
    graph = ne.compile(linear(runs, {"parse-out": new}, names=names), checkpointer=saver)
    assert drive.plan(graph, config).invalidated_nodes == {"parse-out"}
    drive.run(graph, {"log": []}, config)
    assert runs == Counter({"parse-out": 1, "save-it": 1})


def test_versions_bump_reruns_the_node(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    v1 = ne.compile(linear(runs), checkpointer=saver, versions={"b": "prompt-v1"})
    drive.run(v1, {"log": []}, config)
    drive.run(v1, {"log": []}, config)
    assert runs == Counter("abcd")
    runs.clear()
    graph = ne.compile(linear(runs), checkpointer=saver, versions={"b": "prompt-v2"})
    (change,) = drive.plan(graph, config).changes
    assert change.reason is ne.types.ChangeReason.VERSION and "prompt-v2" in change.diff[0]
    drive.run(graph, None, config)
    assert runs == Counter("bcd")


def test_output_types_override_the_return_annotation(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    completed(drive, saver, config, {"c": V1})
    # Same annotation, but the declared override differs from what was stamped.
    graph = ne.compile(
        linear(runs, {"c": V1}), checkpointer=saver, output_types={"c": CHANGES["field added"][0]}
    )
    assert drive.plan(graph, config).invalidated_nodes == {"c"}
    graph = ne.compile(linear(runs, {"c": None}), checkpointer=saver, output_types={"c": V1})
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


@SYNC_ONLY  # compile's own check: no driver runs
def test_unknown_node_in_options_is_a_clear_error(saver: BaseCheckpointSaver[Any]) -> None:
    with pytest.raises(ValueError, match=r"versions names nodes the graph does not have: \['x'\]"):
        ne.compile(linear(Counter()), checkpointer=saver, versions={"x": "1"})


def test_crash_resumes_without_repeating_finished_nodes(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(Crash):
        drive.run(ne.compile(linear(runs, crash="c"), checkpointer=saver), {"log": []}, config)
    assert runs == Counter("abc")
    runs.clear()
    graph = ne.compile(linear(runs), checkpointer=saver)
    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    # The input of an incomplete thread is ignored: the stored run continues.
    assert drive.run(graph, {"log": ["ignored"]}, config)["log"] == list("abcd")
    assert runs == Counter("cd")


def test_crash_then_change_upstream_rewinds_before_it(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = drive.ran_before(
        linear(runs, {"b": V1}, crash="d"), saver, {"log": []}, config, runs, crash=Crash
    )
    graph = ne.compile(linear(runs, {"b": CHANGES["field added"][0]}), checkpointer=saver)
    assert drive.run(graph, None, config)["log"] == list("abcd")
    assert runs == Counter("bcd")


def test_caller_input_and_config_are_not_mutated(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    completed(drive, saver, config, {"c": V1})
    graph = ne.compile(linear(Counter(), {"c": CHANGES["field added"][0]}), checkpointer=saver)
    given = {"log": []}
    snapshot_config = {"configurable": dict(config["configurable"])}
    drive.run(graph, given, config)
    assert given == {"log": []}
    assert config == snapshot_config


def test_checkpoint_id_in_config_is_planned_from(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    completed(drive, saver, config, {"c": V1})
    history = list(saver.list(config))
    after_b = next(t for t in history if t.metadata and t.metadata.get("step") == 2)
    at = {"configurable": {**config["configurable"], "checkpoint_id": after_b.checkpoint["id"]}}
    graph = ne.compile(linear(runs, {"c": V1}), checkpointer=saver)
    plan = drive.plan(graph, at)
    assert plan.kind is ne.PlanKind.CONTINUE and plan.head_id == after_b.checkpoint["id"]
    assert plan.next_nodes == {"c"}
    drive.run(graph, None, at)
    assert runs == Counter("cd")


def test_history_is_forked_never_overwritten(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    completed(drive, saver, config, {"c": V1})
    before = {t.checkpoint["id"] for t in saver.list(config)}
    graph = ne.compile(linear(Counter(), {"c": CHANGES["field added"][0]}), checkpointer=saver)
    target = drive.plan(graph, config).checkpoint_id
    drive.run(graph, None, config)
    after = {t.checkpoint["id"] for t in saver.list(config)}
    assert before < after
    # A new branch off the target (LangGraph 1.2 writes it as source "fork", 1.1 as "loop").
    children = [
        t.checkpoint["id"]
        for t in saver.list(config)
        if (t.parent_config or {}).get("configurable", {}).get("checkpoint_id") == target
    ]
    assert any(c in before for c in children) and any(c not in before for c in children)


def test_graph_without_stamp_or_thread_is_a_clear_error(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    plain = linear(Counter()).compile(checkpointer=saver)
    with pytest.raises(ne.GraphError, match=r"neograph_ext\.compile"):
        drive.run(plain, None, config)
    with pytest.raises(ne.GraphError, match="thread_id"):
        drive.run(ne.compile(linear(Counter()), checkpointer=saver), None, {})
    with pytest.raises(ne.GraphError, match="checkpointer"):
        drive.plan(ne.compile(linear(Counter())), config)


def test_unknown_checkpoint_id_is_a_clear_error_not_a_fresh_thread(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    completed(drive, saver, config, {"c": V1})
    at = {"configurable": {**config["configurable"], "checkpoint_id": "no-such-checkpoint"}}
    graph = ne.compile(linear(runs, {"c": V1}), checkpointer=saver)
    with pytest.raises(ne.GraphError, match="has no checkpoint 'no-such-checkpoint'"):
        drive.plan(graph, at)
    with pytest.raises(ne.GraphError, match="drop checkpoint_id"):
        drive.run(graph, None, at)
    assert runs == Counter()
