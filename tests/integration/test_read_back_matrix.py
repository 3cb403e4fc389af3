"""Where the read-back check meets the rest of the library: a paused thread, a ``Send``
to a node with a private input schema, a new turn, ... Each probe would catch a
regression of a case the simple ``write -> publish`` tests of ``test_read_back`` miss.

The classes the serializer cannot revive are defined inside the factories, as local
classes: they come back as ``dict`` on every saver, in the process that wrote them.
"""

from __future__ import annotations

import operator
import sys
import types
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.func import entrypoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, create_model

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.functional import task_of
from tests.graphs.pipelines import Crash


class Kept(BaseModel):
    """An importable model: it reads back as itself."""

    text: str


def reviewed(
    saver: BaseCheckpointSaver[Any], runs: Counter[str], model: type[BaseModel] | None = None
) -> Any:
    """``write -> review``: ``write`` stores a model (of a local class unless ``model``
    names one), ``review`` asks a question before it reads it."""

    class Draft(BaseModel):
        text: str

    chosen = model or Draft
    S = TypedDict("S", {"draft": chosen, "out": str}, total=False)  # type: ignore[misc]  # noqa: UP013

    def write(state: Any) -> dict[str, Any]:
        runs["write"] += 1
        return {"draft": chosen(text="hello")}

    def review(state: Any) -> dict[str, Any]:
        answer = interrupt("publish it?")
        runs["review"] += 1
        return {"out": f"{type(state['draft']).__name__}:{answer}"}

    builder = StateGraph(S).add_sequence([write, review]).add_edge(START, "write")
    return ne.compile(builder, checkpointer=saver)


