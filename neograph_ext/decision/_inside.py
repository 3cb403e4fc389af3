"""A rewind inside a subgraph the head waits on: which of its own checkpoints to fork.

A subgraph task that did not finish (it waits on a question, or crashed) keeps its own
checkpoints under its namespace (``<node>:<task id>``; ``<node>`` for a subgraph compiled
``checkpointer=True``), and LangGraph resumes it from the newest one there whenever the
parent resumes the task. So a change inside it is rewound there: a fork of the inner
checkpoint before the earliest affected inner task becomes the namespace's newest, and
the parent resumes from its head. The inner tasks before it and the parent's finished
work are kept.

Rules:
- Pure: the lineage of each pending subgraph's namespace (``InnerLineage``, read by the
  flow) and the current stamp in, a decision out (``judged``).
- An inner task is judged by the digests the stamp of the checkpoint its writes produced
  holds for its path (``NodeStamp.sub`` one level down, ``NodeStamp.inner`` below),
  against the current stamp's: its node's, and those of the channels it wrote. Inner
  checkpoints carry the stamp of the root graph that ran them. A graph the node's code
  calls runs under the calling task's namespace too, and its digests are keyed by the
  name the code holds it by: it is judged alike when it is the only one the node calls.
- Only the namespace's latest invocation counts (since its last ``input`` checkpoint): a
  ``checkpointer=True`` subgraph keeps one namespace across calls.
- This level's finished tasks first, then a subgraph it waits on, one level down: the
  earliest affected task wins. A task that did not finish runs again anyway: a change of
  it (or after it) rewinds nothing.
- An inner head that is a fork the current code wrote (``_keep.fork_inside``) and that
  nothing ran after is forked again: the parent's resume after it was cut short, and the
  question it asks again must not take an answer given to the old one.
- A subgraph ``neograph_ext.compile`` made stamps its checkpoints with its own stamp,
  whose description is not stored: they are judged by what the parent head's stamp says
  of the subgraph; what the current code ran after its own fork is its own.
- What cannot be judged (a stamp that does not describe the path) is said, and the
  parent node re-runs as a whole.
- Proven or not taken (``refusal``): a rewind inside, or a resume where it is, is taken
  only where LangGraph then reaches what a fresh run of the current code reaches; else
  the parent node re-runs as a whole and the plan says why. A human edit inside that a
  rewind would drop refuses the rewind (``dropped_edits``), as one at the top level does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from neograph_ext.decision._history import Record
from neograph_ext.decision._stamp import Stamp, StampRef

__all__ = [
    "InnerLineage",
    "Inside",
    "InsideJudged",
    "dropped_edits",
    "judged",
    "path_of",
    "refusal",
]


@dataclass(frozen=True)
class InnerLineage:
    """The lineage of one pending subgraph's own namespace, as the read side found it."""

    path: tuple[str, ...]
    """The subgraph nodes from the root down (``("worker",)``, ``("worker", "mid")``)."""
    namespace: str
    """Its ``checkpoint_ns``."""
    records: tuple[Record, ...]
    """Its checkpoints from the namespace's newest back, oldest first (``lineage``)."""
    next_nodes: frozenset[str]
    """The inner nodes its newest checkpoint waits on."""
    called: str | None = None
    """The name of the graph the node's code calls that wrote it, when it names itself
    (a deep agent's subagent): which of the graphs the node calls it is."""
    nested: bool = True
    """Whether the namespaces of the subgraphs it waits on were read too (not for a
    graph a tool calls, whose state LangGraph's ``get_state`` does not read)."""
    tasks: int = 1
    """How many tasks of its node the enclosing checkpoint holds: a ``Send`` fan-out
    into a subgraph node makes one per send, each under a namespace of its own."""
    answered: bool = False
    """Whether a question asked inside it was answered in its latest invocation (a
    ``__resume__`` write in its namespace)."""
    delta: frozenset[str] = frozenset()
    """The subgraph's ``DeltaChannel`` channels."""


