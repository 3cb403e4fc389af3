"""What a decision tells traces: its event data, tags and metadata, from the plan alone."""

from __future__ import annotations

import json

from neograph_ext import PlanKind, ResumePlan
from neograph_ext.storage._telemetry import decision_metadata, decision_tags, fresh_plan, plan_data
from neograph_ext.types import ChangeReason, NodeChange

REWIND = ResumePlan(
    PlanKind.REWIND,
    "t1",
    head_id="head",
    checkpoint_id="target",
    step=2,
    invalidated_nodes=frozenset({"c"}),
    changes=(
        NodeChange("c", ChangeReason.OUTPUT_TYPE, "0" * 64, "1" * 64, ("score: int -> float",)),
    ),
    rerun=frozenset({"d", "c"}),
    kept=frozenset({"b", "a"}),
    migrated=frozenset({"z", "y"}),
    order=("a", "b", "c", "d"),
)


def test_the_event_data_is_the_plan_as_plain_json() -> None:
    data = plan_data(REWIND)
    assert json.loads(json.dumps(data)) == data
    assert data == {
        "kind": "rewind",
        "thread_id": "t1",
        "head_id": "head",
        "checkpoint_id": "target",
        "step": 2,
        "rerun": ["c", "d"],  # in the order they ran, not by name
        "kept": ["a", "b"],
        "kept_tasks": [],
        "migrated": ["y", "z"],
        "replayed": [],
        "reasons": [
            {"node": "c", "reason": "output type", "channel": None, "diff": ["score: int -> float"]}
        ],
        "taken_from": None,
    }


def test_the_root_run_is_tagged_with_the_decision_and_the_checkpoints_that_find_it() -> None:
    assert decision_tags(REWIND) == ["neograph_ext.decision=rewind"]
    assert decision_metadata(REWIND) == {
        "neograph_ext.decision": "rewind",
        "neograph_ext.head_id": "head",
        "neograph_ext.checkpoint_id": "target",
    }


def test_a_new_thread_is_told_as_fresh_and_names_no_checkpoint() -> None:
    plan = fresh_plan("t2")
    assert plan_data(plan)["kind"] == "fresh"
    assert decision_metadata(plan) == {"neograph_ext.decision": "fresh"}
