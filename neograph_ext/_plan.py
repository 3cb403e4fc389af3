"""The resume decision: pure, from a lineage and the current stamp to a ``ResumePlan``.

Rules:
- No I/O and no LangGraph graph here; everything is a frozen record.
- A task is attributed to the stamp on the checkpoint its writes produced. It is
  affected when its node's fingerprint differs from the current one, or when it
  wrote a channel whose type changed. The earliest affected task's parent checkpoint
  is the rewind target. Of the target's superstep, the tasks of nodes not invalidated
  that finished on the old branch are kept (``kept_tasks``); the rest of that
  superstep and all after it run again.
- A live stored value of the head that does not read back as its channel's declared
  type (``misread``) changes the record that last wrote it, whatever its stamp.
- Checkpoints without a trustworthy stamp never count as changed (``unverified``).
- A stamp whose description cannot be found (a reference left unresolved) counts
  as changed for every node it covers: a rewind that may not be minimal, never a
  silent reuse.
- A rewind that would drop later turns, or that has no checkpoint to fork from,
  is not done silently: the plan carries a ``blocker`` and ``run`` raises.
- A checkpoint ``run`` verified against the current stamp (after a rewind, a
  migration or ``accept``) closes the books: changes before it were handled then.
- Each step with changes is settled by the first case that applies, in this order
  (``ORDER``): its values are dead (an earlier turn's channels all written again
  since), migrated or kept (``Carry``), rewound (within the latest turn), rewound
  with the later turns' inputs replayed (``replay_turns``), or else the plan is
  blocked, naming the ways out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import partial

from neograph_ext._changes import (
    STORED,
    ChangeReason,
    NodeChange,
    step_changes,
    storage_kind_changes,
    subgraph_lines,
)
from neograph_ext._history import Record
from neograph_ext._stamp import Stamp, StampRef, Unreadable

__all__ = [
    "ASKED_AGAIN",
    "ORDER",
    "Carry",
    "PlanKind",
    "ResumePlan",
    "TaskStep",
    "at_verified_head",
    "decide",
    "verified",
    "verified_head",
]

_NONE: frozenset[str] = frozenset()

ORDER = ("dead", "migration", "compatible", "rewind", "replay", "error")
"""How a step whose types changed is settled: the first case that applies wins."""


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
    """Nodes that will run again (new code may route to others too); for a rewind after
    a crash, also any task of the target's step that never finished."""
    kept: frozenset[str] = frozenset()
    """Nodes of the current run whose results are kept."""
    kept_tasks: frozenset[str] = frozenset()
    """For a rewind: nodes of the target's superstep whose finished tasks are kept, not
    run again (also counted in ``kept`` unless they run again later)."""
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
    on: how ``rerun`` and ``kept`` are printed (not part of the decision)."""
    turn_input: str | None = None
    """Digest of the input the head's turn started with, as its input checkpoint holds
    it: tells the same input given again from a new turn where no run mark recorded it
    (a turn plain LangGraph started)."""

    def __str__(self) -> str:
        head = f"{self.kind}: thread {self.thread_id!r}"
        if self.kind is PlanKind.REWIND:
            head += f", fork from checkpoint {self.checkpoint_id} (step {self.step})"
        lines = [head]
        lines += [change.describe() for change in self.changes]
        if self.rerun:
            lines.append(f"re-runs: {', '.join(self._in_order(self.rerun))}")
        if self.kept:
            lines.append(f"kept: {', '.join(self._in_order(self.kept))}")
        if self.kept_tasks:
            lines.append(f"kept in the rewound step: {', '.join(self._in_order(self.kept_tasks))}")
        summary = self.step_summary()
        if summary:
            lines.append(f"steps: {summary}")
        if self.migrated:
            lines.append(f"values kept or migrated: {', '.join(sorted(self.migrated))}")
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

    def _in_order(self, nodes: frozenset[str]) -> list[str]:
        """``nodes`` in execution order (``order``); nodes it lacks last, by name."""
        rank = {node: position for position, node in enumerate(self.order)}
        return sorted(nodes, key=lambda node: (rank.get(node, len(rank)), node))


@dataclass(frozen=True)
class Carry:
    """Which changed channels may keep their stored values instead of re-running.

    Computed by the caller from the compile options and the stored values
    (``_migrate.carry_for``), so that deciding stays free of I/O and user code.
    """

    migrated: frozenset[str] = frozenset()
    """Channels a migration covers (``ResumePolicy.migrations``)."""
    compatible: frozenset[str] = frozenset()
    """Channels ``ResumePolicy.keep_compatible`` covers whose live stored value
    validates under the current type."""


def decide(
    records: Sequence[Record],
    current: Stamp,
    thread_id: str,
    carry: Carry | None = None,
    *,
    replay_turns: bool = False,
    misread: Mapping[str, str] | None = None,
) -> ResumePlan:
    """Plan the resume of a thread.

    Each step whose types changed is settled by the first case of ``ORDER`` that
    applies: dead values are ignored, migrated and compatible values are carried
    (``migrated``), the latest turn rewinds, and anything else blocks.

    Args:
        records: The head's lineage, oldest first (``history.lineage``); the head
            alone suffices when it is verified (see ``verified_head``).
        current: The stamp of the graph about to run.
        thread_id: For messages.
        carry: Which changed channels may keep their stored values; none by default.
        replay_turns: Rewind into an earlier turn and replay the later turns' inputs,
            rather than blocking.
        misread: Per live channel of the head whose stored value does not read back as
            its declared type, the reason (``_revive.misread``): its last writer counts
            as changed, as if the channel's type had.

    Returns:
        The plan; ``blocker`` is set when it must not be carried out silently.
    """
    if not records:
        return ResumePlan(PlanKind.FRESH, thread_id)
    carry = carry or Carry()
    head = records[-1]
    sources = [record.source for record in records]
    turn = len(sources) - 1 - sources[::-1].index("input") if "input" in sources else 0
    # Built once the loop found the candidates: ``replace`` is costly.
    plan_with = partial(
        ResumePlan,
        PlanKind.UP_TO_DATE if not head.next_nodes else PlanKind.CONTINUE,
        thread_id,
        head_id=head.checkpoint_id,
        next_nodes=head.next_nodes,
        kept=_ran_in(records[turn + 1 :]),
        turn_input=records[turn].input,
        order=_order(records),
    )
    foreign = _foreign(records, current)
    if foreign:
        return plan_with(blocker=foreign)
    renames = _renames(records, current)
    pending = _unique(_pending_changes(head, current) + _waiting_subgraphs(head, current))
    # What ``run`` verified under an earlier stamp is judged by that stamp: the thread
    # then counts as written by that code directly, and its carrying forks as values it
    # wrote (a chain of deploys plans as each deploy would on its own).
    verified_at, judged = _verified_at(records, current)
    writers = _last_writers(records, verified_at)
    # Most records of a long thread wrote nothing still live: skip building their sets.
    holders = frozenset(writers.values())
    # Along a thread the same stamp and step repeat: each combination is compared once.
    memo: dict[
        tuple[str, frozenset[str], frozenset[str], frozenset[tuple[str, str]] | None],
        tuple[NodeChange, ...],
    ] = {}
    found_in: list[tuple[int, tuple[NodeChange, ...], frozenset[str]]] = []
    notes: list[str] = []
    current_id, start = current.id, _settled(records, current)
    clears = frozenset(current.clears or ())
    for index, record in enumerate(records[start:], start):
        stamp = record.stamp if index > verified_at else judged
        if index <= verified_at and _carrying(record):
            continue
        if stamp is None or isinstance(stamp, Unreadable):
            # As for changes: in an earlier turn, only a value still live can matter.
            if record.ran and (index >= turn or any(writers.get(c) == index for c in record.wrote)):
                why = "written without a stamp" if stamp is None else _unreadable(stamp)
                notes.append(f"checkpoint {record.checkpoint_id}: {why}")
            continue
        if stamp.id == current_id:
            continue
        # A None the node wrote to say "nothing here" is no value of the changed type.
        wrote = record.wrote - (record.nulled & clears) if record.nulled else record.wrote
        key = (stamp.id, record.ran, wrote, record.writers)
        changes = memo.get(key)
        if changes is None:
            changes = memo[key] = step_changes(
                record.ran, wrote, stamp, current, writers=record.writers, renames=renames
            )
        if not changes:
            continue
        live = (
            frozenset(ch for ch in record.wrote if writers.get(ch) == index)
            if index in holders
            else _NONE
        )
        found = _alive(changes, live) if index < turn else changes
        if found:
            found_in.append((index, found, live))
    if misread:
        found_in = _with_misread(found_in, records, writers, misread)
    base = plan_with(
        candidates=frozenset(
            c.channel for _, found, live in found_in if live for c in found if c.channel in live
        )
    )
    carried: list[NodeChange] = []
    for position, (index, found, live) in enumerate(found_in):
        if _carried(found, live, carry):
            carried += found
            continue
        # Memoised changes are shared along a thread: visit each distinct tuple once.
        later = {id(step): step for _, step, _ in found_in[position:]}
        rest = [change for step in later.values() for change in step]
        if not records[index].ran:
            return replace(
                _with_carried(base, carried),
                kind=PlanKind.REWIND,
                changes=_unique([*carried, *rest]),
                blocker=(
                    f"thread {thread_id!r}: checkpoint {records[index].checkpoint_id} holds "
                    "values no node produced (kept, migrated or updated by hand) whose type "
                    "changed again; no node can re-run to replace them. Ways out: "
                    "ResumePolicy(keep_compatible=True) or ResumePolicy(migrations=...), "
                    "neograph_ext.accept(graph, config), or start a new thread_id"
                ),
            )
        plan = _rewind(base, records, index, turn, _unique([*rest, *pending]), replay_turns)
        plan = _carrying_since(plan, records, index - 1, verified_at, writers)
        return _with_carried(plan, carried)
    if pending:
        plan = _rewind(base, records, len(records), turn, pending, replay_turns)
        return _with_carried(plan, carried)
    if carried:
        return _with_carried(replace(base, kind=PlanKind.MIGRATE), carried)
    if notes:
        return replace(base, kind=PlanKind.UNVERIFIED, notes=tuple(notes))
    return _storage_kinds_noted(base, records[start:], current)


def _storage_kinds_noted(base: ResumePlan, records: Sequence[Record], current: Stamp) -> ResumePlan:
    """``base``, noting each channel whose LangGraph channel class alone changed since
    ``records`` were written: LangGraph reads its stored values, so it is no change."""
    older = {r.stamp.id: r.stamp for r in records if isinstance(r.stamp, Stamp)}
    older.pop(current.id, None)
    channels = sorted({ch for old in older.values() for ch in storage_kind_changes(old, current)})
    if not channels:
        return base
    note = (
        f"channel{'s' if len(channels) > 1 else ''} {', '.join(f'`{c}`' for c in channels)}: "
        "only the LangGraph channel class changed (a plain reducer channel and a "
        "DeltaChannel); LangGraph reads the stored values as they are, so nothing re-runs"
    )
    return replace(base, notes=(*base.notes, note))


def _with_misread(
    found_in: list[tuple[int, tuple[NodeChange, ...], frozenset[str]]],
    records: Sequence[Record],
    writers: Mapping[str, int],
    misread: Mapping[str, str],
) -> list[tuple[int, tuple[NodeChange, ...], frozenset[str]]]:
    """``found_in`` with a change for each misread channel, on the record that last
    wrote it, whatever that record's stamp: a value that reads back as something else is
    stale though no type changed. A value no record of the lineage wrote (a run's
    input) has no writer to re-run and is left to the node that reads it."""
    steps = {index: (list(found), live) for index, found, live in found_in}
    for channel, why in sorted(misread.items()):
        index = writers.get(channel)
        if index is None:
            continue
        record = records[index]
        blamed = sorted(node for ch, node in record.writers or () if ch == channel)
        live = frozenset(ch for ch in record.wrote if writers.get(ch) == index)
        found, _ = steps.setdefault(index, ([], live))
        found += [
            NodeChange(node, ChangeReason.STORED_VALUE, None, None, (why,), channel=channel)
            for node in blamed or sorted(_user_nodes(record.ran)) or [STORED]
        ]
    return [(index, tuple(found), live) for index, (found, live) in sorted(steps.items())]


def _order(records: Sequence[Record]) -> tuple[str, ...]:
    """Nodes by their first run along ``records`` (a step's by name), then the nodes the
    head waits on. Records share their sets of names: each distinct set is sorted once."""
    found: dict[str, None] = {}
    seen: set[int] = set()
    for ran in [*(record.ran for record in records), _user_nodes(records[-1].next_nodes)]:
        if ran and id(ran) not in seen:
            seen.add(id(ran))
            found.update(dict.fromkeys(sorted(ran)))
    return tuple(found)


def _verified_at(
    records: Sequence[Record], current: Stamp
) -> tuple[int, Stamp | StampRef | Unreadable | None]:
    """The index of the last record ``run`` verified under its own stamp, when that is not
    ``current`` (``_settled`` starts at one that is), and that stamp; else ``(-1, None)``."""
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        stamp = record.stamp
        if isinstance(stamp, Stamp | StampRef) and stamp.id == record.verified:
            return (index, stamp) if stamp.id != current.id else (-1, None)
    return -1, None


def _carrying_since(
    plan: ResumePlan,
    records: Sequence[Record],
    target: int,
    verified_at: int,
    writers: dict[str, int],
) -> ResumePlan:
    """``plan`` with ``carried_from`` set: the channels whose value at the rewind target
    a later carrying fork replaced by a converted one, which the rewind must keep."""
    if plan.blocker or target < 0:
        return plan
    found: dict[str, str] = {}
    for index in range(target + 1, verified_at + 1):
        record = records[index]
        if _carrying(record):
            for channel in record.wrote:
                if writers.get(channel, -1) <= target:
                    found[channel] = record.checkpoint_id
    if not found:
        return plan
    return replace(plan, carried_from=tuple(sorted(found.items())))


def _carrying(record: Record) -> bool:
    """A fork ``run`` wrote without running a node (carrying values on, ``accept``,
    keeping tasks): what it holds was the thread's values, converted."""
    return record.source == "fork" and not record.ran


def _last_writers(records: Sequence[Record], verified_at: int = -1) -> dict[str, int]:
    """Per channel, the index of the last record that wrote it: whose value is live. A
    carrying fork up to ``verified_at`` wrote no value of its own: the value it carries
    stays its writer's."""
    # Records share their sets of names: find each set's last index, then its channels'.
    last = {
        wrote: index
        for index, wrote in enumerate(
            [
                _NONE if index <= verified_at and _carrying(record) else record.wrote
                for index, record in enumerate(records)
            ]
        )
    }
    writers: dict[str, int] = {}
    for wrote, index in last.items():
        for channel in wrote:
            if writers.get(channel, -1) < index:
                writers[channel] = index
    return writers


def _settled(records: Sequence[Record], current: Stamp) -> int:
    """Where changes start to count: at the last checkpoint ``run`` verified against
    ``current`` (it handled everything before, by rewinding, carrying or ``accept``)."""
    if current.id not in [record.verified for record in records]:
        return 0
    return max(
        (
            i
            for i, record in enumerate(records)
            if record.verified == current.id and verified_head(record, current)
        ),
        default=0,
    )


def _alive(changes: tuple[NodeChange, ...], live: frozenset[str]) -> tuple[NodeChange, ...]:
    """The changes of a step of an earlier turn that still matter: those whose values are
    live.

    A value written in an earlier turn and written again since is dead: nothing reads
    it any more. A step of an earlier turn none of whose values is live changed nothing.
    """
    if not live:
        return ()
    return tuple(c for c in changes if c.channel is None or c.channel in live)


def _carried(found: tuple[NodeChange, ...], live: frozenset[str], carry: Carry) -> bool:
    """Whether a step's changes are all handled by carrying its live stored values.

    Only type changes qualify: a changed version, edge or subgraph asks for a re-run.
    """
    valued = (ChangeReason.CHANNEL, ChangeReason.STORED_VALUE)
    channels = frozenset(c.channel for c in found if c.reason in valued)
    typed = all(c.reason in (*valued, ChangeReason.OUTPUT_TYPE) for c in found)
    handled = carry.migrated | carry.compatible
    return bool(channels) and typed and all(c in live and c in handled for c in channels)


def _with_carried(plan: ResumePlan, carried: Sequence[NodeChange]) -> ResumePlan:
    if not carried:
        return plan
    return replace(
        plan,
        changes=_unique([*carried, *plan.changes]),
        migrated=frozenset(c.channel for c in carried if c.channel is not None),
        invalidated_nodes=plan.invalidated_nodes | {c.node for c in carried},
    )


def verified_head(head: Record, current: Stamp) -> bool:
    """Whether ``run`` already checked the head's whole lineage against ``current``."""
    return verified(head.stamp, head.verified, current)


def verified(
    stamp: Stamp | StampRef | Unreadable | None, verified: str | None, current: Stamp
) -> bool:
    """Whether a checkpoint written under ``stamp`` whose run mark verified the stamp id
    ``verified`` had its whole lineage checked against ``current`` by ``run``."""
    return isinstance(stamp, Stamp | StampRef) and stamp.id == current.id == verified


def at_verified_head(head_id: str, next_nodes: frozenset[str], thread_id: str) -> ResumePlan:
    """What ``decide`` plans from a verified head (``verified``), without its lineage:
    nothing before it counts, so the plan resumes the nodes it waits on, if any."""
    kind = PlanKind.CONTINUE if next_nodes else PlanKind.UP_TO_DATE
    return ResumePlan(kind, thread_id, head_id=head_id, next_nodes=next_nodes)


def _ran_in(records: Sequence[Record]) -> frozenset[str]:
    """Every node that ran in ``records``: a union of the few distinct sets that records
    share along a thread, much cheaper than visiting each name of thousands of records."""
    return frozenset().union(*{record.ran for record in records})


def _renames(records: Sequence[Record], current: Stamp) -> dict[str, str]:
    """The renames that keep work: of nodes that finished in the lineage. A node that
    never finished under its old name is still waited on under that name, which the
    current graph cannot run: its predecessor then counts as changed (a rewind)."""
    if not current.renames:
        return {}
    ran = _ran_in(records)
    return {old: new for old, new in current.renames.items() if old in ran}


def _unique(changes: Sequence[NodeChange]) -> tuple[NodeChange, ...]:
    """Each node and reason once, the earliest first; a stored value's change only when
    no node's change names its channel already (its diff would be said twice)."""
    found: dict[tuple[str, ChangeReason, str | None], NodeChange] = {}
    for change in changes:
        found.setdefault((change.node, change.reason, change.channel), change)
    named = {c.channel for c in found.values() if c.node != STORED}
    return tuple(c for c in found.values() if c.node != STORED or c.channel not in named)


def _pending_changes(head: Record, current: Stamp) -> tuple[NodeChange, ...]:
    """Changes among the head's finished-but-uncheckpointed tasks (a crashed superstep)."""
    if not head.pending_tasks or not isinstance(head.stamp, Stamp | StampRef):
        return ()
    if head.stamp.id == current.id:
        return ()
    # Only a channel those tasks wrote can hold a value of a changed type: a change
    # elsewhere is not theirs (a sibling that crashed wrote nothing, and runs anyway).
    channels = head.pending_wrote
    if channels is None:
        old = head.stamp.channels if isinstance(head.stamp, Stamp) else {}
        channels = frozenset(old) | frozenset(current.channels)
    return step_changes(_user_nodes(head.next_nodes), channels, head.stamp, current)


def _waiting_subgraphs(head: Record, current: Stamp) -> tuple[NodeChange, ...]:
    """Subgraph nodes the head waits on whose subgraph changed.

    A subgraph that crashed or was interrupted part-way keeps its own checkpoints (under
    its task's namespace), and LangGraph resumes it from them, reviving inner values
    written by the old code: the parent is forked from the head instead, which gives
    the subgraph's task a new id and so a fresh start.
    """
    if not isinstance(head.stamp, Stamp) or head.stamp.id == current.id:
        return ()
    found = []
    for node in sorted(_user_nodes(head.next_nodes)):
        before, after = head.stamp.nodes.get(node), current.nodes.get(node)
        if before is not None and after is not None and before.sub and before.sub != after.sub:
            lines = subgraph_lines(node, before, after, head.stamp, current)
            found.append(NodeChange(node, ChangeReason.SUBGRAPH, None, None, lines))
    return tuple(found)


def _user_nodes(names: frozenset[str]) -> frozenset[str]:
    """Without LangGraph's own nodes (``__start__``), which no stamp fingerprints."""
    return frozenset(name for name in names if not name.startswith("__"))


def _rewind(
    base: ResumePlan,
    records: Sequence[Record],
    index: int,
    turn: int,
    changes: tuple[NodeChange, ...],
    replay_turns: bool,
) -> ResumePlan:
    """Fork from the parent of ``records[index]`` (``len(records)``: the head itself)."""
    head = records[-1]
    # A stored value no node produced is no node to run: its channel's writers re-run.
    invalidated = frozenset(change.node for change in changes if change.node != STORED)
    removed = {c.node for c in changes if c.reason is ChangeReason.REMOVED}
    # The target's own step: the tasks that produced records[index] on the old branch,
    # or, rewinding the head itself (a crashed step), the tasks it waits on.
    step = records[index].ran if index < len(records) else _user_nodes(head.next_nodes)
    later = _ran_in(records[index + 1 :]) | _user_nodes(head.next_nodes)
    if index == len(records):
        later = frozenset()
    kept_tasks = step - invalidated - removed
    rerun = (later | (step - kept_tasks) | invalidated) - removed
    target = records[index - 1] if index > 0 else None
    unknown = any(change.reason is ChangeReason.UNKNOWN for change in changes)
    tasks = [
        TaskStep(node, r.step, True) for r in records[turn + 1 : index] for node in sorted(r.ran)
    ]
    if index < len(records):
        tasks += [TaskStep(n, records[index].step, n in kept_tasks) for n in sorted(step)]
        tasks += [TaskStep(n, r.step, False) for r in records[index + 1 :] for n in sorted(r.ran)]
        tasks += [TaskStep(n, head.step + 1, False) for n in sorted(_user_nodes(head.next_nodes))]
    else:
        tasks += [TaskStep(n, head.step + 1, n in kept_tasks) for n in sorted(step)]
    plan = replace(
        base,
        notes=base.notes + ((_MISSING,) if unknown else ()),
        kind=PlanKind.REWIND,
        checkpoint_id=target.checkpoint_id if target else None,
        step=target.step if target else None,
        invalidated_nodes=invalidated,
        changes=changes,
        rerun=rerun,
        kept=(_ran_in(records[turn + 1 : index]) | kept_tasks) - rerun,
        kept_tasks=kept_tasks,
        steps=tuple(tasks),
    )
    if (index < len(records) and records[index].span > 1) or target is None:
        return replace(
            plan,
            blocker=(
                f"thread {base.thread_id!r} was written with durability='exit': it has no "
                "checkpoint between the steps before and after the changed nodes, so there is "
                "nothing to rewind to; start a new thread_id (and write with "
                "durability='sync', the default of run())"
            ),
        )
    if index <= turn and turn > 0 and replay_turns:
        inputs = tuple(r.checkpoint_id for r in records[index:] if r.source == "input")
        return replace(plan, replayed=inputs)
    if index <= turn and turn > 0:
        return replace(
            plan,
            blocker=(
                f"thread {base.thread_id!r}: the earliest changed node ran in an earlier turn "
                f"(before the input at step {records[turn].step}) and what it wrote is still "
                f"live in the thread's state{_naming(changes, records[index])}; rewinding "
                "would drop the later turns. Ways out: ResumePolicy(replay_turns=True) re-runs "
                "it and feeds the later turns their inputs again, "
                "ResumePolicy(keep_compatible=True) keeps stored values that still validate, "
                "ResumePolicy(migrations={type or channel: fn}) converts them, "
                "neograph_ext.accept(graph, config) records that you handled the thread by "
                "hand, or start a new thread_id"
            ),
        )
    return plan


def _naming(changes: Sequence[NodeChange], record: Record) -> str:
    channels = sorted({c.channel for c in changes if c.channel in record.wrote})
    return f" (channels {', '.join(channels)})" if channels else ""


ASKED_AGAIN = (
    "the thread waits on a question (an interrupt or a breakpoint) and something upstream "
    "of it changed: the question is asked again after the rewind, and run() returns it; an "
    "answer given now is set aside (ResumePolicy(reanswer=True) applies it to the new "
    "question)"
)

_MISSING = (
    "some checkpoints name a stamp whose description is not stored beside them (deleted, "
    "or written by code that never stored it): what they cover counts as changed, so "
    "this rewind may re-run more than the changed nodes"
)


def _foreign(records: Sequence[Record], current: Stamp) -> str | None:
    """A thread written by a graph with no node in common with the current one."""
    ran = _ran_in(records)
    if not ran or ran & (frozenset(current.nodes) | frozenset(current.renames or {})):
        return None
    return (
        f"the thread was written by a different graph: its nodes {sorted(ran)} have nothing "
        f"in common with this graph's nodes {sorted(current.nodes)}; use another thread_id"
    )


def _unreadable(stamp: Unreadable) -> str:
    return f"stamp not trusted ({stamp.reason}): {stamp.detail}"
