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
  So does one of the checkpoint a rewind forks from (``HeadFacts.fork_misread``), on
  the record that last wrote it up to there; one inside a subgraph the head waits on
  (``HeadFacts.inner``) changes its node, pending at the head. A paused thread is not
  rewound for a value no checkpoint revives: the answer would meet it again.
- A change inside a subgraph the head waits on is rewound inside it when only such
  changes are pending at the head and the fork is proven (``_inside.refusal``): the
  plan names the inner fork (``inside``) and the parent resumes from its head; else the
  notes say why the node re-runs whole. A rewind that would drop a human edit made
  inside one is blocked, as one forking from before an edit at the top level is.
- Checkpoints without a trustworthy stamp never count as changed (``unverified``).
- A stamp whose description cannot be found (a reference left unresolved) counts
  as changed for every node it covers: a rewind that may not be minimal, never a
  silent reuse.
- A rewind that would drop later turns, or that has no checkpoint to fork from,
  is not done silently: the plan carries a ``blocker`` and ``run`` raises.
- A checkpoint ``run`` verified against the current stamp (after a rewind, a
  migration or ``accept``) closes the books: changes before it were handled then.
- Each step with changes is settled by the first case of ``_settlements.SETTLEMENTS``
  that applies (the tuple ``decide`` runs): its values are dead, carried, rewound
  within the latest turn, rewound with the later turns' inputs replayed, or else the
  plan is blocked, naming the ways out.
