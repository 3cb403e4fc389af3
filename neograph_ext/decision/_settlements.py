"""How a step with changes is settled: the cases of the decision, in their order.

Rules:
- ``SETTLEMENTS`` is the order: the first case that applies to a step settles it. A
  step's values are dead (an earlier turn's channels all written again since), carried
  (migrated or kept, ``Carry``), or unproducible (no node wrote them: blocked); else it
  is rewound, if there is a checkpoint to fork from, within the latest turn, or into an
  earlier turn replaying the later turns' inputs (``replay_turns``), or else blocked,
  naming the ways out.
- Pure: records in, a ``ResumePlan`` out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from neograph_ext.decision._changes import STORED, ChangeReason, NodeChange
from neograph_ext.decision._decision import Carry, HeadStep, PlanKind, ResumePlan, TaskStep
from neograph_ext.decision._history import Record
from neograph_ext.decision._lineage_facts import (
    is_carrying_fork,
    ran_in,
    unique,
    user_nodes,
)

__all__ = [
    "SETTLEMENTS",
    "Found",
    "Settlement",
    "Settling",
    "settle",
    "with_carried",
]


_IGNORED, _CARRIED = object(), object()
"""A step settled without a plan: its changes matter no more, or its values are carried."""


def _carrying_since(s: Settling, plan: ResumePlan, target: int) -> ResumePlan:
    """``plan`` with ``carried_from`` set: the channels whose value at the rewind target
    a later carrying fork replaced by a converted one, which the rewind must keep.

    An accumulating channel that fork converted and a later node writes again cannot
    be kept (its later items would be written twice) nor left (its earlier items would
    come back unconverted): the rewind converts the target's value again (``migrated``)
    where the policy carries the channel, and is blocked otherwise.
    """
    if plan.blocker or target < 0:
        return plan
    found: dict[str, str] = {}
    for index in range(target + 1, s.verified_at + 1):
        record = s.records[index]
        if is_carrying_fork(record):
            for channel in record.wrote:
                if s.writers.get(channel, -1) <= target:
                    found[channel] = record.checkpoint_id
    # Converted items come back only where the target holds some, and stay only where
    # no node writes the channel after it (then ``carried_from`` keeps the value).
    converted = {
        channel: next(cp for index, cp in forks if target < index <= s.verified_at)
        for channel, forks in s.converted.items()
        if any(target < index <= s.verified_at for index, _ in forks)
    }
    held = {ch for r in s.records[: target + 1] for ch in r.wrote & converted.keys()}
    again = {ch: converted[ch] for ch in held if s.writers.get(ch, -1) > target}
    if found:
        plan = replace(plan, carried_from=tuple(sorted(found.items())))
    if not again:
        return plan
    uncovered = sorted(again.keys() - (s.carry.migrated | s.carry.compatible))
    if not uncovered:
        return replace(plan, migrated=plan.migrated | frozenset(again))
    return replace(
        plan,
        blocker=(
            f"thread {s.base.thread_id!r}: the rewind to checkpoint {plan.checkpoint_id} "
            "goes back before checkpoint "
            f"{', '.join(sorted({again[ch] for ch in uncovered}))}, which converted the "
            f"earlier items of accumulating channel{'s' if len(uncovered) > 1 else ''} "
            f"{', '.join(f'`{ch}`' for ch in uncovered)}; the rewind would bring them "
            "back unconverted. Ways out: keep the migration "
            "(ResumePolicy(migrations={type or channel: fn})) or "
            "ResumePolicy(keep_compatible=True) so the rewind converts them again, "
            "neograph_ext.accept(graph, config) records that you handled the thread by "
            "hand, or start a new thread_id"
        ),
    )


def _carried(found: tuple[NodeChange, ...], live: frozenset[str], carry: Carry) -> bool:
    """Whether a step's changes are all handled by carrying its live stored values.

    Only type changes qualify: a changed version, edge or subgraph asks for a re-run.
    """
    valued = (ChangeReason.CHANNEL, ChangeReason.STORED_VALUE)
    channels = frozenset(c.channel for c in found if c.reason in valued)
    typed = all(c.reason in (*valued, ChangeReason.OUTPUT_TYPE) for c in found)
    handled = carry.migrated | carry.compatible
    return bool(channels) and typed and all(c in live and c in handled for c in channels)


def with_carried(plan: ResumePlan, carried: Sequence[NodeChange]) -> ResumePlan:
    if not carried:
        return plan
    return replace(
        plan,
        changes=unique([*carried, *plan.changes]),
        migrated=plan.migrated | frozenset(c.channel for c in carried if c.channel is not None),
        invalidated_nodes=plan.invalidated_nodes | {c.node for c in carried},
    )


@dataclass(frozen=True)
class Settling:
    """What every settlement case reads besides the step it settles."""

    records: Sequence[Record]
    base: ResumePlan
    turn: int
    """The index of the latest turn's input record (0: one turn)."""
    carry: Carry
    replay_turns: bool
    pending: tuple[NodeChange, ...]
    """Changes among the head's finished-but-uncheckpointed tasks."""
    verified_at: int
    writers: Mapping[str, int]
    converted: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    """Per accumulating channel, the carrying forks that converted its items from
    another type than the current one (``converted_items``)."""
    history: bool = False
    """A new turn on a finished thread (``HeadFacts.new_turn``): every turn is an
    earlier one, never rewound (a rewind would drop the turn the call starts)."""
    head_step: HeadStep | None = None
    """Which of the head's own tasks finished (``HeadFacts.step``): a rewind of the head
    keeps those, and only those, of the nodes not invalidated."""


