"""Whether the values a subgraph keeps in its own checkpoint read back as declared.

A subgraph that crashed or paused part-way keeps its own checkpoints, under its task's
namespace (``<node>:<task id>``), and LangGraph resumes it from them: its inner nodes
read values the parent's head does not hold. They are judged by the rule the head's
values are (``_misread``), against the subgraph's declared types.

Rules:
- At compile time, each node that runs a compiled ``StateGraph`` gets the subgraph's
  ``Revival``: its own when ``neograph_ext.compile`` made it (that compile reported its
  findings), else one built from its builder for the parent's serializer, which stores
  the subgraph's checkpoints; those findings are the parent's, naming the subgraph.
  Only subgraphs that declare a class the serializer stores by path are kept. So are,
  apart (``Revival.called``), the graphs a node's code calls: their checkpoints store
  their classes, which must revive as themselves; their values are not judged here.
- On resume, only the subgraphs the head waits on are read (``ReadSubgraphValues``), and
  only the unfinished ones are judged (``subgraph_values``).
- A value in one that does not read back changes its node (``inner_changes``): the
  parent forks from its head, which gives the subgraph's task a new id and so a fresh
  start, as a changed subgraph does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StateSnapshot

from neograph_ext.decision._called import called_graphs
from neograph_ext.decision._changes import ChangeReason, NodeChange
from neograph_ext.decision._misread import misread, revived_as_data
from neograph_ext.decision._revive import (
    Allowed,
    Finding,
    Revival,
    declared,
    node_inputs,
    revival,
    revived_classes,
)

__all__ = [
    "called_revivals",
    "inner_changes",
    "inner_misread",
    "subgraph_revivals",
    "subgraph_values",
]


def subgraph_revivals(
    builder: StateGraph[Any, Any, Any, Any], allowed: Allowed
) -> tuple[dict[str, Revival], tuple[Finding, ...]]:
    """Per node running a compiled subgraph that declares a class stored by path, the
    subgraph's ``Revival``; and the findings of those no ``neograph_ext.compile`` made.

    Args:
        builder: The parent graph's builder.
        allowed: What the parent's serializer lets through: it stores the subgraphs'
            checkpoints too.
    """
    found: dict[str, Revival] = {}
    findings: list[Finding] = []
    for name, spec in builder.nodes.items():
        inner, own = _graph_revival(spec.runnable, allowed)
        if inner is None:
            continue
        findings += [
            replace(f, where=tuple(f"subgraph `{name}` {w}" for w in f.where)) for f in own
        ]
        if _stores_classes(inner):
            found[name] = inner
    return found, tuple(findings)


def called_revivals(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, Revival]:
    """Per graph a node's code calls (``_called``) that declares a class stored by path,
    keyed ``<node>/<name>``, its ``Revival``: its checkpoints, written under the calling
    task's namespace, store that class, which the serializer must revive as itself. Built
    as if the serializer let every class through: the classes are what it must be given
    (``expected``), not what it gives now (a reader given the graph's own allowlist,
    which LangGraph builds from added subgraphs only, would leave them out)."""
    found: dict[str, Revival] = {}
    for name, spec in builder.nodes.items():
        for held, graph in called_graphs(spec.runnable).items():
            inner, _ = _graph_revival(graph, True)
            if inner is not None and _stores_classes(inner):
                found[f"{name}/{held}"] = inner
    return found


def _graph_revival(
    runnable: object, allowed: Allowed
) -> tuple[Revival | None, tuple[Finding, ...]]:
    """The ``Revival`` of a compiled ``StateGraph`` graph: its own when
    ``neograph_ext.compile`` made it, else one built from its builder, with its findings;
    None for anything else."""
    inner = getattr(runnable, "neograph_ext_revival", None)
    if isinstance(inner, Revival):
        return inner, ()
    sub = getattr(runnable, "builder", None)
    if not isinstance(runnable, CompiledStateGraph) or not isinstance(sub, StateGraph):
        return None, ()
    channels, coerced, outputs = declared(sub, None)
    built = revival(channels, coerced, outputs, allowed, node_inputs(sub))
    # Compiled by LangGraph alone: no node of it is handed data validated
    # (``_validated_reads``), so a class rebuilt from data is lost there.
    built = replace(
        built,
        findings=tuple(replace(f, rebuilt=False) for f in built.findings),
        unrevivable=built.unrevivable | built.validated,
        validated=frozenset(),
    )
    return built, built.findings


def _stores_classes(inner: Revival) -> bool:
    """Whether a graph's values include a class stored by path."""
    return bool(inner.inputs) or any(next(revived_classes(tp), None) for tp in inner.types.values())


def subgraph_values(state: StateSnapshot, nodes: frozenset[str]) -> dict[str, Mapping[str, Any]]:
    """Per task of ``nodes`` the parent's ``state`` waits on whose subgraph has not
    finished, the values its own checkpoint holds (``get_state(subgraphs=True)``)."""
    return {
        task.name: task.state.values
        for task in state.tasks
        if task.name in nodes and isinstance(task.state, StateSnapshot) and task.state.next
    }


def inner_misread(
    revivals: Mapping[str, Revival], values: Mapping[str, Mapping[str, Any]]
) -> tuple[dict[str, str], frozenset[str]]:
    """Per subgraph node, why a value its subgraph's checkpoint holds does not read back
    as the subgraph declares it, for the first channel that does not; and the nodes of
    those whose subgraph holds a misread value of a class no checkpoint can revive
    (``Revival.unrevivable``) that came back as plain data (``revived_as_data``)."""
    found: dict[str, str] = {}
    lost: set[str] = set()
    for node, held in sorted(values.items()):
        why = misread(revivals[node], held) if node in revivals else {}
        if why:
            found[node] = f"in its subgraph's checkpoint, {why[min(why)]}"
            if any(revived_as_data(held.get(ch)) for ch in revivals[node].unrevivable & why.keys()):
                lost.add(node)
    return found, frozenset(lost)


def inner_changes(inner: Mapping[str, str]) -> tuple[NodeChange, ...]:
    """A change of each subgraph node whose subgraph holds a value that does not read
    back: pending at the head, so the parent forks from it."""
    return tuple(
        NodeChange(node, ChangeReason.STORED_VALUE, None, None, (why,))
        for node, why in sorted(inner.items())
    )