- A plan that would undo the work of newer code that owns the thread is
  ``superseded`` instead, unless it takes the thread over (``_ownership.owned``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import NamedTuple

from neograph_ext.decision._changes import ChangeReason, NodeChange, storage_kind_changes
from neograph_ext.decision._decision import (
    Carriable,
    Carry,
    HeadFacts,
    PlanKind,
    ResumePlan,
    TaskStep,
)
from neograph_ext.decision._history import Record
from neograph_ext.decision._inside import Inside, dropped_edits, judged, path_of
from neograph_ext.decision._lineage_facts import (
    StepChanges,
    alive,
    converted_items,
    foreign,
    is_carrying_fork,
    last_writers,
    live_in,
    node_order,
    pending_changes,
    ran_in,
    settled_at,
    unique,
    unreadable_note,
    verified,
    verified_at,
    verified_head,
    waiting_subgraphs,
    with_misread,
)
from neograph_ext.decision._ownership import owned
from neograph_ext.decision._settlements import SETTLEMENTS, Settling, settle, with_carried
from neograph_ext.decision._stamp import Stamp, StampRef, Unreadable

__all__ = [
    "ASKED_AGAIN",
    "CALLED_NOT_FINGERPRINTED",
    "REANSWERED",
    "SETTLEMENTS",
    "Carriable",
    "Carry",
    "HeadFacts",
    "PlanKind",
    "ResumePlan",
    "TaskStep",
    "asks_again",
    "decide",
    "kept_valid",
    "lost_on_pause",
    "needs_lineage",
    "not_fingerprinted",
    "verified",
    "verified_head",
    "with_owed",
]


def needs_lineage(head: HeadFacts | None, *, full: bool = False) -> bool:
    """Whether ``decide`` needs the head's lineage, or the head alone decides: a new
    thread, or a head ``run`` verified whose values read back and that owes no turns
    (that run checked the whole lineage). ``full``: always read it (``plan``, so that
    ``kept`` and ``rerun`` are complete)."""
    if head is None:
        return False
    return (
        full
        or not head.verified
        or head.replaying is not None
        or bool(head.misread)
        or bool(head.inner)
    )


def decide(
    records: Sequence[Record],
    current: Stamp,
    thread_id: str,
    carry: Carry | Carriable | None = None,
    *,
    replay_turns: bool = False,
    misread: Mapping[str, str] | None = None,
    head: HeadFacts | None = None,
    take_over: bool = False,
    reanswer: bool = False,
) -> ResumePlan:
    """Plan the resume of a thread: the whole decision, in one place.

    Each step whose types changed is settled by the first case that applies, in the
    order of ``SETTLEMENTS``: dead values are ignored, migrated and compatible values
    are carried (``migrated``), the latest turn rewinds, an earlier one rewinds and
    replays the later turns (``replay_turns``), and anything else blocks.

    Args:
        records: The head's lineage, oldest first (``history.lineage``); empty when
            ``head`` alone decides (``needs_lineage``) or the thread is new.
        current: The stamp of the graph about to run.
        thread_id: For messages.
        carry: Which changed channels may keep their stored values (a ``Carry``, or a
            ``Carriable`` asked once the candidates are known); none by default.
        replay_turns: Rewind into an earlier turn and replay the later turns' inputs,
            rather than blocking.
        misread: Per live channel of the head whose stored value does not read back as
            its declared type, the reason; ``head.misread`` when ``head`` is given.
        head: What the head holds: the verified-head shortcut, a question asked again
            after a rewind, the turns a replay cut short still owes, the order of the
            stamps that tells whether newer code owns the thread.
        take_over: Take a thread newer code owns over (``ResumePolicy.take_over``)
            rather than leave it ``superseded``.
        reanswer: A question asked again is given its answers again
            (``ResumePolicy.reanswer``): the plan says so.

    Returns:
        The plan; ``blocker`` is set when it must not be carried out silently.
    """
    if head is not None and not records:
        return not_fingerprinted(_at_verified_head(head, thread_id), head)
    misread = head.misread if head is not None else misread
    plan = _decide_steps(records, current, thread_id, Carry(), replay_turns, misread, head)
    if isinstance(carry, Carry):
        plan = _decide_steps(records, current, thread_id, carry, replay_turns, misread, head)
    elif carry is not None and plan.candidates:
        found = carry(plan.candidates)
        if found != Carry():
            plan = _decide_steps(records, current, thread_id, found, replay_turns, misread, head)
    plan = _renamed(plan, current.renames)
    if head is None:
        return plan
    plan = owned(plan, records, current, head.stamp_order, take_over=take_over)
    plan = _rewound_inside(plan, records, current, head)
    if plan.kind is PlanKind.REWIND and head.paused and not plan.blocker:
        plan = _rewound_at_pause(plan, head, thread_id, reanswer)
    return not_fingerprinted(with_owed(plan, head), head)


def _rewound_at_pause(
    plan: ResumePlan, head: HeadFacts, thread_id: str, reanswer: bool
) -> ResumePlan:
    """A rewind of a head that waits on a question: blocked when a value it judges cannot
    be revived, else noted when it asks the question again."""
    judged = head.misread.keys() | {change.node for change in head.inner}
    lost = sorted(head.unrevivable & judged)
    if lost:
        return replace(plan, blocker=lost_on_pause(thread_id, lost))
    if asks_again(plan, head):
        return replace(plan, notes=(*plan.notes, REANSWERED if reanswer else ASKED_AGAIN))
    return plan


def asks_again(plan: ResumePlan, head: HeadFacts) -> bool:
    """Whether a rewind of a paused head asks its question again: unless it rewinds the
    head's own step, where only finished siblings of the asking task changed, none of
    which asked (what the question was asked from is kept, and so are the answers the
    task was given; a changed sibling that asked would ask first)."""
    if plan.checkpoint_id != head.checkpoint_id or head.step is None:
        return True
    return bool((head.step.unfinished | head.step.asked) & plan.invalidated_nodes)


def _renamed(plan: ResumePlan, renames: Mapping[str, str] | None) -> ResumePlan:
    """``plan`` naming what runs and what is kept as the current graph names it: the
    lineage names a renamed node's work by its old name (so do the changes)."""
    if not renames:
        return plan

    def now(names: frozenset[str]) -> frozenset[str]:
        return frozenset(renames.get(name, name) for name in names)

    return replace(
        plan,
        rerun=now(plan.rerun),
        kept=now(plan.kept),
        kept_tasks=now(plan.kept_tasks),
        steps=tuple(replace(t, node=renames.get(t.node, t.node)) for t in plan.steps),
    )


def with_owed(plan: ResumePlan, head: HeadFacts) -> ResumePlan:
    """``plan``, or for a replay of turns cut short (a kill, a crash, a question a
    replayed turn asks), the plan that finishes the head's turn and then replays the
    turns still owed."""
    owes = head.owed and head.verified
    if owes and plan.kind in (PlanKind.CONTINUE, PlanKind.UP_TO_DATE):
        return replace(plan, kind=PlanKind.CONTINUE, replayed=head.owed)
    return plan


def _decide_steps(
    records: Sequence[Record],
    current: Stamp,
    thread_id: str,
    carry: Carry,
    replay_turns: bool,
    misread: Mapping[str, str] | None,
    facts: HeadFacts | None,
) -> ResumePlan:
    """``decide`` over a lineage, with what may be carried known."""
    if not records:
        return ResumePlan(PlanKind.FRESH, thread_id)
    head = records[-1]
    sources = [record.source for record in records]
    turn = len(sources) - 1 - sources[::-1].index("input") if "input" in sources else 0
    plan_with = _plan_with(records, thread_id, turn)
    other_graph = foreign(records, current)
    if other_graph:
        return plan_with(blocker=other_graph)
    ran = facts.step if facts is not None else None
    pending = _pending(head, current, facts)
    # What ``run`` verified under an earlier stamp is judged by that stamp: the thread
    # then counts as written by that code directly, and its carrying forks as values it
    # wrote (a chain of deploys plans as each deploy would on its own).
    verified_until, judged = verified_at(records, current)
    writers = last_writers(records, verified_until)
    accumulates = frozenset(current.accumulates or ())
    # A new turn on a finished thread: every turn is history, judged as an earlier one.
    history = facts is not None and facts.new_turn
    walked = _Walk(records, current, turn, history, writers, (verified_until, judged))
    found_in, notes, unread, replaced = _changed_steps(walked)
    if misread and _replaced_since(walked):
        # An earlier turn's value the turn under way replaces unread is not read back.
        gone = frozenset(current.replaced or ())
        earlier = {ch for ch in gone if history or writers.get(ch, turn) < turn}
        misread = {ch: why for ch, why in misread.items() if ch not in earlier}
    found_in = _misread_steps(found_in, records, writers, misread, facts)
    # An accumulating channel a carrying fork converted is carried again by a rewind to
    # before that fork (``_settlements``): the policy is asked about it too.
    converted = (
        converted_items(records, verified_until + 1, accumulates, current) if accumulates else {}
    )
    base = plan_with(
        candidates=frozenset(
            c.channel for _, found, live in found_in if live for c in found if c.channel in live
        )
        | frozenset(converted)
    )
    if unread:
        base = replace(base, notes=(*base.notes, *map(kept_valid, unique(unread))))
    if replaced:
        base = replace(base, notes=(*base.notes, *map(_replaced_note, unique(replaced))))
    settling = Settling(
        records,
        base,
        turn,
        carry,
        replay_turns,
        pending,
        verified_until,
        writers,
        converted,
        history,
        ran,
    )
    return _concluded(settling, found_in, notes, current)


def _plan_with(records: Sequence[Record], thread_id: str, turn: int) -> Callable[..., ResumePlan]:
    """The plan of a thread where nothing changed, given what the walk found: built once
    the walk found the candidates (``replace`` is costly)."""
    head = records[-1]
    return partial(
        ResumePlan,
        PlanKind.UP_TO_DATE if not head.next_nodes else PlanKind.CONTINUE,
        thread_id,
        head_id=head.checkpoint_id,
        next_nodes=head.next_nodes,
        kept=ran_in(records[turn + 1 :]),
        turn_input=records[turn].input,
        order=node_order(records),
    )


def _pending(head: Record, current: Stamp, facts: HeadFacts | None) -> tuple[NodeChange, ...]:
    """The changes pending at the head: among its finished tasks, the subgraphs it waits
    on, and inside them (``HeadFacts.inner``)."""
    inner = facts.inner if facts is not None else ()
    ran = facts.step if facts is not None else None
    own = pending_changes(head, current, ran.writers if ran is not None else None)
    waiting = waiting_subgraphs(head, current)
    if facts is not None and facts.inside:
        # A change that touches no inner task that finished is resumed where it is.
        outer = head.stamp if isinstance(head.stamp, Stamp) else None
        changed = frozenset(c.node for c in waiting)
        settled = judged(facts.inside, current, changed, outer).settled
        waiting = tuple(change for change in waiting if change.node not in settled)
    return unique(own + waiting + inner)


def _rewound_inside(
    plan: ResumePlan, records: Sequence[Record], current: Stamp, head: HeadFacts
) -> ResumePlan:
    """``plan``, rewinding inside the subgraphs the head waits on when only they changed
    (``_inside``): the parent is resumed from its head, not forked; and saying why a
    changed subgraph node re-runs as a whole otherwise."""
    if plan.kind is not PlanKind.REWIND or plan.blocker or not records:
        return plan
    notes = list(plan.notes)
    whole = {c.node for c in plan.changes if c.reason is ChangeReason.SUBGRAPH}
    finished = sorted(whole - plan.next_nodes)
    if finished:
        notes.append(
            f"{', '.join(f'`{n}`' for n in finished)} finished: LangGraph resumes a subgraph "
            "from its own checkpoints only while its task is pending, so it re-runs as a whole"
        )
    inside: tuple[Inside, ...] = ()
    if head.inside and plan.checkpoint_id == head.checkpoint_id:
        outer = records[-1].stamp if isinstance(records[-1].stamp, Stamp) else None
        waiting = frozenset(c.node for c in waiting_subgraphs(records[-1], current))
        found = judged(head.inside, current, waiting, outer)
        notes += [f"`{node}` re-runs as a whole: {why}" for node, why in found.why_not.items()]
        if found.forks and plan.invalidated_nodes <= found.forks.keys():
            inside = tuple(found.forks[node] for node in sorted(found.forks))
    edits = dropped_edits(head.inside, inside or None)
    if edits:
        return replace(plan, notes=tuple(notes), blocker=_edits_inside(plan, edits))
    if inside:
        return replace(plan, inside=inside, notes=tuple(notes))
    return replace(plan, notes=tuple(notes)) if len(notes) != len(plan.notes) else plan


def _edits_inside(plan: ResumePlan, edits: Sequence[tuple[tuple[str, ...], Record]]) -> str:
    """Why a rewind that would drop human edits made inside a subgraph is refused, as
    one that forks from before an edit at the top level is (``_settlements``)."""
    named = "; ".join(
        f"checkpoint {r.checkpoint_id} of {path_of(path)} set "
        + ", ".join(f"`{ch}`" for ch in sorted(r.wrote))
        for path, r in edits
    )
    return (
        f"thread {plan.thread_id!r}: the rewind would drop {len(edits)} edit(s) made by "
        f"hand with update_state inside a subgraph the thread waits on ({named}): the "
        "subgraph's work from before them runs again. Ways out: neograph_ext.accept(graph, "
        "config) records that you handled the thread by hand (a subgraph compiled "
        "checkpointer=True keeps the edit; a plain one starts afresh, its task renamed by "
        "the fork); or start a new thread_id"
    )


def _concluded(
    settling: Settling, found_in: _Found, notes: list[str], current: Stamp
) -> ResumePlan:
    """The plan once each step with changes (and the head's pending ones) is settled by
    the first case of ``SETTLEMENTS`` that applies; else values carried (``migrate``),
    checkpoints that cannot be verified, or nothing changed."""
    records, base, pending = settling.records, settling.base, settling.pending
    steps = [*found_in, (len(records), pending, frozenset())] if pending else found_in
    plan, carried = settle(settling, steps)
    if plan is not None:
        return plan
    if carried:
        if settling.history and not settling.carry.migrated & {c.channel for c in carried}:
            # Kept for still validating, no migration run: history, nothing to migrate.
            kept = (*base.notes, *map(kept_valid, unique(carried)))
            return with_carried(replace(base, notes=kept), carried)
        return with_carried(replace(base, kind=PlanKind.MIGRATE), carried)
    if notes:
        return replace(base, kind=PlanKind.UNVERIFIED, notes=tuple(notes))
    return _storage_kinds_noted(base, records[settled_at(records, current) :], current)


class _Walk(NamedTuple):
    """What the walk over a lineage's steps reads besides each record."""

    records: Sequence[Record]
    current: Stamp
    turn: int
    """The index of the latest turn's input record."""
    history: bool
    """Every turn is an earlier one (``HeadFacts.new_turn``)."""
    writers: Mapping[str, int]
    """Per channel, the index of the record whose value is live (``last_writers``)."""
    verified: tuple[int, Stamp | StampRef | Unreadable | None]
    """The last record ``run`` verified under another stamp, and that stamp
    (``verified_at``): records up to it are judged by it."""


_Found = list[tuple[int, tuple[NodeChange, ...], frozenset[str]]]


def _replaced_since(walk: _Walk) -> bool:
    """Whether the turn a call runs (a new one, or the latest, unless an edit by hand
    moved it on) starts with the nodes that write ``Stamp.replaced``: an earlier turn's
    value there is then replaced before any node reads it."""
    if not walk.current.replaced:
        return False
    return walk.history or all(r.source != "update" for r in walk.records[walk.turn + 1 :])


def _changed_steps(
    walk: _Walk,
) -> tuple[_Found, list[str], list[NodeChange], list[NodeChange]]:
    """Each step with changes still live, as ``(index, changes, live channels)``; the
    notes on steps whose stamp cannot be trusted; the changes of a finished turn kept
    because the items they appended are still valid; and the changes of an earlier turn
    whose values the turn a call runs replaces before any node reads them."""
    records, current, turn, history, writers = walk[:5]
    replaced = frozenset(current.replaced or ()) if _replaced_since(walk) else frozenset()
    gone: list[NodeChange] = []
    verified_until, judged = walk.verified
    # Most records of a long thread wrote nothing still live: skip building their sets.
    holders = frozenset(writers.values())
    compared = StepChanges(records, current)
    found_in: _Found = []
    notes: list[str] = []
    current_id, start = current.id, settled_at(records, current)
    accumulates = frozenset(current.accumulates or ())
    unread: list[NodeChange] = []
    for index, record in enumerate(records[start:], start):
        stamp = record.stamp if index > verified_until else judged
        if index <= verified_until and is_carrying_fork(record):
            continue
        if stamp is None or isinstance(stamp, Unreadable):
            # As for changes: in an earlier turn, only a value still live can matter.
            if record.ran and (index >= turn or live_in(record.wrote, index, writers, accumulates)):
                why = "written without a stamp" if stamp is None else unreadable_note(stamp)
                notes.append(f"checkpoint {record.checkpoint_id}: {why}")
            continue
        if stamp.id == current_id:
            continue
        changes = compared.of(record, stamp)
        if not changes:
            continue
        last = (
            frozenset(ch for ch in record.wrote if writers.get(ch) == index)
            if index in holders
            else frozenset()
        )
        live = last | (record.wrote & accumulates) if accumulates else last
        if index < turn or history:
            still = alive(changes, live, last)
            if live & replaced:
                live, last = live - replaced, last - replaced
                kept = alive(changes, live, last)
                gone += [c for c in still if c not in kept]
                still = kept
            if history and live - last:  # items it appended are still part of a value
                unread += [c for c in changes if c.channel is None and c not in still]
            changes = still
        found_in.append((index, changes, live))
    return found_in, notes, unread, gone


def _misread_steps(
    found_in: _Found,
    records: Sequence[Record],
    writers: Mapping[str, int],
    misread: Mapping[str, str] | None,
    facts: HeadFacts | None,
) -> _Found:
    """``found_in`` with the stored values that do not read back blamed on their writers:
    the head's, and those of a checkpoint a rewind would fork from."""
    if misread:
        found_in = with_misread(found_in, records, writers, misread)
    for checkpoint_id, stale in sorted((facts.fork_misread if facts else {}).items()):
        # What a rewind to it would hand on: blamed on its writer up to that checkpoint.
        at = next((i for i, r in enumerate(records) if r.checkpoint_id == checkpoint_id), None)
        if at is not None and stale:
            found_in = with_misread(found_in, records, last_writers(records[: at + 1]), stale)
    return found_in


def kept_valid(change: NodeChange) -> str:
    """Why a new turn keeps what a changed node of a finished turn wrote: the items it
    appended are of their channel's unchanged type, or its stored value validates."""
    what = (
        f"its stored value of `{change.channel}` validates as the current type"
        if change.channel
        else "the items it appended to the state are of their channel's type"
    )
    return f"{change.describe().splitlines()[0]} in a finished turn; {what}: kept: still valid"


def _replaced_note(change: NodeChange) -> str:
    """Why a change of an earlier turn's value does not block the turn a call runs."""
    what = f"`{change.channel}`" if change.channel else "what it wrote"
    return (
        f"{change.describe().splitlines()[0]} in an earlier turn; the turn under way "
        f"writes {what} before any node reads it: replaced by the new turn"
    )


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


def _at_verified_head(head: HeadFacts, thread_id: str) -> ResumePlan:
    """The plan from a verified head alone: nothing before it counts (the run that
    verified it checked its lineage), so it resumes the nodes the head waits on, if any."""
    kind = PlanKind.CONTINUE if head.next_nodes else PlanKind.UP_TO_DATE
    return ResumePlan(kind, thread_id, head_id=head.checkpoint_id, next_nodes=head.next_nodes)


def lost_on_pause(thread_id: str, channels: Sequence[str]) -> str:
    """Why a paused thread's misread values of classes that cannot be revived block (of
    ``channels``: state channels, subgraph nodes, tasks whose cached results they are):
    the rewind would re-run their writer and ask again, and the answer would resume from
    a checkpoint, where they come back as data once more, again and again."""
    named = ", ".join(f"`{ch}`" for ch in channels)
    return (
        f"thread {thread_id!r} waits on a question, and the value stored in {named} holds "
        "a class this process cannot revive from a checkpoint (neograph_ext."
        "unrevivable_types(graph) names it); a rewind would re-run its writer and ask the "
        "question again, and the answer would meet the same plain data. Fix: define the "
        "class at the top level of an importable module (or allow it on the saver's "
        "msgpack allowlist), then answer again; or start a new thread_id"
    )


ASKED_AGAIN = (
    "the thread waits on a question (an interrupt or a breakpoint) and something upstream "
    "of it changed: the question is asked again after the rewind, and run() returns it; an "
    "answer given now is set aside (ResumePolicy(reanswer=True) applies it to the new "
    "question)"
)
REANSWERED = (
    "the thread waits on a question (an interrupt or a breakpoint) and something upstream "
    "of it changed: the rewind asks it again, and ResumePolicy(reanswer=True) applies the "
    "answer given now to it, and to each question a node it re-runs asked before the "
    "answer given then, in order"
)


CALLED_NOT_FINGERPRINTED = "called graph not fingerprinted"
"""How a plan's note on a graph a node called, unseen at compile time, begins."""


def not_fingerprinted(plan: ResumePlan, head: HeadFacts) -> ResumePlan:
    """``plan``, not trusting what a graph a node the head waits on called left in its
    task's namespace (``HeadFacts.uncovered``) when the node resumes rather than re-runs:
    a ``continue`` is ``unverified`` (resumed as LangGraph would, or refused by
    ``on_unverified="raise"``), and the plan says why."""
    kept = {node: ns for node, ns in head.uncovered.items() if node not in plan.rerun}
    if not kept:
        return plan
    notes = tuple(
        f"{CALLED_NOT_FINGERPRINTED}: node `{node}` called a graph that wrote checkpoints "
        f"under `{ns}`, and no stamp describes it, so a change of its types is not "
        "detected; hold the graph where the node's code names it (a global, a closure, a "
        f"default, an attribute of the node's object), or bump versions[{node!r}]"
        for node, ns in sorted(kept.items())
    )
    kind = PlanKind.UNVERIFIED if plan.kind is PlanKind.CONTINUE else plan.kind
    return replace(plan, kind=kind, notes=(*plan.notes, *notes))
