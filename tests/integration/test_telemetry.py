"""``compile(telemetry=Telemetry())``: the decision as a LangChain custom event inside the
graph's root run, tags and metadata on that run, nothing more in any checkpoint.

Per saver and drive: ``run`` and its twins, seen by a callback handler in the config;
per async saver: ``astream_events(version="v2")`` of an ``auto_resume`` graph.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
import neograph_ext._run as run_module
from tests.drive import Drive, Saver
from tests.graphs.chat import ProfileV2, ProfileV3, chat, two_turns
from tests.graphs.pipelines import Crash, linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))
DONE = {"log": list("abcd")}
EVENT = "neograph_ext.plan"
TOLD = ne.Telemetry()


class Recorder(BaseCallbackHandler):
    """What a run's callbacks see: root runs started and custom events, in order."""

    run_inline = True  # called in order with the others, in the caller's thread or loop

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if parent_run_id is None:
            self.seen.append(("root", (run_id, tags or [], metadata or {})))

    def on_custom_event(
        self, name: str, data: Any, *, run_id: UUID, tags: list[str] | None = None, **kwargs: Any
    ) -> None:
        self.seen.append((name, (run_id, data, tags or [])))

    def plans(self) -> list[dict[str, Any]]:
        """The data of each ``neograph_ext.plan`` event, checked to lie in a root run."""
        roots = {run_id for kind, (run_id, *_) in self.seen if kind == "root"}
        found = [(run_id, data) for kind, (run_id, data, _) in self.seen if kind == EVENT]
        assert all(run_id in roots for run_id, _ in found)
        return [data for _, data in found]

    def clear(self) -> None:
        self.seen.clear()


def _watched(config: RunnableConfig, recorder: Recorder) -> RunnableConfig:
    return {**config, "callbacks": [recorder]}


