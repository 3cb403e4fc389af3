"""Graphs the CLI tests point GRAPH at: module-level builders and compiled graphs.

``v1`` and ``v2`` are the same pipeline ``a -> b -> c -> d`` before and after a deploy
that changed node ``c``'s output model: ``Review.score`` went from ``int`` to ``float``.
Both models are named ``Review`` and live in this module, so the field is the only
difference the fingerprints see.
"""

from __future__ import annotations

import operator
from itertools import pairwise
from typing import Annotated, Any, TypedDict

from langgraph.channels import LastValue
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import NodeBuilder, Pregel
from langgraph.types import interrupt
from pydantic import BaseModel, create_model

import neograph_ext
from tests.cli import cli_moved


class State(TypedDict, total=False):
    """What every node appends to, and the document the run was started with."""

    doc: str
    log: Annotated[list[str], operator.add]


ReviewV1: type[BaseModel] = create_model("Review", __module__=__name__, score=(int, ...))
ReviewV2: type[BaseModel] = create_model("Review", __module__=__name__, score=(float, ...))
Review = ReviewV1
"""What a stored ``Review`` revives as (an entrypoint's cached task results are stored
whole): the class of the code before the deploy."""


def _node(name: str, returns: object = None) -> Any:
    def fn(state: State) -> dict[str, Any]:
        return {"log": [name]}

    fn.__name__ = name
    if returns is not None:
        fn.__annotations__ = {"state": State, "return": returns}
    return fn


def pipeline(review: type[BaseModel], names: str = "abcd") -> StateGraph[Any, Any, Any, Any]:
    """A linear pipeline over ``names``; node ``c`` declares ``review`` as its output."""
    builder = StateGraph(State)
    for name in names:
        builder.add_node(name, _node(name, review if name == "c" else None))
    builder.add_edge(START, names[0])
    for before, after in pairwise(names):
        builder.add_edge(before, after)
    builder.add_edge(names[-1], END)
    return builder


v1 = pipeline(ReviewV1)
"""Before the deploy."""

v2 = pipeline(ReviewV2)
"""After the deploy: ``c`` now returns ``score: float``."""

other = pipeline(ReviewV1, names="wxyz")
"""A different graph altogether: no node in common with ``v1``."""


def _with_local_model() -> StateGraph[Any, Any, Any, Any]:
    class Draft(BaseModel):  # a local class: its values cannot read back from a checkpoint
        text: str

    drafting = TypedDict("Drafting", {"draft": Draft}, total=False)  # type: ignore[misc]  # noqa: UP013

    def write(state: Any) -> dict[str, Any]:
        return {"draft": Draft(text="hello")}

    return StateGraph(drafting).add_node(write).add_edge(START, "write")


local_model = _with_local_model()
"""A graph whose ``draft`` key is typed with a local class."""

compiled_v2 = neograph_ext.compile(v2, checkpointer=None)
"""``v2`` compiled by neograph-ext: the CLI attaches the database's saver to it."""

plain_v2 = v2.compile()
"""``v2`` compiled by plain LangGraph: the CLI compiles it with neograph-ext."""

not_a_graph = 42

raw_pregel = Pregel(
    nodes={"a": NodeBuilder().subscribe_only("a").do(str.upper).write_to("b")},
    channels={"a": LastValue(str), "b": LastValue(str)},
    input_channels="a",
    output_channels="b",
)
"""A Pregel built by hand, of no builder and no ``@entrypoint``: nothing to fingerprint."""

HOSTILE = "\x1b]0;pwned\x07\x1b[2J[red]x[/red]\x9b\x7f"
"""Stored text that would retitle the window and clear the screen if printed raw: an
OSC title, a CSI clear, rich markup, a C1 CSI and DEL."""


def hostile(score: type) -> StateGraph[Any, Any, Any, Any]:
    """A node and an output model whose names carry ``HOSTILE``; ``score`` is the type of
    the model's field, so two versions differ and the diff names the model."""
    review = create_model(f"Review{HOSTILE}", __module__=__name__, score=(score, ...))
    first, second = f"n{HOSTILE}", "c"
    builder = StateGraph(State)
    builder.add_node(first, _node(first))
    builder.add_node(second, _node(second, review))
    builder.add_edge(START, first)
    builder.add_edge(first, second)
    builder.add_edge(second, END)
    return builder


hostile_v1, hostile_v2 = hostile(int), hostile(float)
"""Before and after a deploy that changed the hostile model's ``score``."""


def looping(review: type[BaseModel]) -> StateGraph[Any, Any, Any, Any]:
    """``a -> b -> a -> b -> c``: ``a`` and ``b`` run twice, then ``c`` returns ``review``."""
    builder = StateGraph(State)
    for name in "abc":
        builder.add_node(name, _node(name, review if name == "c" else None))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_conditional_edges(
        "b", lambda state: "a" if state["log"].count("b") < 2 else "c", ["a", "c"]
    )
    builder.add_edge("c", END)
    return builder


