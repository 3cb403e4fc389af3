"""A thread's lineage, read from raw checkpoint tuples.

Rules:
- Only raw ``CheckpointTuple``s are read, never validated state snapshots: old values
  that no longer fit the current state schema must not stop a resume from planning.
- The lineage is the chain of ``parent_config`` pointers from the head, oldest first;
  the saver's history is a tree holding every branch, and forks are not ours to walk.
- Which nodes produced checkpoint C is derived from C and its parent P: nodes whose
  ``versions_seen`` moved (pull tasks) and the ``Send``s queued in P (push tasks).
  Channels C's step wrote are those whose version moved; which node wrote each is read
  from the task ids of P's pending writes (``_langgraph.task_writers``).
- Metadata is data from storage: a record whose metadata is not a mapping counts as
  unverified. What cannot be read at all is ``_unreadable``'s to report.
- What a head still owes (the nodes it waits to run, the turns a replay has not
  started) is read in ``_owed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Send, StateSnapshot

from neograph_ext.decision._claim import CONTROL, Claim, claims_of, unclaimed
from neograph_ext.decision._langgraph import TASKS_CHANNEL, task_writers
from neograph_ext.decision._stamp import (
    RUN_KEY,
    STAMP_KEY,
    Stamp,
    StampRef,
    Unreadable,
    input_digest,
    read_marks,
)
from neograph_ext.decision._typeforms import class_path

__all__ = [
    "HELD_CLASSES",
    "InnerHead",
    "NotNewestFirst",
    "Record",
    "inner_heads",
    "lineage",
    "references",
    "resolved",
    "triggered",
]

HELD_CLASSES = "neograph_ext_held"
"""Key of a light checkpoint (``_storage_rows``) holding, per channel whose value it left
undecoded, that value's class path: ``Record.held`` without reviving it."""
_NONE: frozenset[str] = frozenset()
_HELD: frozenset[tuple[str, str]] = frozenset()
_EMPTY: Mapping[str, Any] = {}


class Record(NamedTuple):
    """One checkpoint of the lineage, reduced to what planning needs.

    A NamedTuple, not a dataclass: a long thread builds thousands of them per plan.
    """

    checkpoint_id: str
    """The checkpoint's id."""
    parent_id: str | None
    """The id of the checkpoint it was written after, if any."""
    step: int
    """LangGraph's step counter (``-1`` for an input checkpoint)."""
    source: str
    """``input``, ``loop``, ``update`` or ``fork``."""
    stamp: Stamp | StampRef | Unreadable | None
    """The fingerprints it was written under (a reference until its description is
    looked up: ``resolved``); None when written without neograph-ext."""
    verified: str | None
    """Stamp id against which ``run()`` had verified this checkpoint's whole lineage."""
    ran: frozenset[str]
    """Nodes whose tasks ran in the step that produced this checkpoint."""
    wrote: frozenset[str]
    """State channels that step updated."""
    span: int
    """Steps between the parent and this checkpoint: more than 1 when intermediate
    checkpoints were never written (``durability="exit"``)."""
    pending_tasks: int
    """Tasks of this checkpoint's own step that finished without a checkpoint after them
    (only counted for the head), under its own code: before any claim (``claims``)."""
    next_nodes: frozenset[str]
    """Nodes this checkpoint is waiting to run (only filled for the head)."""
    writers: frozenset[tuple[str, str]] | None = None
    """``(channel, node)`` for each channel of ``wrote`` and the node whose task wrote
    it, read from the task ids of the parent's pending writes; None when they could not
    be matched to nodes, or when at most one node ran (then every node of ``ran``
    counts as a writer)."""
    pending_wrote: frozenset[str] | None = None
    """State channels the finished tasks of ``pending_tasks`` wrote (only read for the
    head); None when unknown: then any channel may hold their values."""
    nulled: frozenset[str] = frozenset()
    """The channels of ``wrote`` that hold None after the step: a node cleared them
    (what a stamp's ``clears`` names is then no value of the channel's type)."""
    input: str | None = None
    """For the input checkpoint of the lineage's latest turn: the digest
    (``_stamp.input_digest``) of the input it holds, which LangGraph saves there
    (``__start__``) however the turn was started; None for every other record."""
    took_from: str | None = None
    """When ``run`` wrote it taking the thread over from other code (``RunMark``): the
    first 16 hex digits of that code's stamp id."""
    carried: bool = False
    """``run`` wrote it to carry values converted to their current types (a migration,
    ``keep_compatible``: its run mark's decision is ``migrate``), not as an ``accept``
    or a kept step's fork, whose values are the thread's as they were."""
    claims: tuple[Claim, ...] = ()
    """For the head waiting on a question: the claims of the code that resumed it where
    it is (``_claim``), oldest first; ``pending_wrote`` then holds only what the tasks
    that finished before the first one wrote."""
    held: frozenset[tuple[str, str]] = frozenset()
    """``(channel, class path)`` for each channel of ``wrote`` whose value after the step
    is an instance of a class outside ``builtins``: which member of a union the step's
    writer wrote (``_changes.step_changes``); empty for a record spanning several steps."""


