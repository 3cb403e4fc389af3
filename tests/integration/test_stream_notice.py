"""A client streaming ``custom`` is told when a call rewinds, migrates, or sets an answer
aside and asks again: one chunk ``{"neograph_ext": <the plan as JSON>}`` before anything
else, in the shape LangGraph gives that stream's custom chunks. A thread nothing changed
for streams exactly what LangGraph streams."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_stream_writer
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt

import neograph_ext as ne
from neograph_ext._telemetry import plan_data
from tests.drive import Drive
from tests.graphs.pipelines import deployed, model, wire

DraftV1 = model("Draft", text=(str, ...))
DraftV2 = model("Draft", text=(str, ...), tone=(str, "plain"))


def _approval(runs: Counter[str], draft_type: Any) -> Any:
    """``draft -> review -> send``; ``review`` writes a progress event, then asks."""
    deployed(draft_type)
    from typing import TypedDict

    Flow = TypedDict("Flow", {"draft": draft_type, "answer": str}, total=False)  # type: ignore[misc]  # noqa: UP013

    def draft(state: Any) -> dict[str, Any]:
        runs["draft"] += 1
        return {"draft": draft_type(text="hello")}

    def review(state: Any) -> dict[str, Any]:
        runs["review"] += 1
        get_stream_writer()({"progress": "review"})
        return {"answer": interrupt("approve?")}

    builder = StateGraph(Flow)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    wire(builder, "draft", "review")
    return builder


def _waiting(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    drive.run(ne.compile(_approval(Counter(), DraftV1), checkpointer=saver), {}, config)


def _told(chunk: Any) -> dict[str, Any]:
    assert isinstance(chunk, dict) and set(chunk) == {"neograph_ext"}, chunk
    data: dict[str, Any] = chunk["neograph_ext"]
    return data


@pytest.mark.parametrize("served", [False, True], ids=["stream", "auto_resume"])
def test_a_question_asked_again_is_told_first(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, served: bool
) -> None:
    _waiting(drive, saver, config)
    runs: Counter[str] = Counter()
    graph = ne.compile(
        _approval(runs, DraftV2), checkpointer=saver, attach=[ne.AutoResume()] if served else []
    )
    planned = drive.plan(graph, config)
    call = drive.graph_stream if served else drive.stream
    chunks = list(call(graph, Command(resume="yes"), config, stream_mode="custom"))
    first, *rest = chunks
    told = _told(first)
    assert told == plan_data(planned) and told["kind"] == "rewind"
    assert rest == [{"progress": "review"}]  # the node's own events, as LangGraph streams them
    assert runs == Counter({"draft": 1, "review": 1})


@pytest.mark.parametrize(
    ("kwargs", "shape"),
    [
        ({"stream_mode": ["custom", "updates"]}, lambda told: ("custom", told)),
        ({"stream_mode": "custom", "subgraphs": True}, lambda told: ((), told)),
        ({"stream_mode": ["custom"], "subgraphs": True}, lambda told: ((), "custom", told)),
        (
            {"stream_mode": ["custom", "values"], "version": "v2"},
            lambda told: {"type": "custom", "ns": (), "data": told},
        ),
    ],
    ids=["modes", "subgraphs", "modes-subgraphs", "v2"],
)
def test_the_notice_has_the_shape_of_the_streams_custom_chunks(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    kwargs: dict[str, Any],
    shape: Any,
) -> None:
    _waiting(drive, saver, config)
    graph = ne.compile(_approval(Counter(), DraftV2), checkpointer=saver)
    planned = drive.plan(graph, config)
    chunks = list(drive.stream(graph, Command(resume="yes"), config, **kwargs))
    assert chunks[0] == shape({"neograph_ext": plan_data(planned)})
    custom = [c for c in chunks if "custom" in (c if isinstance(c, tuple) else [c.get("type")])]
    progress = shape({"progress": "review"})
    assert progress in chunks and len(custom) in (0, 2)


def test_a_migrate_is_told_first(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    _waiting(drive, saver, config)
    keep = ne.ResumePolicy(keep_compatible=True)
    graph = ne.compile(_approval(Counter(), DraftV2), checkpointer=saver, resume=keep)
    planned = drive.plan(graph, config)
    assert planned.kind is ne.PlanKind.MIGRATE
    first, *_ = drive.stream(graph, Command(resume="yes"), config, stream_mode=["custom"])
    assert first == ("custom", {"neograph_ext": plan_data(planned)})


@pytest.mark.parametrize("served", [False, True], ids=["stream", "auto_resume"])
def test_a_thread_nothing_changed_for_streams_what_langgraph_streams(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, served: bool
) -> None:
    other: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-plain"}
    }
    for thread in (config, other):
        _waiting(drive, saver, thread)
    graph = ne.compile(
        _approval(Counter(), DraftV1),
        checkpointer=saver,
        attach=[ne.AutoResume()] if served else [],
    )
    modes = {"stream_mode": ["custom", "updates"]}
    call = drive.graph_stream if served else drive.stream
    ours = list(call(graph, Command(resume="yes"), config, **modes))
    plain = _approval(Counter(), DraftV1).compile(checkpointer=saver)
    theirs = list(drive.graph_stream(plain, Command(resume="yes"), other, **modes))
    assert ours == theirs and ours[0] == ("custom", {"progress": "review"})