loop_v1 = looping(ReviewV1)
"""A loop before the deploy."""

loop_v2 = looping(ReviewV2)
"""The loop after the deploy: ``c`` now returns ``score: float``."""


backwards_v2 = pipeline(ReviewV2, names="zyca")
"""``z -> y -> c -> a`` after the deploy: the order they run in is not alphabetical."""


class Note(BaseModel):
    """A class the state does not declare: its key is typed ``Any``."""

    text: str


class Opaque(TypedDict, total=False):
    """``blob`` holds a ``Note``, which no annotation names."""

    doc: str
    log: Annotated[list[str], operator.add]
    blob: Any


def _write_note(state: Opaque) -> dict[str, Any]:
    return {"blob": Note(text="kept as a Note"), "log": ["note"]}


opaque = StateGraph(Opaque).add_node("note", _write_note).add_edge(START, "note")
"""A graph storing a value of a class it does not declare."""


def _ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "publish?", "draft": state.get("doc", "")})
    return {"log": [f"answer: {answer}"]}


asking = StateGraph(State).add_node("ask", _ask).add_edge(START, "ask")
"""A graph that stops at a question (``interrupt``)."""


class Memo(BaseModel):
    """A class a deploy moves to ``cli_moved``: stored by this path, it reads back there
    as plain data."""

    text: str


BriefV1: type[BaseModel] = create_model("Brief", __module__=__name__, title=(str, ...))
BriefV2: type[BaseModel] = create_model(
    "Brief", __module__=__name__, title=(str, ...), words=(int, ...)
)
Brief = BriefV1
"""What a stored ``Brief`` revives as: the class before the deploy, without ``words``."""


def briefing(brief: type[BaseModel], memo: type[BaseModel]) -> StateGraph[Any, Any, Any, Any]:
    """One node writing a ``Brief`` and a ``Memo``; the state declares ``brief`` and
    ``memo`` as given."""
    state = TypedDict("Briefing", {"brief": brief, "memo": memo, "doc": str}, total=False)  # type: ignore[misc]  # noqa: UP013

    def write(_: Any) -> dict[str, Any]:
        return {"brief": BriefV1(title="draft"), "memo": Memo(text="a memo")}

    return StateGraph(state).add_node("write", write).add_edge(START, "write")


briefing_v1 = briefing(BriefV1, Memo)
"""Before the deploy."""

briefing_v2 = briefing(BriefV2, cli_moved.Memo)
"""After it: ``Brief.words`` is required, and ``Memo`` moved to ``cli_moved``."""


def waiting_inside(draft: type) -> StateGraph[Any, Any, Any, Any]:
    """``research -> worker``; ``worker`` runs ``prep -> draft -> review``, ``review``
    asks a question; ``draft`` writes ``draft`` typed ``draft``."""
    keys = {"doc": str, "prep": str, "draft": draft, "review": str}
    inner = TypedDict("Inner", keys, total=False)  # type: ignore[misc]
    sub = StateGraph(inner)
    sub.add_node("prep", lambda s: {"prep": "p"})
    sub.add_node("draft", lambda s: {"draft": draft(1)})
    sub.add_node("review", lambda s: {"review": str(interrupt("ok?"))})
    sub.add_edge(START, "prep")
    sub.add_edge("prep", "draft")
    sub.add_edge("draft", "review")
    builder = StateGraph(State)
    builder.add_node("research", _node("research"))
    builder.add_node("worker", sub.compile())
    builder.add_edge(START, "research")
    builder.add_edge("research", "worker")
    return builder


inside_v1, inside_v2 = waiting_inside(str), waiting_inside(int)
"""A thread waiting inside ``worker``, before and after a deploy retyping ``draft``."""


class Sketch(BaseModel):
    """A class only a graph a node's code calls declares."""

    text: str


_sketching = TypedDict("Sketching", {"doc": str, "sketch": Sketch}, total=False)  # type: ignore[misc]  # noqa: UP013
_sketcher = (
    StateGraph(_sketching)
    .add_node("sketch", lambda s: {"sketch": Sketch(text="s")})
    .add_node("ask", lambda s: {"doc": str(interrupt("ok?"))})
    .add_edge(START, "sketch")
    .add_edge("sketch", "ask")
    .compile()
)


def _call_sketcher(state: State) -> dict[str, Any]:
    return {"log": [_sketcher.invoke({"doc": state.get("doc", "")})["sketch"].text]}


calling_v1 = StateGraph(State).add_node("writer", _call_sketcher).add_edge(START, "writer")
"""A node calling a graph (``_sketcher``) whose state holds a ``Sketch``, then asks."""

calling_v2 = (
    StateGraph(State)
    .add_node("writer", _call_sketcher)
    .add_node("after", _node("after"))
    .add_edge(START, "writer")
    .add_edge("writer", "after")
)
"""After a deploy adding a node after ``writer``: a thread waiting in it is read inside."""