def lineage(
    tuples: Iterable[CheckpointTuple],
    head_id: str,
    *,
    next_nodes: frozenset[str] = frozenset(),
    described: Mapping[str, Stamp] | None = None,
    newest: str | None = None,
) -> tuple[Record, ...]:
    """Reduce a thread's checkpoints to the head's lineage, oldest first.

    Savers list a thread newest first, so each parent comes after its child and the
    walk keeps nothing but the lineage's records: on a long thread, holding every
    checkpoint until the end would cost more than reading them. Any order still works.

    Args:
        tuples: Every root-namespace checkpoint of the thread.
        head_id: The checkpoint to start from.
        next_nodes: The nodes the head is waiting to run.
        described: Stamp descriptions already at hand, by id: the records naming
            them get them at once rather than a reference (see ``resolved``).
        newest: The id of the checkpoint listed first, taken for the thread's newest
            (what ``get_tuple`` without a ``checkpoint_id`` returns), to be checked.

    Returns:
        The lineage, oldest first.

    Raises:
        KeyError: ``head_id`` is not a checkpoint of the thread.
        NotNewestFirst: A checkpoint newer than ``newest`` was listed after it.
    """
    newest_first: list[Record] = []
    stash: dict[str, CheckpointTuple] = {}
    walk = _Walk(next_nodes, described or {})
    # The child waiting for its parent, with its step and parent id read once.
    child: CheckpointTuple | None = None
    child_step, child_parent = -1, None
    wanted: str | None = head_id
    for tup in tuples:
        if wanted is None:  # the lineage is complete; the saver's cursor is still drained
            _listed_in_order(tup, newest)
            continue
        if tup.checkpoint["id"] != wanted:
            # A lineage's checkpoints are older than its head: only these can be newer.
            _listed_in_order(tup, newest)
            stash[tup.checkpoint["id"]] = tup
            continue
        found: CheckpointTuple | None = tup
        while found is not None:
            step = _step(found)
            if child is not None:
                head = not newest_first
                newest_first.append(walk.record(child, child_step, child_parent, found, step, head))
            child, child_step, child_parent = found, step, _parent_id(found)
            wanted = child_parent
            found = stash.pop(wanted, None) if wanted is not None else None
    if child is None:
        raise KeyError(head_id)
    newest_first.append(walk.record(child, child_step, child_parent, None, -1, not newest_first))
    newest_first.reverse()
    return tuple(newest_first)


def _listed_in_order(tup: CheckpointTuple, newest: str | None) -> None:
    if newest is not None and tup.checkpoint["id"] > newest:
        raise NotNewestFirst(newest)


_new_record = tuple.__new__


class NotNewestFirst(Exception):
    """The saver did not list the thread newest first (LangGraph's own savers all do):
    its head must be read on its own."""


def references(records: Iterable[Record], current: str) -> frozenset[str]:
    """The stamp ids whose descriptions planning ``records`` needs: all but ``current``."""
    # Records share their stamp objects: look at each distinct one once.
    stamps = [*{id(r.stamp): r.stamp for r in records}.values()]
    stamps += [claim.stamp for r in records for claim in r.claims]
    return frozenset(s.id for s in stamps if isinstance(s, StampRef) and s.id != current)


def resolved(records: Sequence[Record], found: Mapping[str, Stamp]) -> tuple[Record, ...]:
    """``records`` with each reference replaced by its description, where one was found."""
    if not found:
        return tuple(records)
    records = tuple(
        _with_stamp(r, found[r.stamp.id])
        if isinstance(r.stamp, StampRef) and r.stamp.id in found
        else r
        for r in records
    )
    if not records or not records[-1].claims:
        return records
    head = records[-1]
    claims = tuple(
        claim._replace(stamp=found[claim.stamp.id])
        if isinstance(claim.stamp, StampRef) and claim.stamp.id in found
        else claim
        for claim in head.claims
    )
    return (*records[:-1], head._replace(claims=claims))