class _Step:
    """A step with changes: ``records[index]`` (``len(records)``: the head's crashed
    superstep), its changes still live, the channels it wrote that are still live, and
    (``rest``) its changes with every later step's."""

    def __init__(self, steps: Sequence[Found], position: int) -> None:
        self.index, self.found, self.live = steps[position]
        self._later = (steps, position)

    @cached_property
    def rest(self) -> tuple[NodeChange, ...]:
        steps, position = self._later
        # Memoised changes are shared along a thread: visit each distinct tuple once.
        later = {id(changes): changes for _, changes, _ in steps[position:]}
        return unique([change for changes in later.values() for change in changes])


Found = tuple[int, tuple[NodeChange, ...], frozenset[str]]
"""A record's index, its changes still live, and the channels it wrote still live."""


Settlement = Callable[[Settling, _Step], "ResumePlan | object | None"]


def _dead(s: Settling, step: _Step) -> object | None:
    """An earlier turn's values all written again since: nothing reads them any more."""
    return _IGNORED if not step.found else None


def _carried_on(s: Settling, step: _Step) -> object | None:
    """Every change is a type change of a live value a migration or ``keep_compatible``
    covers (``Carry``): the values are converted instead of re-running their nodes."""
    return _CARRIED if _carried(step.found, step.live, s.carry) else None


def _unproducible(s: Settling, step: _Step) -> ResumePlan | None:
    """Values no node produced (a carrying fork, an ``accept``) whose type changed again:
    no node can re-run to replace them."""
    if step.index == len(s.records) or s.records[step.index].ran:
        return None
    return replace(
        s.base,
        kind=PlanKind.REWIND,
        changes=step.rest,
        blocker=(
            f"thread {s.base.thread_id!r}: checkpoint {s.records[step.index].checkpoint_id} "
            "holds values no node produced (kept, migrated or updated by hand) whose type "
            "changed again; no node can re-run to replace them. Ways out: "
            "ResumePolicy(keep_compatible=True) or ResumePolicy(migrations=...), "
            "neograph_ext.accept(graph, config), or start a new thread_id"
        ),
    )


