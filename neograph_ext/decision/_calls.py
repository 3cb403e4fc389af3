"""The resume decision for an ``@entrypoint`` thread: pure, from its latest turn and the
current stamp to a ``ResumePlan``.

Rules:
- No I/O and no LangGraph graph here; the read side (``_flow``) builds an
  ``EntrypointTurn`` (``_turn``).
- A turn's cached task results are the finished calls on its base checkpoint (the
  input checkpoint, or the fork a rewind wrote), attributed to the base's stamp, or to
  the stamp of the code that claimed the base before the call finished (``_claim``). A call
  is changed when its task's fingerprint differs from the current one. The first
  changed call, in call order, is cut: it and every call after it (they may have
  consumed its stale value) run again, the calls before it are kept (``kept_prefix``).
- A cached result that does not read back as its task's declared return type (a class
  the serializer cannot revive comes back as a ``dict``) counts as a change of its task
  where it would be served: in a turn that resumes, or before a rewind's cut.
- A finished turn is also judged by its entrypoint (return type, save type, version),
  under the stamp of the checkpoint it ended with: a change re-runs the entrypoint's
  body with every unchanged cached result kept.
- The ``previous`` a turn starts from was saved by the turn before it: saved under
  another save type, the stale value is live in the turn itself, so rewinding the turn
  would hand it to new code; the plan is blocked, naming the ways out
  (``replay_turns`` rewinds the first turn instead and replays the later inputs).
- When the save type is the only change, a policy that converts (``migrations``) or
  keeps (``keep_compatible``) the ``previous`` the head holds makes the plan a
  ``migrate``: the head is forked holding the converted value, and nothing re-runs.
- A stamp that is absent or unreadable counts as unverified, as for graphs; a stamp
  whose description is missing changes every call (``UNKNOWN``).
- Older code never undoes newer code's work, as for graphs (``_ownership.owned``): a
  thread newer code wrote last is ``superseded``, unless the call takes it over.
- A replay of turns cut short (a kill, a crash) finishes the head's turn, then replays
  the turns still owed (``HeadFacts.owed``), as for graphs (``_plan.with_owed``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from neograph_ext.decision._changes import ChangeReason, NodeChange, step_changes
from neograph_ext.decision._decision import Carriable, HeadFacts, PlanKind, ResumePlan, TaskStep
from neograph_ext.decision._history import Record
from neograph_ext.decision._langgraph_calls import PREVIOUS_CHANNEL
from neograph_ext.decision._ownership import owned
from neograph_ext.decision._plan import ASKED_AGAIN, kept_valid, lost_on_pause, with_owed
from neograph_ext.decision._stamp import Stamp, StampRef, Unreadable
from neograph_ext.decision._turn import EntrypointTurn, TurnCall

__all__ = ["decide_calls", "kept_prefix"]

_Seen = Stamp | StampRef | Unreadable | None


def kept_prefix(calls: tuple[TurnCall, ...], kept: frozenset[str]) -> tuple[TurnCall, ...]:
    """The calls a rewind keeping the tasks ``kept`` keeps: those before the first call
    whose task is not among them (a changed call, or one no task matches)."""
    found: list[TurnCall] = []
    for call in calls:
        if call.task is None or call.task not in kept:
            break
        found.append(call)
    return tuple(found)


def decide_calls(
    turn: EntrypointTurn,
    current: Stamp,
    thread_id: str,
    head: HeadFacts,
    *,
    replay_turns: bool = False,
    carry: Carriable | None = None,
    records: Sequence[Record] = (),
    take_over: bool = False,
    unmatched_at: int | None = None,
) -> ResumePlan:
    """Plan the resume of an entrypoint thread.

    Args:
        turn: Its latest turn.
        current: The stamp of the entrypoint about to run.
        thread_id: For messages.
        head: What the head holds (the nodes it waits on, a pending question, the order
            of the stamps that tells whether newer code owns the thread).
        replay_turns: For a stale ``previous``: rewind the first turn and replay the
            later turns' inputs, rather than blocking.
        carry: Whether the head's ``previous`` may be converted (``migrations``) or kept
            (``keep_compatible``) when its save type changed and nothing else did.
        records: The head's lineage, oldest first: who wrote the thread last.
        take_over: Take a thread newer code owns over (``ResumePolicy.take_over``)
            rather than leave it ``superseded``.
        unmatched_at: The position of a call found, as it was made, not to match the
            result cached there (``_call_match``): it and every later call run again.

    Returns:
        The plan; ``blocker`` is set when it must not be carried out silently.
    """
    plan = _decided(turn, current, thread_id, head, replay_turns, carry, unmatched_at)
    return with_owed(owned(plan, records, current, head.stamp_order, take_over=take_over), head)


def _decided(
    turn: EntrypointTurn,
    current: Stamp,
    thread_id: str,
    head: HeadFacts,
    replay_turns: bool,
    carry: Carriable | None,
    unmatched_at: int | None = None,
) -> ResumePlan:
    """``decide_calls`` before the thread's owner is considered."""
    turn = _settled(turn, current)
    names = tuple(dict.fromkeys(c.task for c in turn.calls if c.task is not None))
    plan = ResumePlan(
        PlanKind.CONTINUE if head.next_nodes else PlanKind.UP_TO_DATE,
        thread_id,
        head_id=head.checkpoint_id,
        next_nodes=head.next_nodes,
        kept=frozenset(names),
        order=(*names, turn.entrypoint),
    )
    notes = _unverified_notes(turn)
    if notes:
        return _paused(replace(plan, kind=PlanKind.UNVERIFIED, notes=notes), head)
    if head.new_turn and turn.complete:
        return _history(plan, turn, current, head, replay_turns, carry)
    carried = _carried(plan, turn, current, carry)
    if carried is not None:
        return carried
    if turn.earlier and _save_changed(turn.previous, current):
        return _stale_previous(plan, turn, current, head, replay_turns)
    cut, changes = _call_changes(turn, current, unmatched_at)
    served = not turn.complete or bool(changes)
    later, made = _matched_when_made(turn.calls[:cut] if served else ())
    if not changes:
        return replace(plan, kept=plan.kept - later, matched_when_made=made) if later else plan
    rewound = _rewound(plan, turn, current, cut, tuple(changes), later)
    return _paused(replace(rewound, matched_when_made=made), head)


