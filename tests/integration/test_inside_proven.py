"""The work inside a pending subgraph is kept only where the resume is then what a fresh
run of the new code gives; elsewhere the parent node re-runs whole (or, for a human edit,
the rewind is refused), and the plan says why (``_inside.refusal``).

Release 1 runs ``research``, then ``worker`` (a subgraph) and stops inside it, waiting
on a question. Release 2 adds a field to a model an inner node writes, upstream of the
question. Every node counts its runs, inside and outside the subgraph, and the final
state is compared with what a fresh run of release 2 gives.
"""

from __future__ import annotations

import json
import operator
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import deployed, model

Builder = StateGraph[Any, Any, Any, Any]
Held = Literal["node", "body", "tool"]


def _draft(release: int) -> type[BaseModel]:
    """The model ``draft`` writes: release 2 adds a required field."""
    fields: dict[str, Any] = {"text": (str, ...)}
    if release == 2:
        fields["words"] = (int, ...)
    made = model("Draft", **fields)
    deployed(made)
    return made


def _work(draft: type[BaseModel], **fields: Any) -> type:
    """The subgraph's state: ``fields`` and the ``Draft`` channel ``draft``."""
    return TypedDict("Work", {"draft": draft, **fields}, total=False)  # type: ignore[operator]


def _made(draft: type[BaseModel], release: int, text: str) -> BaseModel:
    return draft(text=text, words=len(text)) if release == 2 else draft(text=text)


