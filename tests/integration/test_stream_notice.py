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
from langgraph.types import Command

import neograph_ext as ne
from neograph_ext.storage._telemetry import plan_data
from tests.drive import Drive, Saver
from tests.graphs.pipelines import DraftV1, DraftV2, approval


def _approval(runs: Counter[str], draft_type: Any) -> Any:
    """``draft -> review``; ``review`` writes a progress event, then asks."""
    return approval(runs, draft_type, progress=True, send=False)


def _waiting(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    drive.run(ne.compile(_approval(Counter(), DraftV1), checkpointer=saver), {}, config)


def _told(chunk: Any) -> dict[str, Any]:
    assert isinstance(chunk, dict) and set(chunk) == {"neograph_ext"}, chunk
    data: dict[str, Any] = chunk["neograph_ext"]
    return data


@pytest.mark.parametrize("served", [False, True], ids=["stream", "auto_resume"])
def test_a_question_asked_again_is_told_first(
    drive: Drive, saver: Saver, config: RunnableConfig, served: bool, runs: Counter[str]
) -> None:
    _waiting(drive, saver, config)
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
    drive: Drive, saver: Saver, config: RunnableConfig, kwargs: dict[str, Any], shape: Any
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