def _settled(turn: EntrypointTurn, current: Stamp) -> EntrypointTurn:
    """The turn with its stamps as the current code owns them; a turn whose stamp was
    accepted (``accept``: handled by hand) counts as written by the current code."""
    settled = current.id in turn.verified
    return replace(
        turn,
        base_stamp=current if settled else _own(turn.base_stamp, current),
        ended=current if settled and turn.complete else _own(turn.ended, current),
        previous=current if settled else _own(turn.previous, current),
    )


def _unverified_notes(turn: EntrypointTurn) -> tuple[str, ...]:
    """Why the turn's base, or the checkpoint a finished turn ended with, is unverified."""
    notes = []
    why = _unverified(turn.base_stamp)
    if why is not None:
        notes.append(f"checkpoint {turn.base_id}: {why}")
    why = _unverified(turn.ended) if turn.complete else None
    if why is not None:
        notes.append(f"the checkpoint the turn ended with: {why}")
    return tuple(notes)


def _call_changes(
    turn: EntrypointTurn, current: Stamp, unmatched_at: int | None
) -> tuple[int, list[NodeChange]]:
    """The cut (the position of the first call to run again) and the changes behind it."""
    changes: list[NodeChange] = []
    cut = len(turn.calls)
    for position, call in enumerate(turn.calls):
        found = _task_changes(call, _ran_under(call, turn, current), current)
        if found and position < cut:
            cut = position
        changes += [c for c in found if c.node not in {x.node for x in changes}]
    if turn.complete:
        changes += _entry_changes(turn.entrypoint, turn.ended, current)
    if not turn.complete or changes:
        # Only a resumed turn, or a rewind keeping them, is served its cached results.
        cut, misread = _misread_results(turn.calls, cut)
        changes += misread
    if not turn.complete or changes:
        # Only calls about to be served are compared with the calls the code makes.
        cut, moved = _unmatched_calls(turn.calls, cut, unmatched_at)
        changes += moved
    return cut, changes


