"""What a rewind keeps of the superstep it forks: the plan's part and the executor's pure
parts, on hand-made records and checkpoints; no graph, no database."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.types import PregelTask

from neograph_ext.decision._plan import PlanKind, decide
from neograph_ext.decision._stamp import RUN_KEY, STAMP_KEY, stamp_ref
from neograph_ext.flows._keep import KEEP_KEY, forked, incomplete, kept_writes
from tests.graphs.lineages import LOG, V1, V2, record, stamp

NULL = "00000000-0000-0000-0000-000000000000"


def parallel(old: Any, *, crashed: bool = False) -> list[Any]:
    """``a`` then ``b || c`` then ``d``; ``crashed``: the head waits on ``b, c`` with
    finished writes pending."""
    records = [record(-1, stamp=old, source="input", wrote=()), record(0, stamp=old, wrote=())]
    records.append(record(1, "a", LOG, stamp=old))
    if crashed:
        records[-1] = record(1, "a", LOG, stamp=old, next_nodes={"b", "c"}, pending=1)
        return records
    return [*records, record(2, "bc", LOG, stamp=old), record(3, "d", LOG, stamp=old)]


def test_the_unchanged_sibling_is_kept_and_not_rerun() -> None:
    plan = decide(parallel(stamp(c=V1)), stamp(c=V2), "t")
    assert plan.kind is PlanKind.REWIND and plan.step == 1
    assert plan.kept_tasks == {"b"}
    assert plan.rerun == {"c", "d"} and plan.kept == {"a", "b"}


def test_a_changed_channel_blames_the_whole_step_and_keeps_nothing() -> None:
    old, new = stamp(c=V1), stamp(c=V1)
    new = new.model_copy(update={"channels": {**new.channels, "log": "other"}, "id": "other"})
    plan = decide(parallel(old), new, "t")
    assert plan.kind is PlanKind.REWIND and plan.kept_tasks == frozenset()
    assert {"b", "c", "d"} <= plan.rerun


def test_a_crashed_step_rewound_keeps_the_unchanged_waiting_nodes() -> None:
    plan = decide(parallel(stamp(c=V1), crashed=True), stamp(c=V2), "t")
    assert plan.kind is PlanKind.REWIND and plan.checkpoint_id == "cp002"
    assert plan.kept_tasks == {"b"} and plan.rerun == {"c"}


def test_plan_text_names_the_kept_tasks() -> None:
    assert "kept in the rewound step: b" in str(decide(parallel(stamp(c=V1)), stamp(c=V2), "t"))


def task(task_id: str, name: str, *path: Any) -> PregelTask:
    return PregelTask(task_id, name, path or ("__pregel_pull", name))


def test_kept_writes_group_finished_tasks_of_kept_nodes_by_name_and_path() -> None:
    tasks = [
        task("t1", "b"),
        task("t2", "c"),
        task("t3", "w", "__pregel_push", 0),
        task("t4", "w", "__pregel_push", 1),
        task("t5", "e"),
    ]
    writes = [
        ("t1", "log", ["b"]),
        ("t2", "log", ["c"]),
        ("t3", "results", [0]),
        ("t1", "join", "b"),
        ("t4", "__error__", "boom"),
        ("t5", "__interrupt__", "ask"),
        (NULL, "log", ["update"]),
        (NULL, "__resume__", "yes"),
        ("gone", "log", ["?"]),
    ]
    kept = kept_writes(tasks, writes, frozenset({"b", "w", "e"}))
    assert kept == {
        ("b", ("__pregel_pull", "b")): [("log", ["b"]), ("join", "b")],
        ("w", ("__pregel_push", 0)): [("results", [0])],
        None: [("log", ["update"])],
    }


def test_a_task_that_failed_then_finished_on_a_resume_is_kept_without_its_error() -> None:
    """The failed try's error stays among the step's writes beside the output of the
    resume that finished it; LangGraph hands that task its output, not a re-run."""
    tasks = [task("t1", "b"), task("t2", "c")]
    writes = [
        ("t1", "log", ["b"]),
        ("t2", "__error__", "boom"),
        ("t2", "log", ["c"]),
    ]
    assert kept_writes(tasks, writes, frozenset({"c"})) == {
        ("c", ("__pregel_pull", "c")): [("log", ["c"])]
    }
    failed = [("t2", "__error__", "boom"), ("t2", "__error_source_node__", "c")]
    assert kept_writes(tasks, failed, frozenset({"c"})) == {}


def test_a_task_that_asked_then_finished_once_answered_is_kept_without_the_question() -> None:
    tasks = [task("t1", "ask"), task("t2", "c")]
    writes = [
        ("t1", "__interrupt__", "ok?"),
        ("t2", "log", ["c"]),
        ("t1", "__resume__", ["yes"]),
        ("t1", "log", ["ask"]),
    ]
    assert kept_writes(tasks, writes, frozenset({"ask"})) == {
        ("ask", ("__pregel_pull", "ask")): [("log", ["ask"])]
    }
    assert kept_writes(tasks, writes[:2], frozenset({"ask"})) == {}
    # Still asking (its second question): it keeps the answer to its first.
    assert kept_writes(tasks, writes[:3], frozenset({"ask"})) == {
        ("ask", ("__pregel_pull", "ask")): [("__resume__", ["yes"])]
    }


def target(metadata: dict[str, Any], writes: list[Any] | None = None) -> CheckpointTuple:
    checkpoint = empty_checkpoint()
    checkpoint["v"] = 4
    checkpoint["updated_channels"] = ["log"]
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "x"}}
    parent: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "p"}}
    return CheckpointTuple(config, checkpoint, metadata, parent, writes)  # type: ignore[arg-type]


def test_the_fork_is_a_copy_at_the_same_step_carrying_the_current_stamp() -> None:
    s = stamp()
    old = target({"source": "loop", "step": 3, "parents": {}})
    checkpoint, metadata = forked(old, s, "mark", 2)
    assert checkpoint["id"] != old.checkpoint["id"]
    assert checkpoint["v"] == 4 and checkpoint["updated_channels"] == ["log"]
    assert checkpoint["channel_versions"] == old.checkpoint["channel_versions"]
    assert metadata == {
        "source": "fork",
        "step": 3,
        "parents": {},
        STAMP_KEY: stamp_ref(s),
        RUN_KEY: "mark",
        KEEP_KEY: 2,
    }


def test_a_fork_holding_fewer_tasks_than_it_keeps_is_incomplete() -> None:
    fork = {"source": "fork", "step": 3, KEEP_KEY: 2}
    one = [("t1", "log", ["b"]), ("t1", "x", 1), (NULL, "log", ["u"])]
    two = [*one, ("t2", "log", ["e"])]
    assert incomplete(target(fork, one)) == target(fork).parent_config
    assert incomplete(target(fork, two)) is None
    assert incomplete(target({"source": "fork", "step": 3})) is None  # LangGraph's own fork
    assert incomplete(target({"source": "loop", "step": 3, KEEP_KEY: 2})) is None
    assert incomplete(None) is None
