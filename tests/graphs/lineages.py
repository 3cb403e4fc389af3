"""Hand-made lineage records for the decision's unit tests (no graph, no database), and
the stamps of ``pipelines.linear`` they carry."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from neograph_ext.decision._history import Record
from neograph_ext.decision._introspect import build_stamp
from neograph_ext.decision._stamp import Stamp, StampRef, Unreadable
from tests.graphs.pipelines import linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))
"""A node's output model before and after a deploy retyped its field."""

LOG = ("log",)
"""What a node of ``linear`` writes."""


def stamp(**returns: object) -> Stamp:
    """The stamp of ``linear`` with these return annotations per node."""
    return build_stamp(linear(Counter(), returns))


def record(
    step: int,
    ran: Iterable[str] = (),
    wrote: Iterable[str] = (),
    *,
    stamp: Stamp | StampRef | Unreadable | None,
    source: str | None = None,
    verified: str | None = None,
    span: int | None = None,
    next_nodes: Iterable[str] = (),
    pending: int = 0,
    writers: frozenset[tuple[str, str]] | None = None,
    nulled: Iterable[str] = (),
    took_from: str | None = None,
) -> Record:
    """The checkpoint after ``step``: ``cp{step + 1}``, its parent ``cp{step}``.

    ``ran`` and ``wrote`` are any iterables of names (a string is its letters: one-letter
    nodes); ``source`` defaults to ``input`` at step -1 and ``loop`` after, ``span`` to 0
    for an input and 1 otherwise.
    """
    source = source or ("input" if step == -1 else "loop")
    return Record(
        checkpoint_id=f"cp{step + 1:03d}",
        parent_id=f"cp{step:03d}" if step > -1 else None,
        step=step,
        source=source,
        stamp=stamp,
        verified=verified,
        ran=frozenset(ran),
        wrote=frozenset(wrote),
        span=(0 if source == "input" else 1) if span is None else span,
        pending_tasks=pending,
        next_nodes=frozenset(next_nodes),
        writers=writers,
        nulled=frozenset(nulled),
        took_from=took_from,
    )
