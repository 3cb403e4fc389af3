"""What ``_langgraph_questions`` knows of how LangGraph files questions and answers,
checked against the installed LangGraph: each test fails loudly when an upgrade changes it."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from neograph_ext.decision._langgraph_questions import (
    Question,
    answered,
    by_interrupt_id,
    open_questions,
)


class State(TypedDict, total=False):
    said: str
    other: str


def _asking() -> StateGraph[Any, Any, Any, Any]:
    """``twice`` asks two questions in turn; ``once``, beside it, one."""

    def twice(state: State) -> State:
        return {"said": f"{interrupt('first')},{interrupt('second')}"}

    def once(state: State) -> State:
        return {"other": str(interrupt("only"))}

    builder = StateGraph(State)
    builder.add_node("twice", twice)
    builder.add_node("once", once)
    builder.add_edge(START, "twice")
    builder.add_edge(START, "once")
    return builder


def test_each_open_question_is_told_by_its_node_and_the_answers_before_it() -> None:
    saver = InMemorySaver()
    graph = _asking().compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({}, config)
    first = {i.value: i.id for i in graph.get_state(config).interrupts}
    writes = saver.get_tuple(config).pending_writes  # type: ignore[union-attr]
    assert set(open_questions(graph.nodes, writes) or ()) == {
        Question(first["first"], "twice", ()),
        Question(first["only"], "once", ()),
    }

    graph.invoke(Command(resume={first["first"]: "a", first["only"]: "b"}), config)
    (second,) = graph.get_state(config).interrupts
    writes = saver.get_tuple(config).pending_writes  # type: ignore[union-attr]
    # ``once`` finished: its answered question is no longer open.
    assert open_questions(graph.nodes, writes) == (Question(second.id, "twice", ("a",)),)
    # Every task's answers, finished or waiting.
    assert answered(graph.nodes, writes) == {"twice": ("a",), "once": ("b",)}
    assert by_interrupt_id({second.id: "c"}) and not by_interrupt_id({"x": "c"})


def test_a_question_asked_inside_a_subgraph_is_unknown() -> None:
    inner = _asking().compile()
    builder = StateGraph(State)
    builder.add_node("sub", inner)
    builder.add_edge(START, "sub")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    graph.invoke({}, config)
    assert graph.get_state(config).interrupts
    writes = saver.get_tuple(config).pending_writes  # type: ignore[union-attr]
    assert open_questions(graph.nodes, writes) is None
    assert answered(graph.nodes, writes) == {}


def test_a_task_finished_on_sqlite_has_its_last_answer_read_from_the_input(
    tmp_path: Any,
) -> None:
    """SQLite keeps a task's first ``__resume__`` write when the task later finishes: the
    bare answer to its last question is the step's input (read from the null task); one
    keyed by id is lost, and the task's answers are unknown."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(tmp_path / "t.sqlite")) as saver:
        builder = StateGraph(State)
        builder.add_node("twice", _asking().nodes["twice"].runnable)
        builder.add_edge(START, "twice")
        graph = builder.compile(checkpointer=saver)
        for thread, keyed in (("bare", False), ("keyed", True)):
            config: Any = {"configurable": {"thread_id": thread}}
            graph.invoke({}, config)
            graph.invoke(Command(resume="a"), config)
            (second,) = graph.get_state(config).interrupts
            graph.invoke(Command(resume={second.id: "b"} if keyed else "b"), config)
            history = list(saver.list(config))
            writes = [w for tup in history for w in tup.pending_writes or ()]
            assert answered(graph.nodes, writes) == ({} if keyed else {"twice": ("a", "b")})