def _crashed(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    graph = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        drive.run(graph, {"log": []}, config)


def test_each_run_tells_its_decision_once_inside_the_graph_run(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _crashed(drive, saver, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, attach=[TOLD])
    expected = drive.plan(graph, config)
    recorder = Recorder()
    assert drive.run(graph, None, _watched(config, recorder)) == DONE
    assert runs == Counter("cd")
    (told,) = recorder.plans()
    assert told["kind"] == "rewind"
    assert told["thread_id"] == config["configurable"]["thread_id"]
    assert told["checkpoint_id"] == expected.checkpoint_id
    assert told["head_id"] == expected.head_id
    assert told["rerun"] == ["c", "d"] and told["kept"] == ["a", "b"]
    assert [(r["node"], r["reason"]) for r in told["reasons"]] == [("c", "output type")]
    assert json.loads(json.dumps(told)) == told
    (root,) = [seen for kind, seen in recorder.seen if kind == "root"]
    _, tags, metadata = root
    assert "neograph_ext.decision=rewind" in tags
    assert metadata["neograph_ext.decision"] == "rewind"
    assert metadata["neograph_ext.checkpoint_id"] == expected.checkpoint_id
    assert metadata["neograph_ext.head_id"] == expected.head_id

    recorder.clear()
    chunks = list(drive.stream(graph, None, _watched(config, recorder)))
    assert runs == Counter("cd") and chunks == []  # up to date: nothing ran
    assert [told["kind"] for told in recorder.plans()] == ["up_to_date"]


def test_a_new_thread_and_a_continued_one_are_told_as_such(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashing = ne.compile(linear(runs, crash="c"), checkpointer=saver, attach=[TOLD])
    recorder = Recorder()
    with pytest.raises(Crash):
        drive.run(crashing, {"log": []}, _watched(config, recorder))
    assert [told["kind"] for told in recorder.plans()] == ["fresh"]
    recorder.clear()
    graph = ne.compile(linear(runs), checkpointer=saver, attach=[TOLD])
    assert drive.run(graph, None, _watched(config, recorder)) == DONE
    assert [told["kind"] for told in recorder.plans()] == ["continue"]
    assert runs == Counter({"a": 1, "b": 1, "c": 2, "d": 1})


def test_a_plain_call_of_an_auto_resume_graph_tells_its_decision(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashing = ne.compile(linear(runs, crash="c"), checkpointer=saver)
    with pytest.raises(Crash):
        drive.invoke(crashing, {"log": []}, config)
    graph = ne.compile(linear(runs), checkpointer=saver, attach=[ne.AutoResume(), TOLD])
    recorder = Recorder()
    assert drive.invoke(graph, None, _watched(config, recorder)) == DONE
    assert [told["kind"] for told in recorder.plans()] == ["continue"]
    assert runs == Counter({"a": 1, "b": 1, "c": 2, "d": 1})


def _told(saver: Saver, builder: Any, resume: ne.ResumePolicy) -> tuple[Any, Recorder]:
    """The next release, telling its decisions (``TOLD``), and a recorder to watch it."""
    return ne.compile(builder, checkpointer=saver, resume=resume, attach=[TOLD]), Recorder()


def test_a_migration_is_told_once_as_a_migration(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """The call writes the fork that carries the values, then plans again from it (up to
    date): the decision it tells is the one it carried out. Streamed: ``run`` of a thread
    that needs no node invokes nothing, so tells only the run it is called in."""
    two_turns(drive, saver, config)
    graph, recorder = _told(saver, chat(runs, ProfileV2), ne.ResumePolicy(keep_compatible=True))
    list(drive.stream(graph, None, _watched(config, recorder)))
    assert runs == Counter()
    (told,) = recorder.plans()
    assert told["kind"] == "migrate" and told["migrated"] == ["profile"]


def test_a_rewind_that_replays_later_turns_is_told_once(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    graph, recorder = _told(saver, chat(runs, ProfileV3), ne.ResumePolicy(replay_turns=True))
    drive.run(graph, None, _watched(config, recorder))
    assert runs == Counter({"extract": 1, "reply": 2})  # two invocations
    (told,) = recorder.plans()
    assert told["kind"] == "rewind" and len(told["replayed"]) == 1


def test_an_up_to_date_run_tells_the_run_it_is_called_in(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """``run`` of an up-to-date thread invokes nothing: no graph run to be inside of, so
    the event goes to the run ``run`` is called in, when there is one."""
    graph = ne.compile(linear(runs), checkpointer=saver, attach=[TOLD])
    drive.run(graph, {"log": []}, config)
    recorder = Recorder()
    assert drive.run(graph, None, _watched(config, recorder)) == DONE
    assert recorder.plans() == []  # no parent run: nothing to dispatch into, no error
    # Unwrapped: the plan == run harness gives the call callbacks of its own, which would
    # hide those of the run it is called in, as any config's callbacks do.
    if drive.is_async:
        outer = RunnableLambda(lambda _: None, afunc=lambda _: run_module.arun(graph, None, config))
        assert drive.wait(outer.ainvoke(None, {"callbacks": [recorder]})) == DONE
    else:
        outer = RunnableLambda(lambda _: run_module.run(graph, None, config))
        assert outer.invoke(None, {"callbacks": [recorder]}) == DONE
    assert runs == Counter("abcd")
    ((_, (run_id, data, _)),) = [seen for seen in recorder.seen if seen[0] == EVENT]
    assert data["kind"] == "up_to_date"
    assert run_id == recorder.seen[0][1][0]  # the lambda's run


def test_handlers_the_graph_is_configured_with_see_the_event_inside_its_run(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    recorder = Recorder()
    graph = ne.compile(linear(Counter()), checkpointer=saver, attach=[TOLD])
    configured = graph.with_config(callbacks=[recorder])
    given = Recorder()
    assert drive.run(configured, {"log": []}, _watched(config, given)) == DONE
    for seen in (recorder, given):
        assert [kind for kind, _ in seen.seen] == ["root", EVENT]
        assert [told["kind"] for told in seen.plans()] == ["fresh"]


def test_telemetry_adds_nothing_to_checkpoints(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    def metadata(graph: Any, thread: str) -> dict[int, Any]:
        config: RunnableConfig = {"configurable": {"thread_id": thread}}
        drive.run(graph, {"log": []}, _watched(config, Recorder()))
        return {
            t.metadata["step"]: {k: v for k, v in t.metadata.items() if k != "thread_id"}
            for t in saver.list(config)
        }

    quiet = ne.compile(linear(Counter()), checkpointer=saver)
    told = ne.compile(linear(Counter()), checkpointer=saver, attach=[TOLD])
    assert metadata(told, str(uuid.uuid4())) == metadata(quiet, str(uuid.uuid4()))


def test_without_telemetry_nothing_is_told(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    _crashed(drive, saver, config)
    graph = ne.compile(linear(Counter(), {"c": V2}), checkpointer=saver, attach=[ne.AutoResume()])
    recorder = Recorder()
    assert drive.run(graph, None, _watched(config, recorder)) == DONE
    assert recorder.plans() == []
    (root,) = [seen for kind, seen in recorder.seen if kind == "root"]
    assert not [tag for tag in root[1] if tag.startswith("neograph_ext")]


async def _events(graph: Any, input: Any, config: RunnableConfig) -> list[Any]:
    return [event async for event in graph.astream_events(input, config, version="v2")]


def _plan_events(events: list[Any]) -> list[Any]:
    return [e for e in events if e["event"] == "on_custom_event" and e["name"] == EVENT]


async def test_astream_events_of_an_auto_resume_graph_hold_one_plan_event_per_call(
    async_saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashing = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=async_saver)
    with pytest.raises(Crash):
        await crashing.ainvoke({"log": []}, config)
    graph = ne.compile(
        linear(runs, {"c": V2}), checkpointer=async_saver, attach=[ne.AutoResume(), TOLD]
    )
    expected = await ne.aplan(graph, config)

    events = await _events(graph, None, config)
    assert runs == Counter("cd")
    (told,) = _plan_events(events)
    assert told["data"]["kind"] == "rewind"
    assert told["data"]["checkpoint_id"] == expected.checkpoint_id
    roots = [e for e in events if not e["parent_ids"] and e["event"].startswith("on_chain")]
    assert {e["run_id"] for e in roots} == {told["run_id"]}
    start, end = events.index(roots[0]), events.index(roots[-1])
    assert start < events.index(told) < end  # inside the root run
    assert roots[0]["metadata"]["neograph_ext.decision"] == "rewind"
    assert "neograph_ext.decision=rewind" in roots[0]["tags"]
    assert told["tags"] == ["neograph_ext.decision=rewind"]
    assert told["metadata"]["neograph_ext.checkpoint_id"] == expected.checkpoint_id
    nested = [e for e in events if e["parent_ids"]]
    assert nested and not [e for e in nested if "neograph_ext.decision" in e["metadata"]]

    again = await _events(graph, None, config)
    assert runs == Counter("cd")
    assert [e["data"]["kind"] for e in _plan_events(again)] == ["up_to_date"]

    other: RunnableConfig = {"configurable": {"thread_id": str(uuid.uuid4())}}
    assert [e["data"]["kind"] for e in _plan_events(await _events(graph, DONE, other))] == ["fresh"]


async def test_astream_events_without_telemetry_are_langgraphs(
    async_saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    quiet = ne.compile(linear(Counter()), checkpointer=async_saver, attach=[ne.AutoResume()])
    events = await _events(quiet, {"log": []}, config)
    assert _plan_events(events) == []
    assert not [e for e in events for tag in e["tags"] if tag.startswith("neograph_ext")]


async def test_astream_events_of_a_runnable_around_astream_hold_its_plan_event(
    async_saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    """``ne.astream`` yields LangGraph's chunks; its events reach any callbacks of the
    config, or the event stream of a runnable it is called in."""
    graph = ne.compile(linear(Counter()), checkpointer=async_saver, attach=[TOLD])

    async def streamed(input: Any) -> list[Any]:
        # Unwrapped, as in test_an_up_to_date_run_tells_the_run_it_is_called_in.
        return [chunk async for chunk in run_module.astream(graph, input, config)]

    events = [e async for e in RunnableLambda(streamed).astream_events({"log": []}, version="v2")]
    (told,) = _plan_events(events)
    assert told["data"]["kind"] == "fresh"
    (graph_start,) = [
        e for e in events if e["event"] == "on_chain_start" and e["name"] == "LangGraph"
    ]
    assert told["run_id"] == graph_start["run_id"]
