"""``history``'s status column is the plan's comparison: in a parallel step, a channel
whose type changed marks the node that wrote it, not its sibling.

``fanout_v1`` and ``fanout_v2`` are ``a -> (b, c) -> d``: ``b`` writes ``scores``,
``c`` writes ``notes``; v2 changes the type of ``scores`` alone.
"""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import StateGraph

from tests.cli.support import Database, cli
from tests.graphs.pipelines import wire


class StateV1(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    scores: list[int]
    notes: list[str]


class StateV2(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    scores: list[float]
    notes: list[str]


def _fanout(state: type[Any]) -> StateGraph[Any, Any, Any, Any]:
    def a(state: Any) -> dict[str, Any]:
        return {"log": ["a"]}

    def b(state: Any) -> dict[str, Any]:
        return {"log": ["b"], "scores": [1]}

    def c(state: Any) -> dict[str, Any]:
        return {"log": ["c"], "notes": ["fine"]}

    def d(state: Any) -> dict[str, Any]:
        return {"log": ["d"]}

    builder = StateGraph(state)
    for fn in (a, b, c, d):
        builder.add_node(fn)
    wire(builder, "a", ["b", "c"], "d")
    return builder


fanout_v1 = _fanout(StateV1)
fanout_v2 = _fanout(StateV2)


def test_a_changed_channel_marks_its_writer_and_not_its_sibling(db: Database) -> None:
    db.run(fanout_v1, "t1")
    blamed = {change.node for change in db.plan(fanout_v2, "t1").changes}

    result = cli("history", "--db", db.url, "--thread", "t1", f"{__name__}:fanout_v2", "--json")

    assert result.exit_code == 0, result.output
    tasks = [row["tasks"] for row in json.loads(result.stdout) if row["tasks"]]
    assert tasks == [{"a": "same"}, {"b": "changed", "c": "same"}, {"d": "same"}]
    assert blamed == {"b"}
