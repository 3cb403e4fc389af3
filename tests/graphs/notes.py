"""A graph whose one node appends an item to an accumulating list every turn and sets
the latest one as a plain value: the two kinds of channel an earlier turn leaves."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Annotated, Any, TypedDict

from langgraph.graph import START, StateGraph

from tests.graphs.pipelines import deployed, model

ItemV1 = model("Item", n=(int, ...))
ItemV2 = model("Item", n=(float, ...))
LatestV1 = model("Latest", n=(int, ...))
LatestV2 = model("Latest", n=(float, ...))


def notes(
    runs: Counter[str], item: Any = ItemV1, latest: Any = LatestV1, reducer: Any = operator.add
) -> StateGraph[Any, Any, Any, Any]:
    """``take``: appends an ``item`` to ``items`` (``reducer``: ``operator.add``, or a
    channel such as a ``DeltaChannel``) and sets ``latest``."""
    deployed(item, latest)
    # Functional syntax: the channel types are this call's arguments.
    state = TypedDict(  # type: ignore[name-match]  # noqa: UP013
        "Notes",
        {"text": str, "items": Annotated[list[item], reducer], "latest": latest},
        total=False,
    )

    def take(state: Any) -> dict[str, Any]:
        runs["take"] += 1
        n = len(state.get("items", []))
        # An item type whose `n` was renamed (to `m`) is given it under its new name.
        field = "n" if "n" in item.model_fields else "m"
        return {"items": [item(**{field: n})], "latest": latest(n=n)}

    builder = StateGraph(state)
    builder.add_node("take", take)
    builder.add_edge(START, "take")
    return builder


def note(text: str) -> dict[str, Any]:
    """A turn's input."""
    return {"text": text}