def _rewound(
    plan: ResumePlan,
    turn: EntrypointTurn,
    current: Stamp,
    cut: int,
    changes: tuple[NodeChange, ...],
    later: frozenset[str],
) -> ResumePlan:
    """The ``rewind`` plan: the turn's base forked, the calls before ``cut`` kept."""
    kept = turn.calls[:cut]
    dropped = turn.calls[cut:]
    # As for a graph's rewind after a crash: a call that never finished runs too.
    rerun = frozenset(c.task for c in dropped if c.task is not None) | {turn.entrypoint}
    rerun |= turn.failed
    # A task the code calls at or after the cut is not kept, though it may not rerun yet.
    later |= frozenset(turn.made[dropped[0].index :] if dropped else ())
    rerun |= _called(rerun, current)
    kept_names = frozenset(c.task for c in kept if c.task is not None)
    unmatched = sum(1 for c in dropped if c.task is None)
    extra = (
        (
            f"{unmatched} cached call(s) of tasks not seen (reached through an attribute or "
            "an argument, or called inside a task) run again: they came after the change",
        )
        if unmatched
        else ()
    )
    return replace(
        plan,
        kind=PlanKind.REWIND,
        checkpoint_id=turn.base_id,
        step=turn.base_step,
        invalidated_nodes=frozenset(c.node for c in changes),
        changes=changes,
        rerun=rerun,
        kept=kept_names - rerun - later,
        kept_tasks=kept_names,
        steps=tuple(TaskStep(c.task or "?", c.index, i < cut) for i, c in enumerate(turn.calls)),
        notes=extra,
    )


def _carried(
    plan: ResumePlan, turn: EntrypointTurn, current: Stamp, carry: Carriable | None
) -> ResumePlan | None:
    """A ``migrate`` plan, when the only change is the save type and the policy carries
    the ``previous`` the head holds; else None."""
    stale = (turn.earlier and _save_changed(turn.previous, current)) or (
        turn.complete and _save_changed(turn.ended, current)
    )
    if carry is None or not stale:
        return None
    if any(_task_changes(c, _ran_under(c, turn, current), current) for c in turn.calls):
        return None
    if turn.complete and any(
        c.reason is not ChangeReason.CHANNEL
        for c in _entry_changes(turn.entrypoint, turn.ended, current)
    ):
        return None
    found = carry(frozenset({PREVIOUS_CHANNEL}))
    if PREVIOUS_CHANNEL not in found.migrated | found.compatible:
        return None
    old = next((s for s in (turn.ended, turn.previous) if isinstance(s, Stamp | StampRef)), current)
    changes = step_changes(
        frozenset({turn.entrypoint}), frozenset({PREVIOUS_CHANNEL}), old, current
    )
    return replace(
        plan,
        kind=PlanKind.MIGRATE,
        invalidated_nodes=frozenset({turn.entrypoint}),
        changes=changes,
        migrated=frozenset({PREVIOUS_CHANNEL}),
        candidates=frozenset({PREVIOUS_CHANNEL}),
    )


_RERUN = (ChangeReason.VERSION, ChangeReason.REMOVED, ChangeReason.UNKNOWN)
"""Changes of the entrypoint that ask for its turn to run again: no value tells them."""


