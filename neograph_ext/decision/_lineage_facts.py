"""What a lineage says, read for the decision: who wrote what is still live, what was
verified, which nodes ran and in what order, what changed among pending tasks.

Rules:
- Pure functions of records and stamps; no I/O, no LangGraph graph.
- Records share their sets of names along a thread: functions visit each distinct set
  once, so a long thread costs little more than its distinct steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from neograph_ext.decision._changes import (
    STORED,
    ChangeReason,
    NodeChange,
    step_changes,
    subgraph_lines,
)
from neograph_ext.decision._history import Record
from neograph_ext.decision._langgraph import TASKS_CHANNEL
from neograph_ext.decision._stamp import Stamp, StampRef, Unreadable

__all__ = [
    "StepChanges",
    "alive",
    "converted_items",
    "foreign",
    "is_carrying_fork",
    "last_writers",
    "live_in",
    "node_order",
    "pending_changes",
    "ran_in",
    "settled_at",
    "unique",
    "unreadable_note",
    "user_nodes",
    "verified",
    "verified_at",
    "verified_head",
    "waiting_subgraphs",
    "with_misread",
]

_NONE: frozenset[str] = frozenset()


def with_misread(
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
        # The Sends a head queued are its own: the step that wrote it sent them.
        index = len(records) - 1 if channel == TASKS_CHANNEL else writers.get(channel)
        if index is None:
            continue
        record = records[index]
        blamed = sorted(node for ch, node in record.writers or () if ch == channel)
        live = frozenset(ch for ch in record.wrote if writers.get(ch) == index)
        found, _ = steps.setdefault(index, ([], live))
        found += [
            change
            for node in blamed or sorted(user_nodes(record.ran)) or [STORED]
            if (
                change := NodeChange(
                    node, ChangeReason.STORED_VALUE, None, None, (why,), channel=channel
                )
            )
            not in found
        ]
    return [(index, tuple(found), live) for index, (found, live) in sorted(steps.items())]


def node_order(records: Sequence[Record]) -> tuple[str, ...]:
    """Nodes by their first run along ``records`` (a step's by name), then the nodes the
    head waits on. Records share their sets of names: each distinct set is sorted once."""
    found: dict[str, None] = {}
    seen: set[int] = set()
    for ran in [*(record.ran for record in records), user_nodes(records[-1].next_nodes)]:
        if ran and id(ran) not in seen:
            seen.add(id(ran))
            found.update(dict.fromkeys(sorted(ran)))
    return tuple(found)


def verified_at(
    records: Sequence[Record], current: Stamp
) -> tuple[int, Stamp | StampRef | Unreadable | None]:
    """The index of the last record ``run`` verified under its own stamp, when that is not
    ``current`` (``settled_at`` starts at one that is), and that stamp; else ``(-1, None)``."""
    for index in range(len(records) - 1, -1, -1):
        record = records[index]
        stamp = record.stamp
        if isinstance(stamp, Stamp | StampRef) and stamp.id == record.verified:
            return (index, stamp) if stamp.id != current.id else (-1, None)
    return -1, None


def is_carrying_fork(record: Record) -> bool:
    """A fork ``run`` wrote without running a node (carrying values on, ``accept``,
    keeping tasks): what it holds was the thread's values, converted."""
    return record.source == "fork" and not record.ran


def converted_items(
    records: Sequence[Record], end: int, accumulates: frozenset[str], current: Stamp
) -> dict[str, tuple[tuple[int, str], ...]]:
    """Per accumulating channel, the carrying forks of ``records[:end]`` that converted
    its items from a type other than ``current``'s, as ``(index, checkpoint id)``.

    A fork converted a channel when ``run`` carried values on it (``Record.carried``)
    and its stamp types the channel otherwise than its parent's. An
    accumulating channel's value holds the items of every earlier write, so a rewind to
    a checkpoint before that fork brings the unconverted items back, whichever node
    writes the channel after it; harmless only when they are of the current type (a
    rollback to the code before the conversion). A fork that carried nothing (a keeping
    fork, ``accept``) left the items as they were, though it wrote a ``DeltaChannel``'s
    snapshot.
    """
    found: dict[str, list[tuple[int, str]]] = {}
    for index in range(1, end):
        record = records[index]
        stamp, before = record.stamp, records[index - 1].stamp
        if not (record.carried and accumulates & record.wrote) or not is_carrying_fork(record):
            continue
        if not isinstance(stamp, Stamp):
            continue
        if isinstance(before, StampRef) and before.id == current.id:
            before = current  # its description was not looked up: it is the current one
        for channel in sorted(record.wrote & accumulates):
            # An unknown type (a stamp not looked up, none) counts as another one.
            was = before.channels.get(channel) if isinstance(before, Stamp) else None
            if was != stamp.channels.get(channel) and was != current.channels.get(channel):
                found.setdefault(channel, []).append((index, record.checkpoint_id))
    return {channel: tuple(forks) for channel, forks in found.items()}


def last_writers(records: Sequence[Record], verified_at: int = -1) -> dict[str, int]:
    """Per channel, the index of the last record that wrote it: whose value is live. A
    carrying fork up to ``verified_at`` wrote no value of its own: the value it carries
    stays its writer's."""
    # Records share their sets of names: find each set's last index, then its channels'.
    last = {
        wrote: index
        for index, wrote in enumerate(
            [
                _NONE if index <= verified_at and is_carrying_fork(record) else record.wrote
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


def settled_at(records: Sequence[Record], current: Stamp) -> int:
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


def alive(
    changes: tuple[NodeChange, ...], live: frozenset[str], last: frozenset[str] | None = None
) -> tuple[NodeChange, ...]:
    """The changes of a step of an earlier turn that still matter: those whose values are
    live.

    A value written in an earlier turn and written again since is dead: nothing reads
    it any more. A step of an earlier turn none of whose values is live changed nothing.
    A write to an accumulating channel (``live`` but not in ``last``, the channels the
    step wrote last) is still part of the value: its channel's type change matters, and
    a changed ``versions`` string (it asks for a re-run wherever the node's values are
    still read), but not the node's other changes, the step's other values having been
    replaced, and its items being of their channel's unchanged type.
    """
    if not live:
        return ()
    own = live if last is None else last
    return tuple(
        c
        for c in changes
        if (c.channel in live if c.channel else own or c.reason is ChangeReason.VERSION)
    )


def live_in(
    wrote: frozenset[str], index: int, writers: Mapping[str, int], accumulates: frozenset[str]
) -> frozenset[str]:
    """The channels record ``index``, which wrote ``wrote``, still holds part of the value
    of: those it wrote last, and every accumulating one (a later append keeps it)."""
    return frozenset(ch for ch in wrote if writers.get(ch) == index or ch in accumulates)


def verified_head(head: Record, current: Stamp) -> bool:
    """Whether ``run`` already checked the head's whole lineage against ``current``, and
    no other code claimed the head since (``_claim``)."""
    claimed_away = bool(head.claims) and head.claims[-1].stamp.id != current.id
    return verified(head.stamp, head.verified, current) and not claimed_away


def verified(
    stamp: Stamp | StampRef | Unreadable | None, verified: str | None, current: Stamp
) -> bool:
    """Whether a checkpoint written under ``stamp`` whose run mark verified the stamp id
    ``verified`` had its whole lineage checked against ``current`` by ``run``."""
    return isinstance(stamp, Stamp | StampRef) and stamp.id == current.id == verified


def ran_in(records: Sequence[Record]) -> frozenset[str]:
    """Every node that ran in ``records``: a union of the few distinct sets that records
    share along a thread, much cheaper than visiting each name of thousands of records."""
    return frozenset().union(*{record.ran for record in records})


class StepChanges:
    """What changed in each step of a lineage, ``records``, against the current stamp: as
    ``plan`` decides on it and ``history`` shows it. Along a thread the same step under
    the same stamp repeats: each is compared (and its diff lines built) once."""

    def __init__(self, records: Sequence[Record], current: Stamp) -> None:
        self.current = current
        # A renamed node keeps its work, finished or waited on: LangGraph runs it by its
        # new name (``_langgraph_renames``).
        self.renames = dict(current.renames or {})
        self.clears = frozenset(current.clears or ())
        self.compared: dict[_Step, tuple[NodeChange, ...]] = {}

    def of(self, record: Record, stamp: Stamp | StampRef) -> tuple[NodeChange, ...]:
        """The changes of ``record``'s step, taken to have run under ``stamp``."""
        # A None a node wrote to say "nothing here" is no value of the changed type.
        wrote = record.wrote - (record.nulled & self.clears) if record.nulled else record.wrote
        key = (stamp.id, record.ran, wrote, record.writers, record.held)
        found = self.compared.get(key)
        if found is None:
            found = self.compared[key] = step_changes(
                record.ran, wrote, stamp, self.current, writers=record.writers,
                renames=self.renames, held=record.held,
            )  # fmt: skip
        return found


_Step = tuple[
    str,
    frozenset[str],
    frozenset[str],
    frozenset[tuple[str, str]] | None,
    frozenset[tuple[str, str]],
]
"""A step as compared: the stamp it ran under, what ran, what it wrote, who wrote what,
and the classes of the values it left."""


def unique(changes: Sequence[NodeChange]) -> tuple[NodeChange, ...]:
    """Each node and reason once, the earliest first; a stored value's change only when
    no node's change names its channel already (its diff would be said twice)."""
    found: dict[tuple[str, ChangeReason, str | None], NodeChange] = {}
    for change in changes:
        found.setdefault((change.node, change.reason, change.channel), change)
    named = {c.channel for c in found.values() if c.node != STORED}
    return tuple(c for c in found.values() if c.node != STORED or c.channel not in named)


def pending_changes(
    head: Record, current: Stamp, writers: frozenset[tuple[str, str]] | None = None
) -> tuple[NodeChange, ...]:
    """Changes among the head's finished-but-uncheckpointed tasks (a crashed superstep, or
    a step waiting on a question): each task's against the code it ran under, the head's
    own, or a claimant's for the tasks that finished after its claim (``_claim``).
    ``writers``: who wrote what of the head's own (``HeadStep.writers``), when known."""
    waiting = user_nodes(head.next_nodes)
    claimed = tuple(
        change
        for claim in head.claims
        if claim.tasks and claim.stamp.id != current.id
        for change in step_changes(
            waiting, claim.wrote, claim.stamp, current, renames=current.renames
        )
    )
    return _unclaimed_changes(head, current, writers) + claimed


def _unclaimed_changes(
    head: Record, current: Stamp, writers: frozenset[tuple[str, str]] | None
) -> tuple[NodeChange, ...]:
    """Changes among the head's finished tasks that its own code ran."""
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
    return step_changes(
        user_nodes(head.next_nodes),
        channels,
        head.stamp,
        current,
        writers=writers,
        renames=current.renames,
    )


def waiting_subgraphs(head: Record, current: Stamp) -> tuple[NodeChange, ...]:
    """Subgraph nodes the head waits on whose subgraph changed.

    A subgraph that crashed or was interrupted part-way keeps its own checkpoints (under
    its task's namespace), and LangGraph resumes it from them, reviving inner values
    written by the old code: the parent is forked from the head instead, which gives
    the subgraph's task a new id and so a fresh start.
    """
    if not isinstance(head.stamp, Stamp) or head.stamp.id == current.id:
        return ()
    found = []
    for node in sorted(user_nodes(head.next_nodes)):
        before, after = head.stamp.nodes.get(node), current.nodes.get(node)
        if before is not None and after is not None and before.sub and before.sub != after.sub:
            lines = subgraph_lines(node, before, after, head.stamp, current)
            found.append(NodeChange(node, ChangeReason.SUBGRAPH, None, None, lines))
    return tuple(found)


def user_nodes(names: frozenset[str]) -> frozenset[str]:
    """Without LangGraph's own nodes (``__start__``), which no stamp fingerprints."""
    return frozenset(name for name in names if not name.startswith("__"))


def foreign(records: Sequence[Record], current: Stamp) -> str | None:
    """A thread written by a graph with no node in common with the current one."""
    ran = ran_in(records)
    if not ran or ran & (frozenset(current.nodes) | frozenset(current.renames or {})):
        return None
    return (
        f"the thread was written by a different graph: its nodes {sorted(ran)} have nothing "
        f"in common with this graph's nodes {sorted(current.nodes)}; use another thread_id"
    )


def unreadable_note(stamp: Unreadable) -> str:
    return f"stamp not trusted ({stamp.reason}): {stamp.detail}"
