"""A resume plan drawn on its graph: LangGraph's own Mermaid drawing, each node marked.

Rules:
- The drawing is LangGraph's (``graph.get_graph().draw_mermaid()``: its shapes, edges
  and node styles). This module adds only what the plan says of each node: a line in
  its label (LangGraph prints a node's metadata there; a re-run's place in the order
  they run) and a Mermaid class per mark, styled after LangGraph's own ``classDef`` lines.
- Reads no checkpoint: the marks come from a ``ResumePlan`` already made.
- A PNG is LangGraph's ``draw_mermaid_png`` of the same text: by default it asks the
  mermaid.ink service (network); ``base_url=`` names a self-hosted one, and
  ``draw_method=MermaidDrawMethod.PYPPETEER`` renders locally (pyppeteer, Chromium).
- One piece of langchain-core's private knowledge: its Mermaid writer names a node by
  ``_to_safe_id`` (checked on langchain-core 1.0 and 1.8); the class lines must use the
  same ids, so they take them from there. ``tests/unit/test_drawing.py`` draws a node
  whose name needs escaping, and fails if the two part ways.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from langgraph.pregel import Pregel

__all__ = ["MARK_STYLES", "Mark", "draw_mermaid", "draw_png", "marks"]


class Mark(StrEnum):
    """What a plan does with one node; the Mermaid class it is drawn with."""

    KEPT = "kept"
    """Its result is kept."""
    RERUN = "rerun"
    """It runs again (downstream of a change, or unfinished in the rewound step)."""
    CHANGED = "changed"
    """Its types changed since it ran: the cause of the rewind; it runs again."""
    NEXT = "next"
    """The head waits on it: it runs next."""


MARK_STYLES: Mapping[Mark, str] = {
    Mark.KEPT: "fill:#d3f9d8,stroke:#2b8a3e",
    Mark.RERUN: "fill:#ffe8cc,stroke:#e8590c",
    Mark.CHANGED: "fill:#ffc9c9,stroke:#c92a2a,stroke-width:3px",
    Mark.NEXT: "fill:#d0ebff,stroke:#1971c2",
}
"""Each mark's Mermaid style, as LangGraph writes its ``classDef`` lines."""

_LABELS = {
    Mark.KEPT: "kept",
    Mark.RERUN: "re-runs",
    Mark.CHANGED: "changed, re-runs",
    Mark.NEXT: "runs next",
}


def marks(
    kept: Iterable[str], rerun: Iterable[str], changed: Iterable[str], waiting: Iterable[str]
) -> dict[str, Mark]:
    """Each node's mark; where several apply, the strongest (changed, re-runs, next, kept)."""
    found = dict.fromkeys(kept, Mark.KEPT)
    found.update(dict.fromkeys(waiting, Mark.NEXT))
    found.update(dict.fromkeys(rerun, Mark.RERUN))
    found.update(dict.fromkeys(changed, Mark.CHANGED))
    return found


def draw_mermaid(
    graph: Pregel[Any, Any, Any, Any],
    marked: Mapping[str, Mark],
    title: str | None = None,
    reruns: Sequence[str] = (),
) -> str:
    """LangGraph's Mermaid text of ``graph``, each node of ``marked`` labelled and styled.

    Args:
        graph: The compiled graph the plan was made for.
        marked: Per node name, its mark (``marks``); nodes it lacks are drawn as they are.
        title: The drawing's title (Mermaid front matter), if any.
        reruns: The nodes that run again, in the order they run: each one's label says
            its place (``re-runs, 2 of 3``).

    Returns:
        Mermaid flowchart text.
    """
    # Imported here, as LangGraph's own draw_mermaid does: it loads PyYAML, which
    # nothing else needs, and ``import neograph_ext`` should not pay for a drawing.
    from langchain_core.runnables.graph_mermaid import _to_safe_id

    drawable = graph.get_graph().reid()
    place = {node: f", {n} of {len(reruns)}" for n, node in enumerate(reruns, 1)}
    ids: dict[Mark, list[str]] = {}
    for key, node in list(drawable.nodes.items()):
        mark = marked.get(node.name)
        if mark is None:
            continue
        label = _LABELS[mark] + (place.get(node.name, "") if mark is not Mark.KEPT else "")
        metadata = {**(node.metadata or {}), "resume": label}
        drawable.nodes[key] = node._replace(metadata=metadata)
        ids.setdefault(mark, []).append(_to_safe_id(key))
    text = drawable.draw_mermaid(frontmatter_config={"title": title} if title else None)
    lines = [f"\tclassDef {mark} {MARK_STYLES[mark]}\n" for mark in Mark if mark in ids]
    lines += [f"\tclass {','.join(ids[mark])} {mark};\n" for mark in Mark if mark in ids]
    return text + "".join(lines)


def draw_png(mermaid: str, **options: Any) -> bytes:
    """``mermaid`` as a PNG, by LangGraph's ``draw_mermaid_png`` (``options`` are its:
    ``output_file_path``, ``draw_method``, ``base_url``, ``background_color``, ...)."""
    from langchain_core.runnables.graph_mermaid import draw_mermaid_png  # as above

    return draw_mermaid_png(mermaid_syntax=mermaid, **options)