def _with_stamp(r: Record, stamp: Stamp) -> Record:
    # Spelled out, not ``_replace``: a long thread resolves thousands of records.
    return Record(
        r.checkpoint_id,
        r.parent_id,
        r.step,
        r.source,
        stamp,
        r.verified,
        r.ran,
        r.wrote,
        r.span,
        r.pending_tasks,
        r.next_nodes,
        r.writers,
        r.pending_wrote,
        r.nulled,
        r.input,
        r.took_from,
        r.carried,
        r.claims,
        r.held,
    )


def _parent_id(tup: CheckpointTuple) -> str | None:
    if tup.parent_config is None:
        return None
    parent = tup.parent_config.get("configurable", {}).get("checkpoint_id")
    return parent if isinstance(parent, str) else None


class _Walk:
    """One lineage walk, and what it has already read: a thread repeats the same few
    stamps, run marks and sets of node and channel names thousands of times, so each is
    parsed once and every record shares one object (fewer objects for the garbage
    collector to walk, too)."""

    def __init__(self, next_nodes: frozenset[str], described: Mapping[str, Stamp]) -> None:
        self.next_nodes = next_nodes
        self.described = described
        self.marks: dict[
            tuple[str, str | None],
            tuple[Stamp | StampRef | Unreadable, str | None, str | None, bool],
        ] = {}
        self.names: dict[frozenset[str], frozenset[str]] = {}
        self.ran: dict[tuple[str, ...], frozenset[str]] = {}
        self.wrote: dict[tuple[str, ...], frozenset[str]] = {}
        self.paths: dict[type, str] = {}
        self.helds: dict[frozenset[tuple[str, str]], frozenset[tuple[str, str]]] = {}
        self.input_seen = False

    def marked(
        self, metadata: Mapping[str, Any]
    ) -> tuple[Stamp | StampRef | Unreadable | None, str | None, str | None, bool]:
        """The stamp a checkpoint's metadata names, the stamp id its run mark verified,
        the stamp its run took the thread over from, and whether the run carried
        converted values (``Record.carried``)."""
        raw, run = metadata.get(STAMP_KEY), metadata.get(RUN_KEY)
        key = (raw, run) if type(raw) is str and (run is None or type(run) is str) else None
        found = self.marks.get(key) if key is not None else None
        if found is not None:
            return found
        stamp, mark = read_marks(metadata)
        verified = mark.verified
        if not isinstance(stamp, StampRef | Unreadable):
            # A 0.1.0 stamp's marks live under other keys: read those every time.
            return stamp, verified, None, False
        carried = mark.decision == "migrate"  # ``PlanKind.MIGRATE``, as ``_migrate`` marks it
        marked = (self._described(stamp), verified, mark.took_from, carried)
        if key is not None:
            self.marks[key] = marked
        return marked

    def _described(self, stamp: StampRef | Unreadable) -> Stamp | StampRef | Unreadable:
        """The description of a referenced stamp, where it is at hand."""
        if isinstance(stamp, StampRef):
            return self.described.get(stamp.id, stamp)
        return stamp

    def ran_in(self, checkpoint: Mapping[str, Any], parent: Mapping[str, Any]) -> frozenset[str]:
        """The nodes that ran in the step that produced ``checkpoint`` from ``parent`` (an
        empty mapping for the first): those whose ``versions_seen`` moved, and the
        ``Send``s queued in the parent, without LangGraph's reserved names. Each set of
        names is filtered once per walk."""
        before = parent.get("versions_seen", _EMPTY).get
        seen: Mapping[str, Any] = checkpoint.get("versions_seen", _EMPTY)
        names: tuple[str, ...] = ()
        for name, versions in seen.items():  # a loop, not a comprehension: it is hot
            if before(name) != versions:
                names += (name,)
        queued = parent.get("channel_values", _EMPTY).get(TASKS_CHANNEL)
        if queued:
            names += tuple([send.node for send in queued if isinstance(send, Send)])
        found = self.ran.get(names)
        if found is None:
            found = self.ran[names] = self.shared(
                frozenset(name for name in names if not name.startswith("__"))
            )
        return found

    def wrote_in(self, checkpoint: Mapping[str, Any], parent: Mapping[str, Any]) -> frozenset[str]:
        """The state channels whose version moved from ``parent`` to ``checkpoint``,
        without LangGraph's own."""
        before = parent.get("channel_versions", _EMPTY).get
        versions: Mapping[str, Any] = checkpoint.get("channel_versions", _EMPTY)
        names: tuple[str, ...] = ()
        for name, version in versions.items():
            if before(name) != version:
                names += (name,)
        found = self.wrote.get(names)
        if found is None:
            found = self.wrote[names] = self.shared(
                frozenset(n for n in names if not n.startswith(("__", "branch:", "join:")))
            )
        return found

    def record(
        self,
        tup: CheckpointTuple,
        step: int,
        parent_id: str | None,
        parent: CheckpointTuple | None,
        parent_step: int,
        head: bool,
    ) -> Record:
        """The record of ``tup``, whose step and parent id the walk read already; ``head``:
        it is the head."""
        checkpoint = tup.checkpoint
        before = parent.checkpoint if parent is not None else _EMPTY
        metadata: Mapping[str, Any] = tup.metadata
        odd = type(metadata) is not dict  # savers return a dict; anything else is checked
        if odd:
            metadata = _metadata(tup)
        source = metadata.get("source", "")
        if type(source) is not str:
            source = str(source)
        stamp, verified, took_from, carried = self.marked(metadata)
        if odd and not isinstance(tup.metadata, Mapping | None):
            stamp = Unreadable(
                "format", f"metadata is a {type(tup.metadata).__name__}, not a mapping"
            )
        ran = self.ran_in(checkpoint, before)
        wrote = self.wrote_in(checkpoint, before)
        writes = tup.pending_writes if head else None
        # What a claimant's tasks finished is theirs to answer for (``_claim``).
        own = unclaimed(writes) if writes else ()
        # ``tuple.__new__``, not ``Record(...)`` (a Python-level constructor), and
        # positional: a long thread builds thousands of records per plan.
        return _new_record(
            Record,
            (
                checkpoint["id"],
                parent_id,
                step,
                source,
                stamp,
                verified,
                ran,
                wrote,
                step - parent_step if source != "input" else 0,
                len({task for task, _, _ in own}),
                self.next_nodes if head else _NONE,
                # Deriving task ids is most of a record's cost, and attribution only picks
                # among the nodes of a step: a step of one node wrote everything itself.
                _writers(tup, parent, parent_step) if len(ran) > 1 else None,
                frozenset(channel for _, channel, _ in own) if writes else _NONE,
                self.nulled_in(checkpoint, wrote),
                self.turn_input(checkpoint) if source == "input" else None,
                took_from,
                carried,
                self.claimed(writes) if writes else (),
                self.held_in(checkpoint, wrote) if step - parent_step == 1 else _HELD,
            ),
        )

    def claimed(self, writes: Sequence[tuple[str, str, Any]]) -> tuple[Claim, ...]:
        """The head's claims, their stamps described where at hand."""
        return tuple(
            claim._replace(stamp=self.described.get(claim.stamp.id, claim.stamp))
            for claim in claims_of(writes)
        )

    def nulled_in(self, checkpoint: Mapping[str, Any], wrote: frozenset[str]) -> frozenset[str]:
        """The channels of ``wrote`` whose value in ``checkpoint`` is None."""
        values: Mapping[str, Any] = checkpoint.get("channel_values", _EMPTY)
        names = frozenset([name for name in wrote if values.get(name, _EMPTY) is None])
        return self.shared(names) if names else _NONE

    def turn_input(self, checkpoint: Mapping[str, Any]) -> str | None:
        """The digest of the input the first input checkpoint walked holds: walking
        newest first, that of the latest turn. Serialised once per walk."""
        if self.input_seen:
            return None
        self.input_seen = True
        value = checkpoint.get("channel_values", _EMPTY).get("__start__")
        return input_digest(value) if value is not None else None

    def held_in(
        self, checkpoint: Mapping[str, Any], wrote: frozenset[str]
    ) -> frozenset[tuple[str, str]]:
        """``Record.held`` of a step that wrote ``wrote`` and produced ``checkpoint``."""
        light: Mapping[str, str] | None = checkpoint.get(HELD_CLASSES)
        values: Mapping[str, Any] = checkpoint.get("channel_values", _EMPTY)
        found: tuple[tuple[str, str], ...] = ()
        for name in wrote:
            if light is not None:
                path = light.get(name)
            elif (cls := type(values.get(name))).__module__ != "builtins":
                path = self.paths.get(cls)
                if path is None:
                    path = self.paths[cls] = class_path(cls)
            else:
                continue
            # LangGraph's own wrappers of stored values (a ``DeltaChannel``'s snapshot)
            # are no value of the channel's type, and a light read may not see them.
            if path is not None and not path.startswith("langgraph."):
                found += ((name, path),)
        if not found:
            return _HELD
        held = frozenset(found)
        return self.helds.setdefault(held, held)

    def shared(self, names: frozenset[str]) -> frozenset[str]:
        return self.names.setdefault(names, names)


