"""The work inside a subgraph is kept: a change inside a subgraph whose task is still
pending (it waits on a question, or crashed) is rewound in the subgraph's own namespace,
at depth 1 and 2, for a subgraph compiled plainly and ``checkpointer=True``.

Release 1 runs ``research``, then ``worker``, and stops: waiting on a question in
``review``, crashed in ``review``, or (``finished``) crashed in ``end`` after the
subgraph finished. Release 2 changes the type of the channel one inner node writes:
``draft`` (upstream of the pause), ``review`` (at it) or ``polish`` (after it). Every node
counts its runs and writes its release, so the final state shows which code made it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.pipelines import Crash

INNER = ("prep", "draft", "review", "polish")
Path = Literal["interrupt", "crash", "finished"]
Held = Literal["node", "body", "tool"]


def _state(changed: str | None, keys: tuple[str, ...]) -> type:
    """A state of ``keys`` (str), ``changed`` typed ``int`` instead (release 2)."""
    fields: dict[str, Any] = {key: int if key == changed else str for key in keys}
    return TypedDict("InsideState", fields, total=False)  # type: ignore[operator]


def _built(
    runs: Counter[str],
    release: int,
    changed: str,
    depth: int,
    persist: bool,
    path: Path,
    held: Held = "node",
) -> StateGraph[Any, Any, Any, Any]:
    """``research -> worker -> end``; ``worker`` runs ``prep -> draft -> review ->
    polish`` (depth 1), or ``outline -> mid`` with ``mid`` running them (depth 2): added
    as a node, or (``body``) called from the node's body."""
    changing = changed if release == 2 else None

    def counted(name: str) -> Any:
        def fn(state: Any) -> dict[str, Any]:
            runs[name] += 1
            if release == 1 and path == "crash" and name == "review":
                raise Crash(name)
            if release == 1 and path == "finished" and name == "end":
                raise Crash(name)
            if name == "review" and path == "interrupt":
                return {name: f"{release}:{interrupt('ok?')}"}
            return {name: str(release)}

        return fn

    def subgraph(names: tuple[str, ...], keys: tuple[str, ...]) -> Any:
        sub = StateGraph(_state(changing, keys))
        previous = START
        for name in names:
            sub.add_node(name, counted(name) if name != "mid" else inner)
            sub.add_edge(previous, name)
            previous = name
        return sub.compile(checkpointer=True) if persist else sub.compile()

    inner = subgraph(INNER, ("doc", *INNER))
    worker = inner if depth == 1 else subgraph(("outline", "mid"), ("doc", "outline", *INNER))
    builder = StateGraph(_state(None, ("doc", "research", "end", "polish")))
    builder.add_node("research", counted("research"))

    def calling(state: Any) -> dict[str, Any]:
        return {"polish": worker.invoke(state)["polish"]}

    @tool
    def write(doc: str) -> str:
        """Writes the document."""
        return str(worker.invoke({"doc": doc})["polish"])

    def by_tool(state: Any) -> dict[str, Any]:
        return {"polish": write.invoke({"doc": state["doc"]})}

    builder.add_node("worker", {"node": worker, "body": calling, "tool": by_tool}[held])
    builder.add_node("end", counted("end"))
    builder.add_edge(START, "research")
    builder.add_edge("research", "worker")
    builder.add_edge("worker", "end")
    return builder


def _started(drive: Drive, graph: Any, config: RunnableConfig, path: Path) -> None:
    """Release 1's run, up to where it stops."""
    if path == "interrupt":
        assert drive.run(graph, {"doc": "d"}, config)["__interrupt__"]
    else:
        with pytest.raises(Crash):
            drive.run(graph, {"doc": "d"}, config)


def _cases() -> list[Any]:
    """Every case for a subgraph added as a node; one called from the node's body or
    from a tool is the same to LangGraph once it runs, so it takes depth 1 and 2,
    plainly compiled, pausing or crashing inside, with the change upstream of the pause
    or at it."""
    added = [
        (depth, persist, path, changed, "node")
        for depth in (1, 2)
        for persist in (False, True)
        for path in ("interrupt", "crash", "finished")
        for changed in ("draft", "review", "polish")
    ]
    called = [
        (depth, False, path, changed, held)
        for depth in (1, 2)
        for path in ("interrupt", "crash")
        for changed in ("draft", "review")
        for held in ("body", "tool")
    ]
    return [
        pytest.param(*case, id="-".join(map(str, case)).replace("False", "plain"))
        for case in added + called
    ]


@pytest.mark.parametrize(("depth", "persist", "path", "changed", "held"), _cases())
def test_a_change_inside_a_pending_subgraph_keeps_the_inner_work_upstream_of_it(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    depth: int,
    persist: bool,
    path: Path,
    changed: str,
    held: Held,
) -> None:
    runs: Counter[str] = Counter()
    built = _built(runs, 1, changed, depth, persist, path, held)
    old = ne.compile(built, checkpointer=saver)
    _started(drive, old, config, path)
    runs.clear()
    new = ne.compile(_built(runs, 2, changed, depth, persist, path, held), checkpointer=saver)
    plan = drive.plan(new, config)
    where = ("worker",) if depth == 1 else ("worker", "mid")
    upstream = ("prep",) if depth == 1 else ("outline", "prep")
    if path == "finished":
        # LangGraph resumes a subgraph only while its task is pending: it re-runs whole.
        assert plan.kind is ne.PlanKind.REWIND and not plan.inside
        assert any("`worker` finished" in note for note in plan.notes)
        drive.run(new, None, config)
        assert runs == Counter((*upstream, "draft", "review", "polish", "end"))
        return
    if held == "tool" and depth == 2:
        # LangGraph's get_state does not read a graph a tool calls, nor what it waits on.
        assert plan.kind is ne.PlanKind.REWIND and not plan.inside
        assert any("of worker > mid, which it waits on, were not read" in n for n in plan.notes)
        answer = Command(resume="yes") if path == "interrupt" else None
        result = drive.run(new, answer, config)
        if path == "interrupt":
            result = drive.run(new, Command(resume="yes"), config)
        assert runs["outline"] == runs["prep"] == runs["draft"] == 1
        assert result["end"] == result["polish"] == "2"
        return
    if changed == "draft":
        assert plan.kind is ne.PlanKind.REWIND
        (inside,) = plan.inside
        assert (inside.path, inside.kept) == (where, ("prep",))
        assert inside.rerun == ("draft", "review")
        assert " > ".join((*where, "draft")) in str(plan)
        with pytest.raises(ne.CheckpointSchemaError, match=" > ".join((*where, "draft"))):
            drive.run(new, None, config, resume=ne.ResumePolicy(on_change="raise"))
    else:
        # What changed has not run yet: the subgraph resumes where it is.
        assert plan.kind is ne.PlanKind.CONTINUE, str(plan)
    answer = Command(resume="yes") if path == "interrupt" else None
    result = drive.run(new, answer, config)
    if path == "interrupt" and changed == "draft":
        # The question is asked again, as at the top level; the answer was set aside.
        assert result["__interrupt__"]
        result = drive.run(new, Command(resume="yes"), config)
    again = ("draft",) if changed == "draft" else ()
    asked = ("review",) if path == "interrupt" and changed == "draft" else ()
    assert runs == Counter((*again, *asked, "review", "polish", "end"))
    assert result["end"] == result["polish"] == "2"
    assert drive.plan(new, config).kind is ne.PlanKind.UP_TO_DATE
