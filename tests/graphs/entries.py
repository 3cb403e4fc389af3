"""A log of typed entries every node appends to, before and after a deploy that added a
required field: an accumulating channel a migration converts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from tests.graphs.pipelines import deployed, model

Builder = StateGraph[Any, Any, Any, Any]


EntryV1 = model("Entry", label=(str, ...))
EntryV2 = model("Entry", label=(str, ...), lang=(str, ...))
"""A log entry before and after a deploy that added a required field."""


def add_lang(entries: list[Any]) -> list[BaseModel]:
    """The migration of a log of ``EntryV1`` (revived as models or dicts) to ``EntryV2``."""
    return [EntryV2(label=dict(e)["label"], lang="en") for e in entries]


def entries(
    entry: type[BaseModel],
    reducer: Any,
    runs: Counter[str],
    record: Callable[[str], None] | None = None,
) -> Builder:
    """``a -> b -> c -> d``, each appending an ``entry`` labelled with its name (``lang``
    ``en``, as ``add_lang`` converts) to ``log``, a list kept by ``reducer``; each
    counts itself in ``runs`` and tells ``record`` first, if given."""
    deployed(entry)
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Entries", {"log": Annotated[list[entry], reducer]}, total=False
    )

    def step(name: str) -> Callable[[dict[str, Any]], dict[str, list[BaseModel]]]:
        def fn(values: dict[str, Any]) -> dict[str, list[BaseModel]]:
            if record is not None:
                record(name)
            runs[name] += 1
            fields = {"label": name, "lang": "en"}
            return {"log": [entry(**{k: fields[k] for k in entry.model_fields})]}

        return fn

    builder = StateGraph(state)
    for name in "abcd":
        builder.add_node(name, step(name))
    builder.add_edge(START, "a")
    for before, after in ("ab", "bc", "cd"):
        builder.add_edge(before, after)
    builder.add_edge("d", END)
    return builder