def _unforkable(s: Settling, step: _Step) -> ResumePlan | None:
    """No checkpoint between the steps before and after the change (``durability="exit"``),
    or none before it: nothing to fork from."""
    index, records = step.index, s.records
    if index > 0 and not (index < len(records) and records[index].span > 1):
        return None
    return replace(
        _rewind(s, step),
        blocker=(
            f"thread {s.base.thread_id!r} was written with durability='exit': it has no "
            "checkpoint between the steps before and after the changed nodes, so there is "
            "nothing to rewind to; start a new thread_id (and write with "
            "durability='sync', the default of run())"
        ),
    )


def _rewound(s: Settling, step: _Step) -> ResumePlan | None:
    """A change within the latest turn: fork from the checkpoint before it."""
    if s.history or (step.index <= s.turn and s.turn > 0):
        return None
    return _edited_since(s, _carrying_since(s, _rewind(s, step), step.index - 1), step.index)


def _edited_since(s: Settling, plan: ResumePlan, start: int) -> ResumePlan:
    """``plan``, blocked when its fork goes back before a human edit (``update_state``)
    among ``records[start:]``: the fork re-runs from before it and would drop it, and an
    edit is human input no node can make again."""
    edits = [r for r in s.records[start:] if r.source == "update" and r.wrote]
    if plan.blocker or not edits:
        return plan
    named = "; ".join(
        f"checkpoint {r.checkpoint_id} set {', '.join(f'`{ch}`' for ch in sorted(r.wrote))}"
        for r in edits
    )
    return replace(
        plan,
        blocker=(
            f"thread {s.base.thread_id!r}: the rewind to checkpoint {plan.checkpoint_id} "
            f"goes back before {len(edits)} edit(s) made by hand with update_state "
            f"({named}); the fork re-runs from before them and would drop them. Ways "
            "out: neograph_ext.accept(graph, config) records that you handled the thread "
            "by hand and keeps the edit; or run from checkpoint "
            f"{plan.checkpoint_id} (configurable.checkpoint_id), which forks there without "
            "the edit, and make the edit again with update_state when it stops; or start "
            "a new thread_id"
        ),
    )


def _replayed(s: Settling, step: _Step) -> ResumePlan | None:
    """A change in an earlier turn, with ``replay_turns``: rewind into that turn, then feed
    the later turns their stored inputs again."""
    if not s.replay_turns:
        return None
    plan = _edited_since(s, _carrying_since(s, _rewind(s, step), step.index - 1), step.index)
    inputs = tuple(r.checkpoint_id for r in s.records[step.index :] if r.source == "input")
    return replace(plan, replayed=inputs)


def _blocked(s: Settling, step: _Step) -> ResumePlan:
    """A change in an earlier turn whose value is still live: rewinding would drop the
    later turns, so the plan names the ways out instead."""
    records, turn = s.records, s.turn
    when = (
        "a finished turn (the call starts a new one)"
        if s.history
        else f"an earlier turn (before the input at step {records[turn].step})"
    )
    return replace(
        _rewind(s, step),
        blocker=(
            f"thread {s.base.thread_id!r}: the earliest changed node ran in {when} and what "
            "it wrote is still live in the thread's state"
            f"{_naming([*step.rest, *s.pending], records[step.index])}; rewinding "
            "would drop the later turns. Ways out: ResumePolicy(replay_turns=True) re-runs "
            "it and feeds the later turns their inputs again, "
            "ResumePolicy(keep_compatible=True) keeps stored values that still validate, "
            "ResumePolicy(migrations={type or channel: fn}) converts them, "
            "neograph_ext.accept(graph, config) records that you handled the thread by "
            "hand, or start a new thread_id"
        ),
    )


SETTLEMENTS: tuple[Settlement, ...] = (
    _dead,
    _carried_on,
    _unproducible,
    _unforkable,
    _rewound,
    _replayed,
    _blocked,
)
"""How a step with changes is settled, in order: the first case that applies wins."""


