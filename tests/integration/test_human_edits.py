"""A human edit (``update_state(..., as_node=...)`` at a breakpoint) that a rewind after a
deploy would go back before: refused by name before anything runs, and each way out the
refusal names works."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import deployed
from tests.oracle.spec import Counted, Node, Spec, build, models

EDITED = Spec(((Node("a"),), (Node("w"),), (Node("d"),)))
RETYPED = EDITED.with_node("w", x="str")


def _release(spec: Spec, saver: BaseCheckpointSaver[Any]) -> tuple[Any, Counted]:
    deployed(*models(spec).values())
    counted = Counted()
    graph = ne.compile(build(spec, counted), checkpointer=saver, interrupt_before=["d"])
    return graph, counted


def _edited(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    """Release 1 stops before ``d``, a human sets ``w``; the edit's model instance."""
    old, _ = _release(EDITED, saver)
    drive.run(old, {"doc": "turn!"}, config)
    edit = models(EDITED)["w"](seed=99, x=99)
    drive.update_state(old, config, {"w": edit}, as_node="w")
    return edit


def test_a_rewind_before_a_human_edit_is_refused_naming_it(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    _edited(drive, saver, config)
    new, counted = _release(RETYPED, saver)
    head = drive.get_state(new, config).config["configurable"]["checkpoint_id"]
    plan = drive.plan(new, config)
    assert plan.blocker is not None and "update_state" in plan.blocker
    assert head in plan.blocker and "`w`" in plan.blocker
    with pytest.raises(ne.CheckpointSchemaError) as refused:
        drive.run(new, None, config)
    for way in ("accept", "checkpoint_id", "new thread_id"):
        assert way in str(refused.value)
    assert not counted.runs
    assert drive.get_state(new, config).values["w"].seed == 99


def test_accept_keeps_the_edit(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    _edited(drive, saver, config)
    new, counted = _release(RETYPED, saver)
    drive.accept(new, config)
    drive.run(new, None, config)
    assert counted.runs == {"d": 1}
    assert drive.get_state(new, config).values["w"].seed == 99


def test_a_run_from_the_rewind_target_forks_there_and_the_edit_is_made_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    _edited(drive, saver, config)
    new, counted = _release(RETYPED, saver)
    target = drive.plan(new, config).checkpoint_id
    at: Any = {"configurable": {**config["configurable"], "checkpoint_id": target}}
    drive.run(new, None, at)
    assert counted.runs == {"w": 1}
    made = type(drive.get_state(new, config).values["w"])  # the class deployed
    drive.update_state(new, config, {"w": made(seed=99, x="99")}, as_node="w")
    drive.run(new, None, config)
    assert counted.runs == {"w": 1, "d": 1}
    kept = drive.get_state(new, config).values["w"]
    assert (kept.seed, kept.x) == (99, "99")