def _counted(runs: Counter[str], name: str, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def counting(state: Any) -> Any:
        runs[name] += 1
        return fn(state)

    return counting


def _parent(runs: Counter[str], worker: Any, state: type, sends: Sequence[str] = ()) -> Builder:
    """``research -> worker`` (by one edge, or one ``Send`` per topic of ``sends``)."""
    builder = StateGraph(state)
    builder.add_node("research", _counted(runs, "research", lambda s: {}))
    builder.add_node("worker", worker)
    builder.add_edge(START, "research")
    if sends:
        fan = [Send("worker", {"topic": topic}) for topic in sends]
        builder.add_conditional_edges("research", lambda s: fan, ["worker"])
    else:
        builder.add_edge("research", "worker")
    return builder


def _asked(drive: Drive, graph: Any, config: RunnableConfig) -> list[Any]:
    """The questions the thread waits on, at any depth."""
    state = drive.get_state(graph, config, subgraphs=True)
    found: list[Any] = []
    pending = list(state.tasks)
    while pending:
        task = pending.pop()
        found += task.interrupts
        if task.state is not None:
            pending += task.state.tasks
    return found


def _answered_until_done(
    drive: Drive, graph: Any, config: RunnableConfig, answer: Callable[[Any], str]
) -> tuple[Any, list[str]]:
    """Answers every question asked, by id, until the thread finishes; the final state
    and the questions asked, in order."""
    asked: list[str] = []
    result: Any = None
    for _ in range(6):
        questions = {q.id: q.value for q in _asked(drive, graph, config)}
        if not questions:
            return result, asked
        asked += sorted(questions.values())
        result = drive.run(
            graph, Command(resume={i: answer(v) for i, v in questions.items()}), config
        )
    raise AssertionError(f"the thread never finished: asked {asked}")


# 1. Sends into a subgraph node


class Sent(TypedDict, total=False):
    results: Annotated[list[str], operator.add]


def _sends(runs: Counter[str], release: int, waiting: tuple[str, ...], depth: int) -> Builder:
    """``research`` sends ``a`` and ``b`` to ``worker``: ``draft -> review``; the review
    of a topic of ``waiting`` asks a question, the other answers itself. At depth 2,
    ``worker`` runs ``outline``, which sends them to ``mid``, running those."""
    draft = _draft(release)

    work = _work(draft, topic=str, results=Annotated[list[str], operator.add])

    def review(state: Any) -> dict[str, list[str]]:
        topic = state["topic"]
        answer = interrupt(f"ok {topic}?") if topic in waiting else "auto"
        fields = ",".join(sorted(type(state["draft"]).model_fields))
        return {"results": [f"{topic}:{answer}:{fields}"]}

    sub = StateGraph(work)
    sub.add_node(
        "draft", _counted(runs, "draft", lambda s: {"draft": _made(draft, release, s["topic"])})
    )
    sub.add_node("review", _counted(runs, "review", review))
    sub.add_edge(START, "draft")
    sub.add_edge("draft", "review")
    if depth == 1:
        return _parent(runs, sub.compile(), Sent, sends=("a", "b"))
    outer = StateGraph(Sent)
    outer.add_node("outline", _counted(runs, "outline", lambda s: {}))
    outer.add_node("mid", sub.compile())
    outer.add_edge(START, "outline")
    fan = [Send("mid", {"topic": topic}) for topic in ("a", "b")]
    outer.add_conditional_edges("outline", lambda s: fan, ["mid"])
    return _parent(runs, outer.compile(), Sent)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("waiting", [("a", "b"), ("b",)], ids=["both-wait", "one-finished"])
def test_sends_into_a_changed_subgraph_re_run_the_step_at_the_parent(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    waiting: tuple[str, ...],
    depth: int,
) -> None:
    runs: Counter[str] = Counter()
    old = ne.compile(_sends(runs, 1, waiting, depth), checkpointer=saver)
    assert drive.run(old, {}, config)["__interrupt__"]
    runs.clear()
    new = ne.compile(_sends(runs, 2, waiting, depth), checkpointer=saver)
    plan = drive.plan(new, config)
    # One fork inside cannot cover two sends, and a finished send's result is stale.
    assert plan.kind is ne.PlanKind.REWIND and not plan.inside, str(plan)
    sent = "worker" if depth == 1 else "worker > mid"
    assert any(f"{sent} runs 2 tasks (a Send each)" in note for note in plan.notes), str(plan)
    assert set(plan.kept) == {"research"}
    result, asked = _answered_until_done(drive, new, config, lambda question: "yes")
    # The answers given to release 1's questions were set aside, each asked once again.
    assert asked == [f"ok {topic}?" for topic in waiting] * 2
    assert sorted(result["results"]) == [
        f"{topic}:{'yes' if topic in waiting else 'auto'}:text,words" for topic in ("a", "b")
    ]
    outline = Counter(outline=1) if depth == 2 else Counter()
    assert runs == Counter(draft=2, review=2 + len(waiting)) + outline
    assert drive.plan(new, config).kind is ne.PlanKind.UP_TO_DATE


# 2. A human edit inside a waiting subgraph


class Edited(TypedDict, total=False):
    doc: str
    review: str


def _edited(runs: Counter[str], release: int, persist: bool) -> Builder:
    """``worker``: ``shape -> note -> review``; ``shape`` writes a ``Draft``, ``note``
    a string a person may edit, ``review`` asks and reports the note."""
    draft = _draft(release)

    work = _work(draft, doc=str, note=str, review=str)

    sub = StateGraph(work)
    sub.add_node("shape", _counted(runs, "shape", lambda s: {"draft": _made(draft, release, "x")}))
    sub.add_node("note", _counted(runs, "note", lambda s: {"note": "machine"}))
    sub.add_node(
        "review",
        _counted(runs, "review", lambda s: {"review": f"{interrupt('ok?')}:{s['note']}"}),
    )
    sub.add_edge(START, "shape")
    sub.add_edge("shape", "note")
    sub.add_edge("note", "review")
    worker = sub.compile(checkpointer=True) if persist else sub.compile()
    return _parent(runs, worker, Edited)


@pytest.mark.parametrize("persist", [False, True], ids=["plain", "checkpointer"])
def test_a_rewind_inside_from_before_a_human_edit_is_refused(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, persist: bool
) -> None:
    runs: Counter[str] = Counter()
    old = ne.compile(_edited(runs, 1, persist), checkpointer=saver)
    assert drive.run(old, {"doc": "d"}, config)["__interrupt__"]
    (task,) = drive.get_state(old, config, subgraphs=True).tasks
    edit = drive.update_state(old, task.state.config, {"note": "human"}, as_node="note")
    runs.clear()
    new = ne.compile(_edited(runs, 2, persist), checkpointer=saver)
    plan = drive.plan(new, config)
    assert plan.blocker is not None and "edit(s) made by hand" in plan.blocker
    assert (
        f"checkpoint {edit['configurable']['checkpoint_id']} of worker set `note`" in plan.blocker
    )
    with pytest.raises(ne.CheckpointSchemaError, match="update_state inside a subgraph"):
        drive.run(new, Command(resume="yes"), config)
    assert runs == Counter()


def test_an_edit_after_the_point_the_subgraph_resumes_from_is_kept(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    # The change is of the pending node itself: nothing finished inside re-runs.
    runs: Counter[str] = Counter()
    old = ne.compile(_edited(runs, 1, False), checkpointer=saver)
    assert drive.run(old, {"doc": "d"}, config)["__interrupt__"]
    (task,) = drive.get_state(old, config, subgraphs=True).tasks
    drive.update_state(old, task.state.config, {"note": "human"}, as_node="note")
    runs.clear()
    new = ne.compile(_edited(runs, 1, False), checkpointer=saver, versions={"worker": "v2"})
    assert drive.plan(new, config).blocker is None
    assert drive.run(new, Command(resume="yes"), config)["review"] == "yes:human"
    assert runs == Counter(review=1)


# 3. Questions inside a subgraph


class Asked(TypedDict, total=False):
    doc: str
    q1: str
    q2: str


def _two_questions(runs: Counter[str], release: int, one_node: bool, held: Held) -> Builder:
    """``worker``: ``ask1 -> shape -> ask2`` (each ``ask`` asks one question), or
    (``one_node``) ``shape -> ask`` asking both; ``shape`` writes a ``Draft``. Added as
    the node, or called from its body or from a tool it calls (``held``)."""
    draft = _draft(release)
    work = _work(draft, doc=str, q1=str, q2=str)

    sub = StateGraph(work)
    shape = _counted(runs, "shape", lambda s: {"draft": _made(draft, release, "x")})
    if one_node:
        sub.add_node("shape", shape)
        sub.add_node(
            "ask", _counted(runs, "ask", lambda s: {"q1": interrupt("q1"), "q2": interrupt("q2")})
        )
        sub.add_edge(START, "shape")
        sub.add_edge("shape", "ask")
    else:
        sub.add_node("ask1", _counted(runs, "ask1", lambda s: {"q1": interrupt("q1")}))
        sub.add_node("shape", shape)
        sub.add_node("ask2", _counted(runs, "ask2", lambda s: {"q2": interrupt("q2")}))
        sub.add_edge(START, "ask1")
        sub.add_edge("ask1", "shape")
        sub.add_edge("shape", "ask2")
    worker = sub.compile()

    def answers(doc: str) -> dict[str, str]:
        done = worker.invoke({"doc": doc})
        return {"q1": done["q1"], "q2": done["q2"]}

    @tool
    def asking(doc: str) -> str:
        """Asks both questions."""
        return json.dumps(answers(doc))

    def by_tool(state: Any) -> dict[str, str]:
        return dict(json.loads(asking.invoke({"doc": state["doc"]})))

    node = {"node": worker, "body": lambda s: answers(s["doc"]), "tool": by_tool}[held]
    return _parent(runs, node, Asked)


@pytest.mark.parametrize("held", ["node", "body", "tool"])
@pytest.mark.parametrize("one_node", [False, True], ids=["two-nodes", "one-node"])
def test_an_answer_inside_is_never_applied_to_another_question(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    one_node: bool,
    held: Held,
) -> None:
    runs: Counter[str] = Counter()
    old = ne.compile(_two_questions(runs, 1, one_node, held), checkpointer=saver)
    assert drive.run(old, {"doc": "d"}, config)["__interrupt__"]
    assert drive.run(old, Command(resume="old answer"), config)["__interrupt__"]
    runs.clear()
    new = ne.compile(_two_questions(runs, 2, one_node, held), checkpointer=saver)
    plan = drive.plan(new, config)
    assert plan.kind is ne.PlanKind.REWIND and not plan.inside, str(plan)
    assert any("a question inside it was answered" in note for note in plan.notes)
    assert set(plan.kept) == {"research"}
    # The answer given now was given for q2, asked under release 1: set aside.
    assert drive.run(new, Command(resume="set aside"), config)["__interrupt__"]
    result, asked = _answered_until_done(drive, new, config, lambda question: f"to {question}")
    assert asked == ["q1", "q2"]
    assert (result["q1"], result["q2"]) == ("to q1", "to q2")
    asks = Counter(ask=3) if one_node else Counter(ask1=2, ask2=2)
    assert runs == Counter(shape=1) + asks


# 4. A DeltaChannel inside a subgraph


class Logged(TypedDict, total=False):
    doc: str
    log: list[str]


def _logged(runs: Counter[str], release: int) -> Builder:
    """``worker``: ``prep -> shape -> after -> review``, each appending its name to a
    ``DeltaChannel``; ``shape`` writes a ``Draft``; ``review`` asks and reports the log."""
    # Imported here: DeltaChannel arrived in langgraph 1.2, and the rest of this module
    # runs on the oldest versions too (make test-oldest).
    from langgraph.channels.delta import DeltaChannel

    from tests.graphs.delta import extend

    draft = _draft(release)

    items = Annotated[list[str], DeltaChannel(extend, snapshot_frequency=1000)]
    work = _work(draft, doc=str, items=items, log=list[str])

    def appending(name: str, more: Callable[[], dict[str, Any]] = dict) -> Callable[[Any], Any]:
        return _counted(runs, name, lambda s: {"items": [name], **more()})

    sub = StateGraph(work)
    sub.add_node("prep", appending("prep"))
    sub.add_node("shape", appending("shape", lambda: {"draft": _made(draft, release, "x")}))
    sub.add_node("after", appending("after"))
    sub.add_node(
        "review",
        _counted(runs, "review", lambda s: {"log": [*s["items"], interrupt("ok?")]}),
    )
    sub.add_edge(START, "prep")
    sub.add_edge("prep", "shape")
    sub.add_edge("shape", "after")
    sub.add_edge("after", "review")
    return _parent(runs, sub.compile(), Logged)


def test_a_delta_channel_inside_re_runs_the_parent_node_whole(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    old = ne.compile(_logged(runs, 1), checkpointer=saver)
    assert drive.run(old, {"doc": "d"}, config)["__interrupt__"]
    runs.clear()
    new = ne.compile(_logged(runs, 2), checkpointer=saver)
    plan = drive.plan(new, config)
    assert plan.kind is ne.PlanKind.REWIND and not plan.inside, str(plan)
    assert any("worker holds DeltaChannel `items`" in note for note in plan.notes)
    assert drive.run(new, Command(resume="set aside"), config)["__interrupt__"]
    result = drive.run(new, Command(resume="yes"), config)
    assert result["log"] == ["prep", "shape", "after", "yes"]
    assert runs == Counter(prep=1, shape=1, after=1, review=2)
