"""What a resume decision says: the records ``decide`` returns and takes.

Rules:
- Frozen records and enums only, each field documented: no logic beyond printing (as
  text, or drawn on the graph by ``_drawing``).
- A plan's node names (``rerun``, ``kept``, ``kept_tasks``) are sets that iterate in the
  order the nodes run (``NodeOrder``): membership, equality and set operations are
  ``frozenset``'s, and a list of them is in execution order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from neograph_ext.decision._budget import Spend
from neograph_ext.decision._changes import NodeChange
from neograph_ext.decision._drawing import draw_mermaid, draw_png, marks
from neograph_ext.decision._inside import InnerLineage, Inside

if TYPE_CHECKING:
    from langgraph.pregel import Pregel

__all__ = [
    "Carriable",
    "Carry",
    "HeadFacts",
    "HeadStep",
    "NodeOrder",
    "PlanKind",
    "ResumePlan",
    "TaskStep",
    "carried_as",
]


class NodeOrder(frozenset[str]):
    """Node names, a ``frozenset`` that iterates (so lists, prints, serializes) in the
    order the nodes run."""

    __slots__ = ("_order",)
    _order: tuple[str, ...]

    def __new__(cls, ordered: Iterable[str] = ()) -> NodeOrder:
        names = tuple(dict.fromkeys(ordered))
        found = super().__new__(cls, names)
        found._order = names
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __repr__(self) -> str:
        return f"NodeOrder({list(self._order)!r})"

    def __reduce__(self) -> tuple[type[NodeOrder], tuple[tuple[str, ...]]]:
        return NodeOrder, (self._order,)


class PlanKind(StrEnum):
    """What ``run`` will do with a thread."""

    FRESH = "fresh"
    """No checkpoint yet: run with the input."""
    CONTINUE = "continue"
    """Incomplete, nothing changed: resume from the head."""
    UP_TO_DATE = "up_to_date"
    """Complete, nothing changed: return the stored result, execute nothing."""
    REWIND = "rewind"
    """Something changed: fork from the checkpoint before the earliest affected task."""
    UNVERIFIED = "unverified"
    """Written without fingerprints: resume as LangGraph would."""
    MIGRATE = "migrate"
    """Every change is handled by keeping or migrating the stored values: nothing re-runs."""
    SUPERSEDED = "superseded"
    """Newer code owns the thread (``owner``): this older code runs and writes nothing
    (``ResumePolicy(take_over=True)`` or ``accept`` take it over deliberately)."""


@dataclass(frozen=True)
class TaskStep:
    """One task of a planned run: a node at one step, kept or run again."""

    node: str
    """The node's name."""
    step: int
    """The step of the checkpoint its writes produced (on the old branch)."""
    kept: bool
    """Whether its result is kept; False: it runs again."""


