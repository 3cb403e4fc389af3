"""A small app across deploys, for the CI gate's tests: ``a -> b -> c -> d``, where ``c``
writes a ``Review`` into the state.

Each deploy is a module attribute built when it is looked up (``__getattr__``), so the
command line loads it by name (``tests.gate.app:breaking``) and the ``Review`` class
bound for reviving stored values is the deploy's own, as in an app's process:

- ``v1``: the code that wrote the threads; ``unchanged``: the same code again.
- ``compatible``: ``Review`` gains a field with a default, under ``keep_compatible``.
- ``breaking``: ``Review.score`` renamed ``rating``: stored reviews no longer validate.
- ``strict``: the breaking change in strict mode (``on_change="raise"``).
"""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from pydantic import BaseModel

import neograph_ext as ne
from tests.graphs.pipelines import Crash, deployed, model, wire

ReviewV1 = model("Review", score=(int, ...))
ReviewCompatible = model("Review", score=(int, ...), tone=(str, "plain"))
ReviewBreaking = model("Review", rating=(int, ...))

KEEP = ne.ResumePolicy(keep_compatible=True)
DEPLOYS: dict[str, tuple[type[BaseModel], ne.ResumePolicy]] = {
    "v1": (ReviewV1, ne.ResumePolicy()),
    "unchanged": (ReviewV1, ne.ResumePolicy()),
    "compatible": (ReviewCompatible, KEEP),
    "breaking": (ReviewBreaking, KEEP),
    "strict": (ReviewBreaking, ne.ResumePolicy(keep_compatible=True, on_change="raise")),
}


def pipeline(
    review: type[BaseModel], runs: Counter[str], crash: str | None = None
) -> StateGraph[Any, Any, Any, Any]:
    """The app's graph with ``review`` as ``c``'s output; every node counts its runs."""
    deployed(review)
    state = TypedDict(  # type: ignore[name-match]  # noqa: UP013
        "Doc",
        {"doc": str, "review": review, "log": Annotated[list[str], operator.add]},
        total=False,
    )

    def step(name: str) -> Any:
        def fn(values: Any) -> dict[str, Any]:
            runs[name] += 1
            if name == crash:
                raise Crash(name)
            if name == "c":
                fields = {f: 1 for f, info in review.model_fields.items() if info.is_required()}
                return {"log": [name], "review": review(**fields)}
            return {"log": [name]}

        fn.__name__ = name
        return fn

    builder = StateGraph(state)
    for name in "abcd":
        builder.add_node(name, step(name))
    wire(builder, "a", "b", "c", "d")
    return builder


def deploy(
    name: str,
    runs: Counter[str] | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    crash: str | None = None,
) -> Pregel[Any, Any, Any, Any]:
    """The deploy ``name``, compiled (by default on an empty in-memory saver)."""
    review, policy = DEPLOYS[name]
    return ne.compile(
        pipeline(review, runs if runs is not None else Counter(), crash),
        checkpointer=checkpointer or InMemorySaver(),
        resume=policy,
    )


def __getattr__(name: str) -> Any:
    if name in DEPLOYS:
        return deploy(name)
    raise AttributeError(name)
