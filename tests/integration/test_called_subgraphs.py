"""A worker subgraph called from a supervisor's code (``sub.invoke(state)``, ``await
sub.ainvoke``, ``sub.stream``, a tool that invokes it), across a deploy that changes the
``Draft`` its ``draft`` node returns: it is detected as for an added subgraph, and a
worker still waiting is rewound inside its own namespace; counters prove what ran.
Release 1 runs ``research``, then the worker (``outline -> draft -> review``), which
waits on ``interrupt()`` in ``review``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import as_data
from tests.graphs.workers import DRAFT_V1, DRAFT_V2, Call, built_per_call, by_tool, supervisor

CALLS = pytest.mark.parametrize("call", ["invoke", "stream"])
ASYNC_NODE = pytest.mark.parametrize("drive", ["async"], indirect=True)
"""An ``async def`` node runs only under the async drivers."""


def waiting(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, call: Call
) -> None:
    runs: Counter[str] = Counter()
    graph = ne.compile(supervisor(runs, DRAFT_V1, call), checkpointer=saver)
    assert "__interrupt__" in drive.run(graph, {"topic": "t"}, config)
    assert runs == Counter(["research", "worker", "outline", "draft", "review"])


def deployed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, call: Call, draft: Any
) -> tuple[Counter[str], Any]:
    """Release 1 waiting in the worker's review, then the graph whose draft returns
    ``draft``, with its own counter."""
    waiting(drive, saver, config, call)
    runs: Counter[str] = Counter()
    return runs, ne.compile(supervisor(runs, draft, call), checkpointer=saver)


def changed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, call: Call
) -> None:
    runs, graph = deployed(drive, saver, config, call, DRAFT_V2)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"worker"}
    (change,) = plan.changes
    assert change.reason is ne.types.ChangeReason.SUBGRAPH
    assert "worker > sub: node `draft`: output type changed" in change.diff
    assert "    Draft.words: added (int, required)" in change.diff
    # LangGraph resumes the called graph from its namespace (the calling task's):
    # it is forked there before `draft`, and `outline`, upstream of it, is kept.
    (inside,) = plan.inside
    assert (inside.path, inside.kept, inside.rerun) == (
        ("worker",),
        ("outline",),
        ("draft", "review"),
    )
    # The question inside the worker is asked again, under the new code.
    assert "__interrupt__" in drive.run(graph, Command(resume="ok"), config)
    assert runs == Counter(["worker", "draft", "review"])
    result = drive.run(graph, Command(resume="ok"), config)
    assert DRAFT_V2.model_validate(as_data(result["draft"])).words == 1
    assert result["review"] == "ok"
    assert runs == Counter({"worker": 2, "draft": 1, "review": 2})


def unchanged(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, call: Call
) -> None:
    runs, graph = deployed(drive, saver, config, call, DRAFT_V1)
    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    result = drive.run(graph, Command(resume="ok"), config)
    assert result["review"] == "ok"
    assert runs == Counter(["worker", "review"])


OUTCOMES = {"changed": changed, "unchanged": unchanged}
"""A change inside the worker is rewound inside it; an unchanged worker resumes where it
waits."""


@CALLS
@pytest.mark.parametrize("outcome", OUTCOMES)
def test_a_called_worker_is_rewound_inside_when_changed_and_resumed_when_not(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, call: Call, outcome: str
) -> None:
    OUTCOMES[outcome](drive, saver, config, call)


@ASYNC_NODE
@pytest.mark.parametrize("outcome", OUTCOMES)
def test_an_awaited_worker_is_rewound_inside_when_changed_and_resumed_when_not(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, outcome: str
) -> None:
    OUTCOMES[outcome](drive, saver, config, "ainvoke")


HI = {"messages": [HumanMessage("hi")]}


def test_a_change_inside_a_worker_a_tool_invokes_reruns_the_tools_node(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    drive.run(ne.compile(by_tool(runs, DRAFT_V1), checkpointer=saver), HI, config)
    assert runs == Counter(["model", "write_draft", "outline", "draft", "review", "model"])
    runs.clear()
    same = ne.compile(by_tool(runs, DRAFT_V1), checkpointer=saver)
    assert drive.plan(same, config).kind is ne.PlanKind.UP_TO_DATE
    graph = ne.compile(by_tool(runs, DRAFT_V2), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"tools"}
    assert any("tools > sub: node `draft`" in line for line in plan.changes[0].diff)
    result = drive.run(graph, None, config)
    assert "words=1" in result["messages"][-2].content
    assert runs == Counter(["write_draft", "outline", "draft", "review", "model"])


def test_a_graph_built_inside_the_node_is_reported_not_trusted(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    graph = ne.compile(built_per_call(runs), checkpointer=saver)
    assert graph.neograph_ext_stamp.nodes["worker"].sub is None  # unseen at compile time
    assert "__interrupt__" in drive.run(graph, {"topic": "t"}, config)
    runs.clear()
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.UNVERIFIED
    (note,) = plan.notes
    assert note.startswith("called graph not fingerprinted: node `worker` called a graph")
    strict = ne.ResumePolicy(on_unverified="raise")
    with pytest.raises(ne.CheckpointSchemaError, match="called graph not fingerprinted"):
        drive.run(graph, Command(resume="ok"), config, resume=strict)
    assert runs == Counter()
    # Resumed as LangGraph would: the worker's own checkpoint resumes its question.
    assert drive.run(graph, Command(resume="ok"), config)["review"] == "ok"
    assert runs == Counter(["worker", "review"])
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
