"""A fleet written by three releases of one budgeted pipeline, for ``check --cost`` and
``upgrade``: ``draft -> review -> publish``, each node calling a counting fake model.

- release 1: the pipeline; also run without a ``Budget`` (threads with no record).
- release 2: ``review``'s prompt changed (``versions``): release 1's threads rewind it
  (and re-run ``publish`` after it).
- release 3 (current): ``done`` may be None; stored values still validate, so with
  ``keep_compatible`` release 2's threads are carried (``migrate``), nothing re-run.
- release 4: newer than the current one (``publish`` changed): its thread is left alone.

``CALLS`` counts every model call made, per node: what a resume actually spent.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph

import neograph_ext as ne
from tests.graphs.budget import TOKENS, UsageChat
from tests.graphs.pipelines import wire

__all__ = ["CALLS", "PER_RUN", "TOKENS", "current", "fleet", "release"]

PER_RUN = {"draft": 1, "review": 2, "publish": 1}
"""Model calls of one run of each node."""
CALLS: Counter[str] = Counter()
"""Model calls made, per node, by every graph of this module."""


class Doc(TypedDict, total=False):
    topic: str
    draft: str
    review: str
    done: str


class DocV3(TypedDict, total=False):
    topic: str
    draft: str
    review: str
    done: str | None


def _node(name: str) -> Any:
    model = UsageChat()

    def fn(state: dict[str, Any]) -> dict[str, str]:
        for _ in range(PER_RUN[name]):
            CALLS[name] += 1
            model.invoke(f"{name} {state.get('topic', '')}")
        return {name if name != "publish" else "done": f"{name} of {state.get('topic')}"}

    fn.__name__ = name
    return fn


def release(number: int) -> StateGraph[Any, Any, Any, Any]:
    """The builder of a release (1 to 4)."""
    builder = StateGraph(DocV3 if number >= 3 else Doc)
    for name in PER_RUN:
        builder.add_node(name, _node(name))
    return wire(builder, *PER_RUN)


VERSIONS = {1: {}, 2: {"review": "v2"}, 3: {"review": "v2"}, 4: {"review": "v2", "publish": "v4"}}


def compiled(number: int, saver: BaseCheckpointSaver[Any] | None, budget: bool = True) -> Any:
    """A release compiled as its workers compile it."""
    return ne.compile(
        release(number),
        checkpointer=saver,
        versions=VERSIONS[number],
        resume=ne.ResumePolicy(keep_compatible=True),
        attach=[ne.budget.Budget()] if budget else [],
    )


current = compiled(3, None)
"""Release 3, for the command line's GRAPH (``tests.graphs.releases:current``)."""


def fleet(saver: BaseCheckpointSaver[Any], each: int = 4) -> dict[str, list[str]]:
    """Threads written by each release, in release order; returns their ids by kind:
    ``rewind`` (release 1, budgeted), ``unrecorded`` (release 1, no budget), ``carry``
    (release 2), ``current`` (release 3), ``newer`` (release 4)."""
    kinds = {
        "rewind": (1, True),
        "unrecorded": (1, False),
        "carry": (2, True),
        "current": (3, True),
        "newer": (4, True),
    }
    made: dict[str, list[str]] = {}
    for kind, (number, budget) in kinds.items():
        graph = compiled(number, saver, budget)
        count = 1 if kind == "newer" else each
        made[kind] = [f"{kind}-{index}" for index in range(count)]
        for thread in made[kind]:
            ne.run(graph, {"topic": thread}, {"configurable": {"thread_id": thread}})
    return made


def resumed_calls(saver: BaseCheckpointSaver[Any], threads: list[str]) -> dict[str, Counter[str]]:
    """Per thread, the model calls per node that resuming it under release 3 made."""
    graph = compiled(3, saver)
    spent = {}
    for thread in threads:
        CALLS.clear()
        with contextlib.suppress(ne.ThreadSupersededError):  # the newer release's thread
            ne.run(graph, None, {"configurable": {"thread_id": thread}})
        spent[thread] = Counter(CALLS)
    return spent