def _history(
    plan: ResumePlan,
    turn: EntrypointTurn,
    current: Stamp,
    head: HeadFacts,
    replay: bool,
    carry: Carriable | None,
) -> ResumePlan:
    """A new turn on a finished one (``HeadFacts.new_turn``): the turns before it are
    history. A new turn's calls get ids of their own, so none reads a cached result: a
    changed task is noted, kept. Only the ``previous`` the finished turn saved is read:
    under a changed save type it is kept if it still validates, else converted
    (``migrations``), replayed or blocked; a changed version of the entrypoint asks for
    its turns to run again (replayed or blocked)."""
    tasks = {
        c.node: c
        for x in turn.calls
        for c in _task_changes(x, _ran_under(x, turn, current), current)
    }
    entry = _entry_changes(turn.entrypoint, turn.ended, current)
    noted = replace(plan, notes=tuple(map(_kept_unread, tasks.values())))
    if any(c.reason in _RERUN for c in entry):
        why = f"`{turn.entrypoint}` changed ({', '.join(sorted({c.reason for c in entry}))})"
        return _stale_previous(
            noted, replace(turn, previous=turn.ended), current, head, replay, why
        )
    if not _save_changed(turn.ended, current):
        return noted
    found = carry(frozenset({PREVIOUS_CHANNEL})) if carry is not None else None
    if found is None or PREVIOUS_CHANNEL not in found.migrated | found.compatible:
        why = "no longer validates as the current save type"
        return _stale_previous(
            noted, replace(turn, previous=turn.ended), current, head, replay, why
        )
    saved = tuple(c for c in entry if c.channel == PREVIOUS_CHANNEL)
    kept = PREVIOUS_CHANNEL not in found.migrated
    return replace(
        noted,
        kind=PlanKind.UP_TO_DATE if kept else PlanKind.MIGRATE,
        invalidated_nodes=frozenset({turn.entrypoint}),
        changes=saved,
        migrated=frozenset({PREVIOUS_CHANNEL}),
        candidates=frozenset({PREVIOUS_CHANNEL}),
        notes=(*noted.notes, *(kept_valid(c) for c in saved if kept)),
    )


def _kept_unread(change: NodeChange) -> str:
    """Why a new turn keeps a changed task's cached result of a finished turn."""
    return (
        f"{change.describe().splitlines()[0]} in a finished turn; a new turn reads none "
        "of its cached results: kept: still valid"
    )


def _ran_under(call: TurnCall, turn: EntrypointTurn, current: Stamp) -> _Seen:
    """The stamp of the code that ran the call: the claimant's it finished after
    (``_claim``), else the base's."""
    return _own(call.ran_under, current) if call.ran_under is not None else turn.base_stamp


def _own(seen: _Seen, current: Stamp) -> _Seen:
    """The current stamp for a reference to it: its description is at hand."""
    return current if isinstance(seen, StampRef) and seen.id == current.id else seen


def _paused(plan: ResumePlan, head: HeadFacts) -> ResumePlan:
    if plan.kind is not PlanKind.REWIND or not head.paused:
        return plan
    # A cached result of a class no checkpoint revives would be read back again after
    # the question asked again: the answer would never be applied.
    lost = sorted(head.unrevivable & {c.node for c in plan.changes})
    if lost:
        return replace(plan, blocker=lost_on_pause(plan.thread_id, lost))
    return replace(plan, notes=(*plan.notes, ASKED_AGAIN))


def _unverified(seen: _Seen) -> str | None:
    if seen is None:
        return "written without a stamp"
    if isinstance(seen, Unreadable):
        return f"stamp not trusted ({seen.reason}: {seen.detail})"
    return None


def _task_changes(call: TurnCall, old: _Seen, current: Stamp) -> tuple[NodeChange, ...]:
    if call.task is None or not isinstance(old, Stamp | StampRef):
        return ()
    if isinstance(old, Stamp) and call.task not in old.nodes and call.task in current.nodes:
        # A task the older code did not see is judged by what it is now: unknown before.
        return ()
    return step_changes(frozenset({call.task}), frozenset(), old, current)


def _called(tasks: frozenset[str], current: Stamp) -> frozenset[str]:
    """The tasks that the tasks ``tasks`` call, at any depth (``NodeStamp.sub``): they run
    again inside them."""
    found: set[str] = set()
    todo = list(tasks)
    while todo:
        node = current.nodes.get(todo.pop())
        for callee in (node.sub or {}) if node is not None else ():
            if callee not in found:
                found.add(callee)
                todo.append(callee)
    return frozenset(found)


def _misread_results(calls: tuple[TurnCall, ...], cut: int) -> tuple[int, tuple[NodeChange, ...]]:
    """The cut moved to the first call, before ``cut``, of a task whose cached result
    reads back as something else (stale though no type changed), and a change per such
    task. Judged by task, as calls are kept: a class that cannot revive fails every call
    of the task alike."""
    why = {c.task: c.misread for c in calls[:cut] if c.task is not None and c.misread}
    if not why:
        return cut, ()
    first = next(i for i, c in enumerate(calls) if c.task in why)
    changes = tuple(
        NodeChange(task, ChangeReason.STORED_VALUE, None, None, (reason,))
        for task, reason in sorted(why.items())
    )
    return first, changes