def _rewind(s: Settling, at: _Step) -> ResumePlan:
    """Fork from the parent of ``records[index]`` (``len(records)``: the head itself)."""
    base, records, index, turn = s.base, s.records, at.index, s.turn
    changes = unique([*at.rest, *s.pending]) if index < len(records) else s.pending
    head = records[-1]
    # A stored value no node produced is no node to run: its channel's writers re-run.
    invalidated = frozenset(change.node for change in changes if change.node != STORED)
    removed = {c.node for c in changes if c.reason is ChangeReason.REMOVED}
    step, kept_tasks, later = _target_step(s, index, invalidated | removed)
    rerun = (later | (step - kept_tasks) | invalidated) - removed
    target = records[index - 1] if index > 0 else None
    unknown = any(change.reason is ChangeReason.UNKNOWN for change in changes)
    tasks = [
        TaskStep(node, r.step, True) for r in records[turn + 1 : index] for node in sorted(r.ran)
    ]
    if index < len(records):
        tasks += [TaskStep(n, records[index].step, n in kept_tasks) for n in sorted(step)]
        tasks += [TaskStep(n, r.step, False) for r in records[index + 1 :] for n in sorted(r.ran)]
        tasks += [TaskStep(n, head.step + 1, False) for n in sorted(user_nodes(head.next_nodes))]
    else:
        tasks += [TaskStep(n, head.step + 1, n not in rerun) for n in sorted(step)]
    plan = replace(
        base,
        notes=base.notes + ((_MISSING,) if unknown else ()),
        kind=PlanKind.REWIND,
        checkpoint_id=target.checkpoint_id if target else None,
        step=target.step if target else None,
        invalidated_nodes=invalidated,
        changes=changes,
        rerun=rerun,
        kept=(ran_in(records[turn + 1 : index]) | kept_tasks) - rerun,
        kept_tasks=kept_tasks,
        steps=tuple(tasks),
    )
    return plan


def _target_step(
    s: Settling, index: int, dropped: frozenset[str]
) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The rewind target's own step, of it the nodes whose finished tasks are kept, and
    the nodes that ran after it: the tasks that produced ``records[index]`` on the old
    branch, or, rewinding the head itself (a crashed step, a question), the tasks it
    waits on, of which only those that finished are kept (a node with a task that did
    not finish runs too), or whose answers are."""
    records, head = s.records, s.records[-1]
    if index < len(records):
        step = records[index].ran
        return step, step - dropped, ran_in(records[index + 1 :]) | user_nodes(head.next_nodes)
    step = user_nodes(head.next_nodes)
    if s.head_step is None:
        return step, step - dropped, frozenset()
    # A task still asking keeps the answers it was given: it runs, and asks the rest.
    kept = step & (s.head_step.finished | s.head_step.answered)
    return step, kept - dropped, step & s.head_step.unfinished


def _naming(changes: Sequence[NodeChange], record: Record) -> str:
    channels = sorted({c.channel for c in changes if c.channel in record.wrote})
    return f" (channels {', '.join(channels)})" if channels else ""


_MISSING = (
    "some checkpoints name a stamp whose description is not stored beside them (deleted, "
    "or written by code that never stored it): what they cover counts as changed, so "
    "this rewind may re-run more than the changed nodes"
)


def settle(
    settling: Settling, steps: Sequence[Found]
) -> tuple[ResumePlan | None, tuple[NodeChange, ...]]:
    """Settle ``steps`` (oldest first) by ``SETTLEMENTS``: the plan of the first step
    settled by one (its values carried on before it, ``with_carried``), and the changes
    carried; no plan when every step was ignored or carried."""
    carried: list[NodeChange] = []
    for position in range(len(steps)):
        step = _Step(steps, position)
        outcome = next(o for o in (case(settling, step) for case in SETTLEMENTS) if o is not None)
        if outcome is _IGNORED:
            continue
        if outcome is _CARRIED:
            carried += step.found
            continue
        assert isinstance(outcome, ResumePlan)
        return with_carried(outcome, carried), tuple(carried)
    return None, tuple(carried)
