"""An ``@entrypoint``'s stamp: which tasks it sees, and what their fingerprints cover."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.func import entrypoint, task
from pydantic import BaseModel

import neograph_ext as ne
from neograph_ext.decision._entrypoint import entrypoint_stamp, seen_tasks
from neograph_ext.decision._langgraph_calls import PREVIOUS_CHANNEL
from tests.graphs.functional import chain, nesting, saving


class Report(BaseModel):
    title: str


@task
def fetch(url: str) -> Report:
    return Report(title=url)


def _helper(url: str) -> Report:
    return fetch(url).result()


def _hidden() -> Any:
    @task
    def lookup(url: str) -> Report:
        return Report(title=url)

    return lookup


TOOLS = SimpleNamespace(lookup=_hidden())


def test_module_level_closure_helper_and_nested_tasks_are_seen() -> None:
    @task
    def closed(x: int) -> int:
        return x

    @entrypoint()
    def workflow(url: str) -> str:
        @task(name="inner_task")
        def inner(report: Report) -> Report:
            return report

        closed(1).result()
        return inner(_helper(url)).result().title

    seen = seen_tasks(workflow.nodes["workflow"].bound.func)
    assert set(seen) == {"fetch", "closed", "inner_task"}
    assert seen["inner_task"] is Report  # read from the source, evaluated in its globals


def test_a_task_reached_through_an_attribute_is_not_seen() -> None:
    @entrypoint()
    def workflow(url: str) -> str:
        return TOOLS.lookup(url).result().title

    assert seen_tasks(workflow.nodes["workflow"].bound.func) == {}


def test_each_task_is_fingerprinted_by_its_return_type_and_version() -> None:
    workflow = chain(Counter(), set(), is_async=False)
    stamp, shape = entrypoint_stamp(workflow)
    assert shape.name == "workflow" and shape.tasks == {"t1", "t2", "t3"}
    assert set(stamp.nodes) == {"t1", "t2", "t3", "workflow"}
    typed, _ = entrypoint_stamp(workflow, output_types={"t2": float})
    versioned, _ = entrypoint_stamp(workflow, versions={"t2": "v2"})
    for other in (typed, versioned):
        assert other.nodes["t2"].fp != stamp.nodes["t2"].fp
        assert other.nodes["t1"].fp == stamp.nodes["t1"].fp
    assert entrypoint_stamp(chain(Counter(), set(), is_async=True))[0].id == stamp.id


def test_a_task_that_calls_a_task_folds_its_fingerprint_in() -> None:
    workflow = nesting(Counter(), set(), is_async=False)
    stamp, shape = entrypoint_stamp(workflow)
    assert shape.tasks == {"inner", "outer", "last"}
    assert stamp.nodes["outer"].sub == {"inner": stamp.nodes["inner"].fp}
    assert stamp.nodes["inner"].sub is None and stamp.nodes["last"].sub is None
    changed, _ = entrypoint_stamp(workflow, output_types={"inner": float})
    # The call of ``inner`` is cached inside ``outer``'s: a change of it is outer's too.
    assert changed.nodes["outer"].fp != stamp.nodes["outer"].fp
    assert changed.nodes["last"].fp == stamp.nodes["last"].fp
    versioned, _ = entrypoint_stamp(workflow, versions={"outer": "v2"})
    assert versioned.nodes["inner"].fp == stamp.nodes["inner"].fp
    assert entrypoint_stamp(nesting(Counter(), set(), is_async=True))[0].id == stamp.id


def test_the_save_type_of_entrypoint_final_is_the_previous_channel() -> None:
    as_str, _ = entrypoint_stamp(saving(Counter(), is_async=False))
    as_int, _ = entrypoint_stamp(saving(Counter(), is_async=False, save=int))
    assert as_str.channels[PREVIOUS_CHANNEL] != as_int.channels[PREVIOUS_CHANNEL]
    assert as_str.nodes["workflow"].fp == as_int.nodes["workflow"].fp  # the return: int


def test_options_naming_no_task_seen_are_refused_with_the_names_seen() -> None:
    workflow = chain(Counter(), set(), is_async=False)
    with pytest.raises(ne.GraphError, match=r"tasks the entrypoint does not call: \['t9'\]"):
        ne.compile(workflow, versions={"t9": "v"})
    with pytest.raises(ne.GraphError, match="apply to graphs only"):
        ne.compile(workflow, renames={"old": "t1"})


def test_compile_leaves_the_decorated_entrypoint_as_it_was() -> None:
    workflow = chain(Counter(), set(), is_async=False)
    graph = ne.compile(workflow, checkpointer=None)
    assert type(workflow).__name__ == "Pregel" and not isinstance(workflow, type(graph))
    assert ne.is_stamped(graph)
    assert graph.invoke(1) == workflow.invoke(1) == 3


def test_a_task_named_as_its_entrypoint_is_left_unseen_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @task(name="workflow")
    def step(x: int) -> int:
        return x

    @entrypoint()
    def workflow(x: int) -> Any:
        return step(x).result()

    graph = ne.compile(workflow)
    assert set(graph.neograph_ext_stamp.nodes) == {"workflow"}
    assert "a task has its name" in caplog.text
    assert graph.invoke(3) == 3


def test_an_entrypoint_compiled_again_takes_the_new_options() -> None:
    workflow = chain(Counter(), set(), is_async=False)
    once = ne.compile(workflow, checkpointer=None)
    twice = ne.compile(once, checkpointer=None, versions={"t2": "v2"})
    assert twice.neograph_ext_stamp.nodes["t2"].fp != once.neograph_ext_stamp.nodes["t2"].fp
    assert type(twice).__mro__[1:] == type(once).__mro__[1:]
    assert twice.invoke(1) == 3