def _unmatched_calls(
    calls: tuple[TurnCall, ...], cut: int, at: int | None
) -> tuple[int, tuple[NodeChange, ...]]:
    """The cut moved to the first call the code does not make again (``TurnCall.matched``)
    or found so as it was made (at or after position ``at``), and a change per task
    naming each such call."""
    moved = [
        c
        for c in calls
        if (c.task is not None and c.matched is False) or (at is not None and c.index >= at)
    ]
    if not moved or calls.index(moved[0]) >= cut:
        return cut, ()
    lines: dict[str, list[str]] = {}
    for call in moved if at is None else moved[:1]:
        lines.setdefault(call.task or "?", []).append(
            f"call {call.index}: the code now makes it to another task or with other "
            "arguments, or makes no call there"
        )
    changes = tuple(
        NodeChange(task, ChangeReason.CALL, None, None, tuple(why)) for task, why in lines.items()
    )
    return calls.index(moved[0]), changes


def _matched_when_made(calls: tuple[TurnCall, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The tasks whose cached calls are served only if the calls made match them (from
    the first whose match the code does not tell: a later one follows from it), and
    those calls, as ``ResumePlan.matched_when_made`` names them."""
    first = next((i for i, c in enumerate(calls) if c.matched is None), None)
    if first is None:
        return frozenset(), ()
    # A call no task seen matches is never kept, as before (``kept_prefix``).
    later = [(c.task, c.index) for c in calls[first:] if c.task is not None]
    return frozenset(t for t, _ in later), tuple(f"{t} (call {i})" for t, i in later)


def _entry_changes(entry: str, ended: _Seen, current: Stamp) -> tuple[NodeChange, ...]:
    if not isinstance(ended, Stamp | StampRef):
        return ()
    return step_changes(frozenset({entry}), frozenset({PREVIOUS_CHANNEL}), ended, current)


def _save_changed(previous: _Seen, current: Stamp) -> bool:
    if isinstance(previous, StampRef):
        return previous.id != current.id
    if not isinstance(previous, Stamp):
        return False
    return previous.channels.get(PREVIOUS_CHANNEL) != current.channels.get(PREVIOUS_CHANNEL)


def _stale_previous(
    plan: ResumePlan,
    turn: EntrypointTurn,
    current: Stamp,
    head: HeadFacts,
    replay: bool,
    why: str = "",
) -> ResumePlan:
    """The plan when the turn started from a ``previous`` saved under another save type;
    ``why``: for a new turn, why the finished turn's ``previous`` cannot be read as it is."""
    entry = turn.entrypoint
    old = turn.previous if isinstance(turn.previous, Stamp | StampRef) else current
    changes = step_changes(frozenset({entry}), frozenset({PREVIOUS_CHANNEL}), old, current)
    changed = replace(
        plan,
        invalidated_nodes=frozenset({entry}),
        changes=changes,
        kept=frozenset(),
        rerun=frozenset({entry, *(c.task for c in turn.calls if c.task)}),
    )
    if replay and turn.first_turn is not None:
        return _paused(
            replace(
                changed,
                kind=PlanKind.REWIND,
                checkpoint_id=turn.first_turn,
                step=-1,
                replayed=turn.later_inputs,
            ),
            head,
        )
    ways = (
        "the thread's first turn is not stored any more (pruned), so its turns cannot be "
        "replayed: convert the saved value with ResumePolicy(migrations=...) or "
        "keep_compatible=True, or start a new thread_id"
        if turn.first_turn is None
        else "Run with ResumePolicy(replay_turns=True) to rewind the first turn and replay "
        "the later turns' inputs, or start a new thread_id"
    )
    return replace(
        changed,
        kind=PlanKind.REWIND,
        blocker=(
            f"the `previous` a new turn of `{entry}` starts from was saved by a finished "
            f"turn, and {why}: only running the turns again makes it. {ways}"
            if why
            else f"the `previous` this turn of `{entry}` starts from was saved by an "
            "earlier turn under another save type, and it is live: rewinding the turn "
            f"would hand the stale value to the new code. {ways}"
        ),
    )