@dataclass(frozen=True)
class Inside:
    """Where a rewind inside a pending subgraph forks, and what it keeps there."""

    path: tuple[str, ...]
    """The subgraph nodes from the root down to the one whose checkpoint is forked."""
    namespace: str
    """That subgraph's ``checkpoint_ns``."""
    checkpoint_id: str
    """The inner checkpoint to fork: the one whose pending tasks include the earliest
    affected inner task."""
    step: int
    """Its step."""
    changed: tuple[str, ...]
    """The inner nodes of the affected task."""
    kept: tuple[str, ...] = ()
    """Inner nodes whose results are kept, in the order they ran."""
    rerun: tuple[str, ...] = ()
    """Inner nodes that run again (the subgraph may route to others too), in order."""

    def describe(self) -> str:
        """One line for the plan: ``inside worker > draft: ...``."""
        where = path_of(self.path)
        line = (
            f"inside {where}: fork its checkpoint {self.checkpoint_id} (step {self.step}) "
            f"before {', '.join(path_of((*self.path, n)) for n in self.changed)}; the parent "
            "resumes from its head"
        )
        if self.rerun:
            line += f"; re-runs {', '.join(path_of((*self.path, n)) for n in self.rerun)}"
        if self.kept:
            line += f"; kept {', '.join(path_of((*self.path, n)) for n in self.kept)}"
        return line


@dataclass(frozen=True)
class InsideJudged:
    """For the subgraph nodes the head waits on that changed, what their own
    checkpoints say."""

    forks: Mapping[str, Inside] = field(default_factory=dict)
    """Per node, the rewind inside it."""
    settled: frozenset[str] = frozenset()
    """Nodes whose change touches no inner task that finished: resumed where they are."""
    why_not: Mapping[str, str] = field(default_factory=dict)
    """Per node, why its own checkpoints cannot be judged: it re-runs as a whole."""


def path_of(path: Sequence[str]) -> str:
    """A path as the plan prints it: ``worker > review``."""
    return " > ".join(path)


def judged(
    lineages: Sequence[InnerLineage],
    current: Stamp,
    nodes: frozenset[str],
    outer: Stamp | None,
) -> InsideJudged:
    """What the pending subgraphs of ``nodes`` (changed, waited on by the head) hold.

    Args:
        lineages: The lineage of each pending subgraph's namespace, at any depth.
        current: The stamp of the graph about to run.
        nodes: The subgraph nodes the head waits on whose subgraph changed.
        outer: The stamp of the parent's head: an inner checkpoint stamped by a
            subgraph ``neograph_ext.compile`` made, whose own description is not stored,
            is judged by what it says of the subgraph.
    """
    by_path = {lineage.path: lineage for lineage in lineages}
    forks: dict[str, Inside] = {}
    settled: set[str] = set()
    why_not: dict[str, str] = {}
    for node in sorted(nodes):
        if (node,) not in by_path:
            continue  # no checkpoint of its own yet: it starts afresh anyway
        found = _level(by_path, (node,), current, outer)
        why = found if isinstance(found, str) else refusal(_of(lineages, node), found)
        if why is not None:
            why_not[node] = why
        elif isinstance(found, Inside):
            forks[node] = found
        else:
            settled.add(node)
    return InsideJudged(forks, frozenset(settled), why_not)


def refusal(lineages: Sequence[InnerLineage], fork: Inside | None) -> str | None:
    """Why the subgraph node whose pending namespaces are ``lineages`` must re-run as a
    whole rather than be resumed inside, where LangGraph would not then reach the state
    a fresh run of the current code reaches; None when it would.

    Resuming inside is taken only when:
    - each of its namespaces, at every depth, belongs to the one task of its node: a
      ``Send`` fan-out makes one namespace per send, which a single fork cannot cover,
      and a finished send's result stays in the parent whatever its namespace holds;
    - for a fork (``fork``, from ``_level``), no question inside was answered in the
      latest invocation: LangGraph files the answer at the parent's checkpoint too, so
      the first question asked after the fork is handed it, whatever it asks;
    - for a fork, the forked subgraph has no ``DeltaChannel``: the fork is written as
      its base's child and would replay the base's writes onto it (an item twice).

    A human edit the fork would drop is not a reason to re-run the parent, which drops it
    too: the rewind is refused (``dropped_edits``).

    Args:
        lineages: The pending namespaces of one subgraph node of the head, at any depth.
        fork: The rewind inside it ``_level`` found; None when nothing that finished
            inside changed (it is resumed where it is).
    """
    shared = next((lineage for lineage in lineages if lineage.tasks > 1), None)
    if shared is not None:
        return (
            f"{path_of(shared.path)} runs {shared.tasks} tasks (a Send each), every one "
            "under a namespace of its own: one fork inside cannot cover them, so the step "
            "re-runs at the parent"
        )
    if fork is None:
        return None
    if any(lineage.answered for lineage in lineages):
        return (
            "a question inside it was answered: LangGraph keeps the answer at the parent's "
            "checkpoint too, where a fork inside cannot take it back, and the next question "
            "asked inside would be given it"
        )
    delta = next((lineage.delta for lineage in lineages if lineage.path == fork.path), None)
    if delta:
        return (
            f"{path_of(fork.path)} holds DeltaChannel {', '.join(f'`{c}`' for c in sorted(delta))}:"
            " a fork inside would replay its base's writes onto it"
        )
    return None