def test_an_answer_to_a_thread_holding_a_value_no_checkpoint_revives_is_refused(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    # A rewind would re-run `write` and ask again; the answer resumes `review` from the
    # checkpoint, where `draft` is a dict again: every answer was set aside (each one
    # re-running `write`), and with reanswer=True `review` got the dict.
    graph = reviewed(saver, runs)
    assert "__interrupt__" in drive.run(graph, {}, config)
    stored = _ids(saver, config)
    for policy in (None, ne.ResumePolicy(reanswer=True), ne.ResumePolicy(on_change="raise")):
        runs.clear()
        with pytest.raises(ne.CheckpointSchemaError) as caught:
            drive.run(graph, Command(resume="yes"), config, resume=policy)
        message = str(caught.value)
        assert "stored value of `draft` does not read back as `Draft`: got `dict`" in message
        assert "waits on a question" in message and "top level of an importable" in message
        assert runs == Counter() and _ids(saver, config) == stored


def test_an_answer_after_its_values_class_moved_is_asked_again_then_applied(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    monkeypatch: pytest.MonkeyPatch,
    runs: Counter[str],
) -> None:
    # The class moved between deploys: the stored path no longer imports, but the class
    # now declared does, so the rewind's value reads back after the pause.
    old = types.ModuleType("moved_models")
    old.Draft = create_model("Draft", text=(str, ...), __module__="moved_models")  # type: ignore[attr-defined, call-overload]
    monkeypatch.setitem(sys.modules, "moved_models", old)
    assert "__interrupt__" in drive.run(reviewed(saver, Counter(), old.Draft), {}, config)
    monkeypatch.delitem(sys.modules, "moved_models")
    graph = reviewed(saver, runs, Kept)
    assert "__interrupt__" in drive.run(graph, Command(resume="yes"), config)  # asked again
    assert runs == Counter({"write": 1})
    assert drive.run(graph, Command(resume="yes"), config)["out"] == "Kept:yes"
    assert runs == Counter({"write": 1, "review": 1})


def _script_class(monkeypatch: pytest.MonkeyPatch, name: str) -> type[BaseModel]:
    """A class of the running script (``__main__``), as a notebook or ``python app.py``
    defines it: this process revives it, a worker importing the graph would not."""
    cls: type[BaseModel] = create_model(name, text=(str, ...), __module__="__main__")  # type: ignore[call-overload]
    monkeypatch.setattr(sys.modules["__main__"], name, cls, raising=False)
    return cls


def test_an_answer_after_a_scripts_class_was_renamed_is_asked_again_then_applied(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    monkeypatch: pytest.MonkeyPatch,
    runs: Counter[str],
) -> None:
    # The script's `MDraft` became `MArticle`, the old name gone: the stored value comes
    # back as a dict, but `MArticle` revives in this process, so the rewind's value reads
    # back after the pause, as for a module's class above.
    old = _script_class(monkeypatch, "MDraft")
    assert "__interrupt__" in drive.run(reviewed(saver, Counter(), old), {}, config)
    monkeypatch.delattr(sys.modules["__main__"], "MDraft")
    graph = reviewed(saver, runs, _script_class(monkeypatch, "MArticle"))
    plan = drive.plan(graph, config)
    assert (plan.kind, plan.blocker) == (ne.PlanKind.REWIND, None)
    assert "__interrupt__" in drive.run(graph, Command(resume="yes"), config)  # asked again
    assert runs == Counter({"write": 1})
    assert drive.run(graph, Command(resume="yes"), config)["out"] == "MArticle:yes"
    assert runs == Counter({"write": 1, "review": 1})


def mapped(runs: Counter[str], *, crash: bool = False) -> Any:
    """``fan`` sends ``work`` three jobs as ``{"job": Job}``, the node's private input
    schema (a TypedDict) holding a model of a local class; with ``crash``, the third
    job fails."""

    class Job(BaseModel):
        n: int

    JobState = TypedDict("JobState", {"job": Job})  # type: ignore[misc]  # noqa: UP013
    Fan = TypedDict("Fan", {"out": Annotated[list[str], operator.add]}, total=False)  # type: ignore[misc]  # noqa: UP013

    def fan(state: Any) -> dict[str, Any]:
        runs["fan"] += 1
        return {}

    def work(given: Any) -> dict[str, Any]:
        runs["work"] += 1
        if crash and given["job"].n == 2:
            raise Crash("the third job failed")
        return {"out": [type(given["job"]).__name__]}

    work.__annotations__ = {"given": JobState, "return": dict}
    builder = StateGraph(Fan).add_node(fan).add_node(work).add_edge(START, "fan")
    builder.add_conditional_edges(
        "fan", lambda _: [Send("work", {"job": Job(n=i)}) for i in range(3)]
    )
    return builder.add_edge("work", END)


def test_a_send_to_a_typeddict_input_holding_a_model_runs_its_sender_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(Crash):
        drive.run(ne.compile(mapped(Counter(), crash=True), checkpointer=saver), {}, config)
    graph = ne.compile(mapped(runs), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"fan"}
    assert "a stored Send to `work` does not read back as `Job`: got `dict`" in str(plan)
    assert sorted(drive.run(graph, None, config)["out"]) == ["Job"] * 3  # was one 'dict'
    assert runs == Counter({"fan": 1, "work": 3})


def chatting(saver: BaseCheckpointSaver[Any], runs: Counter[str], **options: Any) -> Any:
    """``write`` (first turn only) ``-> publish``: a later turn's ``publish`` reads the
    model of a local class ``write`` stored in the first."""

    class Draft(BaseModel):
        text: str

    S = TypedDict("S", {"q": str, "draft": Draft, "out": str}, total=False)  # type: ignore[misc]  # noqa: UP013

    def write(state: Any) -> dict[str, Any]:
        runs["write"] += 1
        return {"draft": Draft(text="hello")}

    def publish(state: Any) -> dict[str, Any]:
        runs["publish"] += 1
        return {"out": f"{type(state['draft']).__name__}:{state['q']}"}

    builder = StateGraph(S).add_node(write).add_node(publish).add_edge("write", "publish")
    builder.add_conditional_edges(START, lambda s: "publish" if "draft" in s else "write")
    return ne.compile(builder, checkpointer=saver, **options)


def test_a_new_turn_from_values_that_do_not_read_back_is_said_and_refused_in_strict_mode(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    graph = chatting(saver, runs)
    assert drive.run(graph, {"q": "one"}, config)["out"] == "Draft:one"
    runs.clear()
    with pytest.raises(ne.CheckpointSchemaError, match="stored value of `draft` does not read"):
        drive.run(graph, {"q": "two"}, config, resume=ne.ResumePolicy(on_change="raise"))
    assert runs == Counter()
    with caplog.at_level("WARNING", logger="neograph_ext"):
        # No rewind can help: the turn reads `draft` from the checkpoint.
        assert drive.run(graph, {"q": "two"}, config)["out"] == "dict:two"
    [said] = [r.getMessage() for r in caplog.records if "a new turn starts" in r.getMessage()]
    assert "stored value of `draft` does not read back as `Draft`: got `dict`" in said
    assert "top level of an importable module" in said and runs == Counter({"publish": 1})


def saving(runs: Counter[str], *, is_async: bool) -> Any:
    """An entrypoint saving a model of a local class for its next turn's ``previous``."""

    class Draft(BaseModel):
        text: str

    def body(text: str, previous: Any) -> Any:
        runs["flow"] += 1
        return entrypoint.final(value=type(previous).__name__, save=Draft(text=text))

    async def aflow(text: str, *, previous: Any = None) -> Any:
        return body(text, previous)

    def flow(text: str, *, previous: Any = None) -> Any:
        return body(text, previous)

    chosen: Any = aflow if is_async else flow
    chosen.__name__ = "flow"
    chosen.__annotations__ = {
        "text": str,
        "previous": Draft | None,
        "return": entrypoint.final[str, Draft],
    }
    return entrypoint()(chosen)


def test_an_entrypoints_previous_that_does_not_read_back_is_said_and_refused_in_strict_mode(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    graph = ne.compile(saving(runs, is_async=drive.is_async), checkpointer=saver)
    assert drive.run(graph, "one", config) == "NoneType"
    with pytest.raises(ne.CheckpointSchemaError, match="stored value of `__previous__` does"):
        drive.run(graph, "two", config, resume=ne.ResumePolicy(on_change="raise"))
    assert runs == Counter({"flow": 1})
    with caplog.at_level("WARNING", logger="neograph_ext"):
        assert drive.run(graph, "two", config) == "dict"
    [said] = [r.getMessage() for r in caplog.records if "a new turn starts" in r.getMessage()]
    assert "`__previous__` does not read back as `Draft`: got `dict`" in said


def nesting(
    runs: Counter[str], *, crash: bool = False, pause: bool = False, local: bool = True
) -> Any:
    """A parent whose one node runs a plainly compiled subgraph ``write -> publish``,
    ``write`` storing a model in the subgraph's own checkpoint: of a local class unless
    ``local`` is False. With ``pause``, ``publish`` asks a question first."""

    class Draft(BaseModel):
        text: str

    model = Draft if local else Kept
    Sub = TypedDict("Sub", {"draft": model, "out": str}, total=False)  # type: ignore[misc]  # noqa: UP013
    Parent = TypedDict("Parent", {"out": str}, total=False)  # type: ignore[misc]  # noqa: UP013

    def write(state: Any) -> dict[str, Any]:
        runs["write"] += 1
        return {"draft": model(text="hello")}

    def publish(state: Any) -> dict[str, Any]:
        if pause:
            interrupt("publish it?")
        runs["publish"] += 1
        if crash:
            raise Crash("publish")
        return {"out": type(state["draft"]).__name__}

    inner = StateGraph(Sub).add_sequence([write, publish]).add_edge(START, "write").compile()
    return StateGraph(Parent).add_node("sub", inner).add_edge(START, "sub")


def test_a_value_in_a_subgraphs_checkpoint_that_does_not_read_back_restarts_it(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    with caplog.at_level("WARNING", logger="neograph_ext"):
        crashing = ne.compile(nesting(Counter(), crash=True), checkpointer=saver)
    [warning] = [r.getMessage() for r in caplog.records if "will not read back" in r.getMessage()]
    assert "subgraph `sub` channel `draft`" in warning
    with pytest.raises(Crash):
        drive.run(crashing, {}, config)
    crashed = _ids(saver, config)
    graph = ne.compile(nesting(runs), checkpointer=saver)
    with pytest.raises(ne.CheckpointSchemaError, match="in its subgraph's checkpoint"):
        drive.run(graph, None, config, resume=ne.ResumePolicy(on_change="raise"))
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"sub"}
    assert (
        "node `sub`: in its subgraph's checkpoint, stored value of `draft` does not read back "
        "as `Draft`: got `dict`"
    ) in str(plan)
    assert drive.run(graph, None, config)["out"] == "Draft"  # was 'dict'
    assert runs == Counter({"write": 1, "publish": 1})
    assert crashed < _ids(saver, config)  # a fork: the crashed branch is kept


def _ids(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> set[str]:
    return {t.checkpoint["id"] for t in list(saver.list(config))}


def test_a_paused_subgraph_holding_a_value_no_checkpoint_revives_refuses_the_answer(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(nesting(runs, pause=True), checkpointer=saver)
    assert "__interrupt__" in drive.run(graph, {}, config)
    runs.clear()
    with pytest.raises(ne.CheckpointSchemaError, match="waits on a question") as caught:
        drive.run(graph, Command(resume="yes"), config)
    assert "in its subgraph's checkpoint, stored value of `draft`" in str(caught.value)
    assert runs == Counter()


def test_a_subgraph_value_that_reads_back_resumes_where_it_stopped(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(Crash):
        drive.run(
            ne.compile(nesting(Counter(), crash=True, local=False), checkpointer=saver), {}, config
        )
    graph = ne.compile(nesting(runs, local=False), checkpointer=saver)
    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    assert drive.run(graph, None, config)["out"] == "Kept"
    assert runs == Counter({"publish": 1})


def clearing(
    saver: BaseCheckpointSaver[Any], runs: Counter[str], *, crash: bool = False, **options: Any
) -> Any:
    """``write -> read -> clear -> publish``: ``clear`` empties the ``draft`` ``write``
    stored (a model of a local class), so the head holds ``None`` there while the
    checkpoint before ``read`` holds the model."""

    class Draft(BaseModel):
        text: str

    S = TypedDict("S", {"draft": Draft | None, "seen": str, "out": str}, total=False)  # type: ignore[misc]  # noqa: UP013

    def write(state: Any) -> dict[str, Any]:
        runs["write"] += 1
        return {"draft": Draft(text="hello")}

    def read(state: Any) -> dict[str, Any]:
        runs["read"] += 1
        return {"seen": type(state["draft"]).__name__}

    def clear(state: Any) -> dict[str, Any]:
        runs["clear"] += 1
        return {"draft": None}

    def publish(state: Any) -> dict[str, Any]:
        runs["publish"] += 1
        if crash:
            raise Crash("publish")
        return {"out": state["seen"]}

    builder = StateGraph(S).add_sequence([write, read, clear, publish])
    return ne.compile(builder.add_edge(START, "write"), checkpointer=saver, **options)


def test_a_rewind_target_holding_a_value_that_does_not_read_back_forks_before_its_writer(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    with pytest.raises(Crash):
        drive.run(clearing(saver, Counter(), crash=True), {}, config)
    crashed = _ids(saver, config)
    graph = clearing(saver, runs, versions={"read": "v2"})  # `read` changed: rewind to it
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"write", "read"}
    assert "node `write`: stored value of `draft` does not read back as `Draft | None`" in str(plan)
    assert drive.run(graph, None, config)["out"] == "Draft"  # was 'dict'
    assert runs == Counter({"write": 1, "read": 1, "clear": 1, "publish": 1})
    assert crashed < _ids(saver, config)  # a fork: the crashed branch is kept


def test_a_rewind_handing_on_a_value_of_an_earlier_turn_that_does_not_read_back_says_so(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    # The head holds the value too: it crossed turns through the checkpoint, which no
    # rewind can help. The rewind of the changed `publish` goes on, and says so.
    graph = chatting(saver, Counter())
    for question in ("one", "two"):
        drive.run(graph, {"q": question}, config)
    changed = chatting(saver, runs, versions={"publish": "v2"})
    plan = drive.plan(changed, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"publish"}
    assert plan.blocker is None
    [note] = [n for n in plan.notes if "hands on stored values" in n]
    assert "stored value of `draft` does not read back as `Draft`: got `dict`" in note
    with caplog.at_level("WARNING", logger="neograph_ext"):
        assert drive.run(changed, None, config)["out"] == "dict:two"
    assert [r for r in caplog.records if "hands on stored values" in r.getMessage()]
    assert runs == Counter({"publish": 1})


def approving(runs: Counter[str], *, is_async: bool) -> Any:
    """An entrypoint whose task ``write`` returns a model of a local class, then asks a
    question before it reads the result."""

    class Draft(BaseModel):
        text: str

    def write_body(text: str) -> Any:
        runs["write"] += 1
        return Draft(text=text)

    write = task_of("write", write_body, {"text": str, "return": Draft}, is_async=is_async)

    def answered(draft: Any) -> str:
        answer = interrupt("publish it?")
        runs["publish"] += 1
        return f"{type(draft).__name__}:{answer}"

    async def aflow(text: str) -> str:
        return answered(await write(text))

    def flow(text: str) -> str:
        return answered(write(text).result())

    return entrypoint()(aflow if is_async else flow)


def test_an_answer_to_an_entrypoint_whose_cached_result_no_checkpoint_revives_is_refused(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    # Each answer re-ran `write` and asked again: its cached result came back as a dict.
    graph = ne.compile(approving(runs, is_async=drive.is_async), checkpointer=saver)
    assert "__interrupt__" in drive.run(graph, "hello", config)
    stored = _ids(saver, config)
    runs.clear()
    with pytest.raises(ne.CheckpointSchemaError, match="waits on a question") as caught:
        drive.run(graph, Command(resume="yes"), config)
    assert "cached result of task `write` does not read back as `Draft`" in str(caught.value)
    assert runs == Counter() and _ids(saver, config) == stored