@dataclass(frozen=True)
class ResumePlan:
    """What ``run`` would do with a thread, and why."""

    kind: PlanKind
    """The decision."""
    thread_id: str
    """The thread planned."""
    head_id: str | None = None
    """The checkpoint planned from (the newest, or the one named in the config)."""
    checkpoint_id: str | None = None
    """For a rewind: the checkpoint to fork from."""
    step: int | None = None
    """For a rewind: that checkpoint's step."""
    invalidated_nodes: frozenset[str] = frozenset()
    """Nodes whose stored results were produced by other types."""
    changes: tuple[NodeChange, ...] = ()
    """Each reason, with its field-level diff."""
    rerun: frozenset[str] = frozenset()
    """Nodes that will run again (new code may route to others too), in the order they
    run (a ``NodeOrder``); for a rewind after a crash, also any task of the target's step
    that never finished."""
    kept: frozenset[str] = frozenset()
    """Nodes of the current run whose results are kept, in the order they ran."""
    kept_tasks: frozenset[str] = frozenset()
    """For a rewind: nodes of the target's superstep whose finished tasks are kept, not
    run again (also counted in ``kept`` unless they run again later), in order."""
    matched_when_made: tuple[str, ...] = ()
    """For an ``@entrypoint``: its cached calls whose match with the calls its code makes
    is known only when they are made (their arguments are not known without running
    the body), as ``task (call i)``, in call order: each is served if the call made
    matches it, else it and every later call run again. Their tasks are not in ``kept``."""
    next_nodes: frozenset[str] = frozenset()
    """Nodes the head checkpoint waits on; empty when the run completed."""
    blocker: str | None = None
    """Why this plan cannot be carried out automatically; ``run`` then raises."""
    notes: tuple[str, ...] = field(default=())
    """Things worth logging, such as why checkpoints count as unverified."""
    migrated: frozenset[str] = frozenset()
    """Channels whose stored values are migrated or kept (converted to the new type)
    instead of re-running the nodes that wrote them."""
    candidates: frozenset[str] = frozenset()
    """Changed channels whose live stored values could be kept or migrated."""
    replayed: tuple[str, ...] = ()
    """For a rewind into an earlier turn (``replay_turns``): the input checkpoints of the
    later turns, oldest first, whose inputs are fed again after the rewind."""
    steps: tuple[TaskStep, ...] = ()
    """For a rewind: each task of the current run, oldest first, kept or run again. Unlike
    ``rerun`` and ``kept`` (node names), a node that ran several times (an agent's model
    call) is named once per step: ``model`` re-runs at step 5, kept at steps 1 and 3."""
    carried_from: tuple[tuple[str, str], ...] = ()
    """For a rewind whose target lies before forks that carried values on (kept or
    migrated by an earlier deploy): per such channel, the checkpoint whose converted
    value the rewind keeps instead of the target's older one, as ``(channel, id)``."""
    order: tuple[str, ...] = field(default=(), compare=False)
    """Nodes in the order they first ran along the lineage, then those the head waits
    on: the order ``rerun`` and ``kept`` iterate in (not part of the decision)."""
    turn_input: str | None = None
    """Digest of the input the head's turn started with, as its input checkpoint holds
    it: tells the same input given again from a new turn where no run mark recorded it
    (a turn plain LangGraph started)."""
    estimated_cost: Spend | None = field(default=None, compare=False)
    """For a rewind planned by a graph with a ``Budget``: what running its re-run tasks
    again costs, from the spend the thread's ledger recorded for their nodes (each node's
    last execution) plus one superstep per re-run step; None when nothing was recorded.
    Filled by ``plan`` (not part of the decision)."""
    owner: str | None = None
    """For ``superseded``: the stamp id of the newer code that owns the thread."""
    taken_from: str | None = None
    """For a plan that takes the thread over (``ResumePolicy(take_over=True)``): the
    stamp id of the newer code it is taken from; the plan is what it would be if that
    code were older."""
    inside: tuple[Inside, ...] = ()
    """For a rewind of changes inside subgraphs the head waits on (pending: a question, a
    crash): per subgraph, the inner checkpoint forked in its own namespace and the inner
    nodes kept and re-run; the parent is not forked (``checkpoint_id`` is its head) but
    resumed through them (``_inside``)."""

    def __post_init__(self) -> None:
        for name in ("rerun", "kept", "kept_tasks"):
            object.__setattr__(self, name, NodeOrder(self.in_order(getattr(self, name))))

    def __str__(self) -> str:
        head = f"{self.kind}: thread {self.thread_id!r}"
        if self.kind is PlanKind.REWIND and self.inside:
            head += f", resume from checkpoint {self.checkpoint_id} (step {self.step})"
        elif self.kind is PlanKind.REWIND:
            head += f", fork from checkpoint {self.checkpoint_id} (step {self.step})"
        if self.owner:
            head += f", owned by newer code (stamp {self.owner[:16]})"
        if self.taken_from:
            head += f", taken over from newer code (stamp {self.taken_from[:16]})"
        lines = [head]
        lines += [change.describe() for change in self.changes]
        lines += [inner.describe() for inner in self.inside]
        if self.rerun:
            lines.append(f"re-runs: {', '.join(self.rerun)}")
        if self.kept:
            lines.append(f"kept: {', '.join(self.kept)}")
        if self.kept_tasks:
            lines.append(f"kept in the rewound step: {', '.join(self.kept_tasks)}")
        if self.matched_when_made:
            made = ", ".join(self.matched_when_made)
            lines.append(f"calls are matched when they are made: {made}")
        summary = self.step_summary()
        if summary:
            lines.append(f"steps: {summary}")
        if self.estimated_cost is not None:
            lines.append(f"estimated cost of the re-run: {self.estimated_cost}")
        if self.migrated:
            lines.append(f"values {carried_as(self)}: {', '.join(sorted(self.migrated))}")
        if self.replayed:
            lines.append(f"then replays the inputs of {len(self.replayed)} later turn(s)")
        if self.blocker:
            lines.append(f"blocked: {self.blocker}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def step_summary(self) -> str:
        """The steps of the nodes that ran several times, re-runs first: ``model (step 5
        of 7) re-runs; model (steps 1, 3) kept``; empty when every node ran once."""
        counts: dict[str, int] = {}
        for task in self.steps:
            counts[task.node] = counts.get(task.node, 0) + 1
        groups: dict[tuple[bool, str], list[int]] = {}
        for task in self.steps:
            if counts[task.node] > 1:
                groups.setdefault((task.kept, task.node), []).append(task.step)
        last = max((task.step for task in self.steps), default=0)
        parts = []
        for (kept, node), steps in sorted(groups.items(), key=lambda g: (g[0][0], g[1][0])):
            numbers = f"step{'s' if len(steps) > 1 else ''} {', '.join(map(str, steps))}"
            parts.append(
                f"{node} ({numbers}) kept" if kept else f"{node} ({numbers} of {last}) re-runs"
            )
        return "; ".join(parts)

    def draw_mermaid(self, graph: Pregel[Any, Any, Any, Any]) -> str:
        """The plan drawn on ``graph`` (the graph it was made for) as Mermaid text:
        LangGraph's own drawing (``graph.get_graph().draw_mermaid()``) with each node the
        plan names labelled and styled: ``kept``, ``rerun``, ``changed`` (the invalidated
        nodes, which re-run too; each numbered in the order it runs) and, for a thread
        that carries on, ``next``."""
        waiting = self.next_nodes if self.kind in (PlanKind.CONTINUE, PlanKind.UNVERIFIED) else ()
        marked = marks(self.kept, self.rerun, self.invalidated_nodes, waiting)
        title = f"thread {self.thread_id}: {self.kind}"
        if self.kind is PlanKind.REWIND and self.step is not None:
            title += f", fork from step {self.step}"
        title += " (blocked)" if self.blocker else ""
        return draw_mermaid(graph, marked, title, tuple(self.rerun))

    def draw_mermaid_png(self, graph: Pregel[Any, Any, Any, Any], **options: Any) -> bytes:
        """``draw_mermaid`` as a PNG, drawn by LangGraph's ``draw_mermaid_png``, whose
        keywords ``options`` are (``output_file_path``, ``draw_method``, ``base_url``, ...).
        By default that asks the mermaid.ink service over the network; ``base_url`` names
        a self-hosted one, ``draw_method=MermaidDrawMethod.PYPPETEER`` renders locally."""
        return draw_png(self.draw_mermaid(graph), **options)

    def in_order(self, nodes: Iterable[str]) -> list[str]:
        """``nodes`` in the order they run (``order``: first run along the lineage, then
        those the head waits on); nodes it lacks last, by name: the order ``rerun``,
        ``kept`` and ``kept_tasks`` iterate in, and the rest print in."""
        rank = {node: position for position, node in enumerate(self.order)}
        return sorted(nodes, key=lambda node: (rank.get(node, len(rank)), node))


@dataclass(frozen=True)
class Carry:
    """Which changed channels may keep their stored values instead of re-running.

    Computed by the caller from the compile options and the stored values
    (``_carrying.carry_for``), so that deciding stays free of I/O and user code.
    """

    migrated: frozenset[str] = frozenset()
    """Channels a migration covers (``ResumePolicy.migrations``)."""
    compatible: frozenset[str] = frozenset()
    """Channels ``ResumePolicy.keep_compatible`` covers whose live stored value
    validates under the current type."""


def carried_as(plan: ResumePlan) -> str:
    """How ``plan`` carries its ``migrated`` channels: an up-to-date plan is a new turn
    keeping values of finished turns that still validate; else they are kept or
    migrated."""
    return "kept: still valid" if plan.kind is PlanKind.UP_TO_DATE else "kept or migrated"


@dataclass(frozen=True)
class HeadStep:
    """The head's own superstep as far as it ran (a crash, a question): which of its tasks
    finished and what they wrote, told apart by their task ids (``_head_state.head_step``)."""

    writers: frozenset[tuple[str, str]]
    """``(channel, node)`` for each state channel a finished task of it wrote, before any
    claim (``_claim``): a changed channel is blamed on its writers alone."""
    finished: frozenset[str] = frozenset()
    """The nodes with a task that finished: it left its output and asked nothing."""
    unfinished: frozenset[str] = frozenset()
    """The nodes with a task that did not finish (it crashed, waits on a question, or
    never ran): it runs, whatever changed."""
    answered: frozenset[str] = frozenset()
    """The nodes with a task that did not finish but was given answers already (it asks
    more than once): a rewind of the step keeps those answers (``kept_tasks``)."""
    asked: frozenset[str] = frozenset()
    """The nodes with a task that asked a question in the step, finished or not: run
    again, such a task may ask before the question waited on."""


@dataclass(frozen=True)
class HeadFacts:
    """What the head checkpoint holds, as the read side found it: what ``decide`` needs
    besides the lineage. Built from the head tuple and the graph's definition alone."""

    checkpoint_id: str
    """The head's id."""
    next_nodes: frozenset[str]
    """The nodes it waits on (``__start__`` included); empty when its run completed."""
    paused: bool = False
    """Whether it waits on a question (an ``interrupt()`` or a breakpoint)."""
    verified: bool = False
    """Whether ``run`` verified it against the current stamp (``verified``)."""
    replaying: str | None = None
    """The head whose later turns the run that wrote it was replaying (``RunMark``)."""
    misread: Mapping[str, str] = field(default_factory=dict)
    """Per live channel whose stored value does not read back as its declared type, why
    (``_misread.misread``): its last writer counts as changed."""
    owed: tuple[str, ...] = ()
    """When ``replaying``: the input checkpoints of the turns that replay has not started
    yet (``_owed.owed_turns``), oldest first."""
    stamp_order: tuple[str, ...] = ()
    """Stamp ids in the order the database first stored them (``_stamp_order``), oldest
    first: which code is newer (``_ownership``). Read only when other code owns the
    thread."""
    unrevivable: frozenset[str] = frozenset()
    """Of the ``misread`` channels (and the ``inner`` subgraph nodes, an entrypoint's tasks
    whose cached results misread), those whose declared type holds a class this process
    cannot revive (``_revive.Revival.unrevivable``), or whose subgraph's misread value
    does: their values come back as data from
    every checkpoint, so a rewind helps only while no pause comes between writer and
    reader."""
    inner: tuple[NodeChange, ...] = ()
    """A change of each subgraph node the head waits on whose subgraph's own checkpoint
    holds a value that does not read back (``_subgraph_misread``): pending at the head."""
    new_turn: bool = False
    """Whether the call starts a new turn: the head's run completed and the call gives
    another input than the one its turn started with. Every turn is then finished,
    history: judged by whether its values are still live (``_plan``), never rewound."""
    fork_misread: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Per checkpoint a rewind would fork from, why each of its stored values that does
    not read back does not (``_fork_misread``): the record that last wrote it up to that
    checkpoint counts as changed."""
    step: HeadStep | None = None
    """Its own superstep's tasks, when some finished and their ids are LangGraph's; None
    otherwise (then each task the head waits on counts as a writer of what they wrote)."""
    uncovered: Mapping[str, str] = field(default_factory=dict)
    """Per node the head waits on that stopped part-way, the namespace of its task under
    which a graph its code called wrote checkpoints, though no stamp describes a graph
    inside the node (``_head_state.called_namespaces``): not trusted."""
    inside: tuple[InnerLineage, ...] = ()
    """The lineages of the namespaces of the changed subgraphs it waits on, at any depth
    (``_inside``): a change inside one is rewound there."""


Carriable = Callable[[frozenset[str]], Carry]
"""Given the changed channels whose live stored values could be carried
(``ResumePlan.candidates``), which may be: ``_carrying.carry_for`` over the head's values
and the policy's ``keep_compatible`` / ``migrations``. It validates values and reads
nothing, so deciding stays pure."""