def dropped_edits(
    lineages: Sequence[InnerLineage], forks: Sequence[Inside] | None
) -> tuple[tuple[tuple[str, ...], Record], ...]:
    """The human edits (``update_state`` inside a subgraph, a checkpoint of source
    ``update``) a rewind would drop, with the path of the subgraph each was made in.

    Args:
        lineages: The pending namespaces the head waits on, at any depth.
        forks: The rewinds inside the plan takes: an edit after a fork's checkpoint in
            its namespace, or in a namespace below it, is dropped (the subgraph there
            starts afresh); one elsewhere is kept. None when the parent node re-runs
            as a whole: every edit of a namespace's latest invocation is dropped.
    """
    found: list[tuple[tuple[str, ...], Record]] = []
    for lineage in lineages:
        records = lineage.records[_turn(lineage.records) :]
        if forks is not None:
            fork = next((f for f in forks if lineage.path[: len(f.path)] == f.path), None)
            if fork is None:
                continue
            if lineage.path == fork.path:
                ids = [record.checkpoint_id for record in records]
                start = ids.index(fork.checkpoint_id) + 1 if fork.checkpoint_id in ids else 0
                records = records[start:]
        found += [(lineage.path, r) for r in records if r.source == "update" and r.wrote]
    return tuple(found)


def _of(lineages: Sequence[InnerLineage], node: str) -> tuple[InnerLineage, ...]:
    """The namespaces of ``node``'s task, at any depth."""
    return tuple(lineage for lineage in lineages if lineage.path[0] == node)


def _level(
    by_path: Mapping[tuple[str, ...], InnerLineage],
    path: tuple[str, ...],
    current: Stamp,
    outer: Stamp | None,
) -> Inside | str | None:
    """The rewind inside the subgraph at ``path``, or below it; None when nothing that
    finished there changed; else why it cannot be told."""
    lineage = by_path[path]
    records = lineage.records
    start = _turn(records)
    if _forked_here(records[-1], current):
        return _inside(lineage, len(records))
    now = _digests(current, path, lineage.called)
    for index in range(start + 1, len(records)):
        record = records[index]
        if _forked_here(record, current):
            break  # the current code forked it: what ran after is its own
        if not record.ran:
            continue
        if _by(record, current):
            continue
        stamp = record.stamp
        called = lineage.called
        before = _described(stamp, path, called) if isinstance(stamp, Stamp) else None
        before = before if before is not None else _digests(outer, path, called) if outer else None
        if before is None or now is None or not record.ran <= before.keys():
            return (
                f"the stamp {path_of(path)} ran under at checkpoint {record.checkpoint_id} "
                "does not describe its nodes (not found, or written by an earlier release)"
            )
        changed = _affected(record, before, now)
        if changed:
            return _inside(lineage, index, changed)
    for node in sorted(lineage.next_nodes):
        if not lineage.nested and _digests(current, (*path, node), lineage.called):
            return f"the checkpoints of {path_of((*path, node))}, which it waits on, were not read"
        if (*path, node) in by_path:
            found = _level(by_path, (*path, node), current, outer)
            if found is not None:
                return found
    return None