def _writers(
    tup: CheckpointTuple, parent: CheckpointTuple | None, parent_step: int
) -> frozenset[tuple[str, str]] | None:
    """Who wrote what in the step that produced ``tup``: its tasks' writes stay filed
    under the parent checkpoint, by task id."""
    if parent is None:
        return None
    writes = [w for w in parent.pending_writes or () if w[1] not in CONTROL]
    seen: Mapping[str, Any] = tup.checkpoint.get("versions_seen", {})
    before: Mapping[str, Any] = parent.checkpoint.get("versions_seen", {})
    ran = sorted(name for name, versions in seen.items() if before.get(name) != versions)
    nodes = task_writers(parent.checkpoint, tup.checkpoint, parent_step, ran, writes)
    if nodes is None:
        return None
    return frozenset((channel, nodes[task]) for task, channel, _ in writes)


def _metadata(tup: CheckpointTuple) -> Mapping[str, Any]:
    """The metadata, or nothing when the saver returned something else (storage is data)."""
    metadata: object = tup.metadata
    if type(metadata) is dict:  # what savers return: skip the slower abstract check
        return metadata
    return metadata if isinstance(metadata, Mapping) else {}


def _step(tup: CheckpointTuple) -> int:
    return _step_in(_metadata(tup))


def _step_in(metadata: Mapping[str, Any]) -> int:
    step = metadata.get("step", -1)
    return step if isinstance(step, int) else -1