def _inside(lineage: InnerLineage, index: int, changed: tuple[str, ...] = ()) -> Inside:
    """The rewind forking the parent of ``lineage.records[index]``, the first record it
    runs again (``index`` past the end: the inner head itself, a fork to make again)."""
    records = lineage.records
    start = _turn(records)
    target = records[index - 1]
    kept = tuple(dict.fromkeys(n for r in records[start + 1 : index] for n in sorted(r.ran)))
    again = [n for r in records[index:] for n in sorted(r.ran)] + sorted(lineage.next_nodes)
    return Inside(
        lineage.path,
        lineage.namespace,
        target.checkpoint_id,
        target.step,
        changed or tuple(sorted(lineage.next_nodes)),
        kept,
        tuple(dict.fromkeys(n for n in again if not n.startswith("__"))),
    )


def _turn(records: Sequence[Record]) -> int:
    """The index of the namespace's latest ``input`` checkpoint (0 without one)."""
    sources = [record.source for record in records]
    return len(sources) - 1 - sources[::-1].index("input") if "input" in sources else 0


def _affected(record: Record, before: Mapping[str, str], now: Mapping[str, str]) -> tuple[str, ...]:
    """The nodes of ``record``'s step that ran under other digests: their own, or those
    of a channel they wrote."""
    channels = {
        ch for ch in record.wrote if before.get(f"channel:{ch}") != now.get(f"channel:{ch}")
    }
    writers = record.writers
    found = set()
    for node in record.ran:
        if (
            before.get(node) != now.get(node)
            or (writers is None and channels)
            or (writers is not None and any((ch, node) in writers for ch in channels))
        ):
            found.add(node)
    return tuple(sorted(found))


def _forked_here(record: Record, current: Stamp) -> bool:
    """Whether ``record`` is a fork the current code wrote inside (``_keep.fork_inside``)."""
    return record.source == "fork" and _by(record, current)


def _by(record: Record, current: Stamp) -> bool:
    """Whether the current code wrote ``record`` (its stamp, described or not)."""
    stamp = record.stamp
    return isinstance(stamp, Stamp | StampRef) and stamp.id == current.id


def _described(
    stamp: Stamp, path: tuple[str, ...], called: str | None = None
) -> Mapping[str, str] | None:
    """The digests of the subgraph at ``path`` as ``stamp`` describes them: a root's
    stamp (a plain subgraph's checkpoints carry it), an enclosing subgraph's, or the
    subgraph's own (``neograph_ext.compile`` made it)."""
    for depth in range(len(path)):
        found = _digests(stamp, path[depth:], called if depth == 0 else None)
        if found is not None:
            return found
    own = {name: node.fp for name, node in stamp.nodes.items()}
    return {**own, **{f"channel:{k}": fp for k, fp in stamp.channels.items()}}


def _digests(
    stamp: Stamp, path: tuple[str, ...], called: str | None = None
) -> Mapping[str, str] | None:
    """The node and channel digests of the subgraph at ``path`` as ``stamp`` describes
    it: ``sub`` of the root's node one level down, the matching part of its ``inner``
    below; None when the stamp does not describe it."""
    node = stamp.nodes.get(path[0])
    if node is None or node.sub is None:
        return None
    called = called or _called_name(node.sub)
    if len(path) == 1:
        return node.sub if called is None else _under(node.sub, called)
    return _under(node.inner or {}, "/".join((*((called,) if called else ()), *path[1:])))


def _called_name(sub: Mapping[str, str]) -> str | None:
    """The name the node's code holds the one graph it calls by (its digests are keyed
    ``<name>/<inner node>``, ``_introspect``): LangGraph runs that graph under the
    calling task's namespace, as an added subgraph. None for an added subgraph, or for
    code calling several graphs (which one a namespace holds cannot be told)."""
    names = {key.partition("/")[0] for key in sub}
    return names.pop() if len(names) == 1 and all("/" in key for key in sub) else None


def _under(digests: Mapping[str, str], prefix: str) -> Mapping[str, str] | None:
    """The digests one level under ``prefix``, keyed by what follows it."""
    prefix += "/"
    found = {
        key[len(prefix) :]: fp
        for key, fp in digests.items()
        if key.startswith(prefix) and "/" not in key[len(prefix) :]
    }
    return found or None