class InnerHead(NamedTuple):
    """Where an unfinished subgraph stands: its namespace's newest checkpoint."""

    path: tuple[str, ...]
    """The subgraph nodes from the root down."""
    namespace: str
    """Its ``checkpoint_ns``."""
    checkpoint_id: str
    """The newest checkpoint of that namespace."""
    next_nodes: frozenset[str]
    """The inner nodes it waits on."""
    tasks: int = 1
    """How many tasks of its node the enclosing checkpoint holds: a ``Send`` fan-out
    into a subgraph node makes one per send, each under a namespace of its own."""


def inner_heads(
    state: StateSnapshot, nodes: frozenset[str], path: tuple[str, ...] = ()
) -> tuple[InnerHead, ...]:
    """The unfinished subgraphs of ``nodes`` that ``state`` (read with ``subgraphs=True``)
    waits on, and those they wait on in turn, outermost first."""
    found: list[InnerHead] = []
    for task in state.tasks:
        inner = task.state
        if not isinstance(inner, StateSnapshot) or not (path or task.name in nodes):
            continue
        configurable = inner.config.get("configurable") or {}
        here = (*path, task.name)
        namespace, checkpoint_id = (
            configurable.get("checkpoint_ns"),
            configurable.get("checkpoint_id"),
        )
        if isinstance(namespace, str) and isinstance(checkpoint_id, str):
            tasks = sum(other.name == task.name for other in state.tasks)
            found.append(InnerHead(here, namespace, checkpoint_id, frozenset(inner.next), tasks))
            found += inner_heads(inner, nodes, here)
    return tuple(found)


def triggered(checkpoint: Mapping[str, Any]) -> frozenset[str]:
    """The nodes a checkpoint waits to run, by LangGraph's own rule for a graph built
    with ``StateGraph``: ``branch:to:<node>`` written since the node last saw it. For a
    namespace ``get_state`` does not read (a graph a tool calls)."""
    seen = checkpoint.get("versions_seen") or {}
    values = checkpoint.get("channel_values") or {}
    found = set()
    for channel, version in (checkpoint.get("channel_versions") or {}).items():
        node = channel.removeprefix("branch:to:")
        # A consumed trigger is emptied (its version moves on): it holds no value.
        fresh = version != (seen.get(node) or {}).get(channel)
        if node != channel and channel in values and fresh:
            found.add(node)
    return frozenset(found)
