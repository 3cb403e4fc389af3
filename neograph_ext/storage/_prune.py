"""What pruning removes from a thread: the decision, pure.

Rules:
- Pure: a thread's root-namespace checkpoints reduced to ``Stored`` records in, the ids
  that go out. No I/O, no LangGraph graph.
- The head's lineage (the head and its ancestors) always stays, and so does the lineage
  of every checkpoint a kept run mark names (the old head a replay of turns still reads).
- By default only what neograph-ext itself abandoned goes: at a checkpoint with several
  children, every child older than a fork neograph-ext wrote there (a rewind, a
  migration, an ``accept``), with everything after it. A branch the user forked by time
  travel stays unless ``all_branches``.
- ``keep_last`` cuts the head's lineage, never past what planning the head reads: its
  turn (from the latest input checkpoint) and, for each channel, the step that last
  wrote it and the checkpoint before (a rewind's target); for an accumulating channel
  (a reducer's, a ``DeltaChannel``), the step that first wrote it: its items are all
  still in the value, and a later deploy that changes their type must see who wrote
  each. An entrypoint's turn starts from the ``previous`` the turn before saved: the
  checkpoint that saved it stays too (planning compares the type it was saved under).
- Whatever is kept keeps every ancestor its reconstruction reads: a ``DeltaChannel``'s
  value is rebuilt from the pending writes of each ancestor up to the nearest one that
  stores the channel (LangGraph's ``get_delta_channel_history``), so those stay too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from neograph_ext.decision._langgraph_calls import PREVIOUS_CHANNEL
from neograph_ext.decision._stamp import REF_FORMAT
from neograph_ext.storage._stamp_order import ORDER_THREAD
from neograph_ext.storage._stamp_store import THREAD_PREFIX

__all__ = [
    "FORK_DECISIONS",
    "DescriptionPruned",
    "PruneReport",
    "PruneSkip",
    "Pruning",
    "Stored",
    "ThreadPruned",
    "doomed",
    "doomed_namespaces",
    "unreferenced",
]

FORK_DECISIONS = frozenset({"rewind", "migrate", "accept", "ask_again"})
"""Run-mark decisions under which neograph-ext forks a thread itself: a checkpoint
written under one of them, beside older siblings, abandoned those siblings."""


@dataclass(frozen=True)
class Stored:
    """One root-namespace checkpoint of a thread, as pruning sees it."""

    checkpoint_id: str
    """The checkpoint's id (LangGraph's ids sort by time)."""
    parent_id: str | None
    """The checkpoint it was written after; None for the thread's first."""
    source: str
    """LangGraph's ``source`` metadata: ``input``, ``loop``, ``update`` or ``fork``."""
    forked: bool
    """Written by neograph-ext under a decision of ``FORK_DECISIONS``."""
    wrote: frozenset[str] = frozenset()
    """The state channels the step that produced it wrote."""
    stores: frozenset[str] = frozenset()
    """The channels whose value it stores itself (``channel_values``): an ancestor walk
    rebuilding one of them stops here."""
    rebuilt: frozenset[str] = frozenset()
    """The channels whose value LangGraph rebuilds from its ancestors' writes (a
    ``DeltaChannel`` with no snapshot here)."""
    refers: str | None = None
    """A checkpoint its run mark names (the head whose turns a replay replays)."""


@dataclass(frozen=True)
class Pruning:
    """What to prune beyond what neograph-ext abandoned (see the module)."""

    all_branches: bool = False
    """Every branch off the head's lineage, the user's own time-travel forks too."""
    keep_last: int | None = None
    """Keep this many checkpoints of the head's lineage, and older ones only where
    planning or reconstruction reads them; None keeps the whole lineage."""

    def __post_init__(self) -> None:
        if self.keep_last is not None and (
            isinstance(self.keep_last, bool) or not isinstance(self.keep_last, int)
        ):
            raise TypeError(f"keep_last must be an int or None, not {self.keep_last!r}")
        if self.keep_last is not None and self.keep_last < 1:
            raise ValueError(
                f"keep_last must be 1 or more (the head always stays), not {self.keep_last}"
            )


class PruneSkip(StrEnum):
    """Why a thread was left alone."""

    BUSY = "busy"
    """A run holds its lock."""
    WAITING = "waiting"
    """Its head waits at an interrupt, with the question in its pending writes."""


@dataclass(frozen=True)
class ThreadPruned:
    """What pruning removes (or removed) from one thread."""

    thread_id: str
    """The thread."""
    checkpoints: tuple[str, ...] = ()
    """The ids of the root-namespace checkpoints that go, sorted."""
    namespaces: tuple[str, ...] = ()
    """The subgraph namespaces that go whole, sorted: those of tasks scheduled at a
    checkpoint that goes, or whose results only went into checkpoints that go."""
    subgraph_checkpoints: int = 0
    """The checkpoints of ``namespaces``."""
    writes: int = 0
    """The pending writes filed under them."""
    blobs: int = 0
    """The stored channel values only they named (PostgreSQL keeps values apart)."""
    bytes: int = 0
    """Bytes of what goes: checkpoints, metadata, writes and values."""
    skipped: PruneSkip | None = None
    """Why nothing was looked at or removed; None when the thread was pruned."""


@dataclass(frozen=True)
class DescriptionPruned:
    """A stamp description no remaining checkpoint names, which pruning removes."""

    thread_id: str
    """Its reserved thread (``neograph-ext-stamp:<stamp id>``)."""
    stamp_id: str
    """The stamp it describes."""
    bytes: int
    """Bytes it holds."""


@dataclass(frozen=True)
class PruneReport:
    """What ``prune`` found, and removed when ``applied``."""

    threads: tuple[ThreadPruned, ...]
    """Every graph thread looked at, sorted by id, pruned or skipped."""
    descriptions: tuple[DescriptionPruned, ...]
    """The stamp descriptions that go."""
    applied: bool
    """Whether it was deleted (``apply``); False for a dry run."""
    vacuumed: tuple[int, int] | None = None
    """For ``VACUUM`` on SQLite: the file's size in bytes before and after."""

    @property
    def checkpoints(self) -> int:
        """Checkpoints that go, over every thread."""
        return sum(len(t.checkpoints) for t in self.threads)

    @property
    def subgraph_checkpoints(self) -> int:
        """Subgraph checkpoints that go, over every thread."""
        return sum(t.subgraph_checkpoints for t in self.threads)

    @property
    def writes(self) -> int:
        """Pending writes that go, over every thread."""
        return sum(t.writes for t in self.threads)

    @property
    def bytes(self) -> int:
        """Bytes that go: every thread's and the descriptions'."""
        return sum(t.bytes for t in self.threads) + sum(d.bytes for d in self.descriptions)

    @property
    def skipped(self) -> tuple[ThreadPruned, ...]:
        """The threads left alone, with why."""
        return tuple(t for t in self.threads if t.skipped is not None)


def unreferenced(stored: Mapping[str, int], named: Iterable[str]) -> tuple[DescriptionPruned, ...]:
    """The descriptions, of those ``stored`` (thread id to bytes), whose stamp no
    reference in ``named`` (``STAMP_KEY`` values of what stays) names."""
    names = set(named)
    gone = []
    # The order thread shares the prefix but describes no stamp: it says which code is
    # newer, and losing it would let old workers undo new work again.
    for thread_id in sorted(set(stored) - {ORDER_THREAD}):
        stamp_id = thread_id.removeprefix(THREAD_PREFIX)
        if f"{REF_FORMAT}:{stamp_id}" not in names:
            gone.append(DescriptionPruned(thread_id, stamp_id, stored[thread_id]))
    return tuple(gone)


def doomed(
    stored: Sequence[Stored],
    head_id: str,
    options: Pruning,
    accumulates: frozenset[str] = frozenset(),
) -> frozenset[str]:
    """The ids of the checkpoints of one thread that pruning removes.

    Args:
        stored: Every root-namespace checkpoint of the thread.
        head_id: The thread's head (its newest checkpoint).
        options: What to prune beyond what neograph-ext abandoned.
        accumulates: The graph's accumulating channels: each keeps every item written.

    Returns:
        The checkpoints that go; every other one stays, and reads as before.
    """
    by_id = {s.checkpoint_id: s for s in stored}
    if head_id not in by_id:
        return frozenset()
    line = _lineage(by_id, head_id)
    replayed: set[str] = set()
    for checkpoint in line:
        root = by_id[checkpoint].refers
        if root is not None and root in by_id:
            replayed.update(_lineage(by_id, root))
    going = _branches(stored, set(line) | replayed, options.all_branches)
    if options.keep_last is not None:
        going |= set(_older(by_id, line, options.keep_last, accumulates)) - replayed
    return frozenset(going - _needed(by_id, going))


def doomed_namespaces(
    stored: Sequence[Stored], going: frozenset[str], roots: Mapping[str, frozenset[str] | None]
) -> frozenset[str]:
    """The subgraph namespaces of one thread that go with the root checkpoints ``going``.

    A subgraph's checkpoints name the root checkpoint whose task ran it (LangGraph's
    ``parents[""]``). Its namespace goes when each root it names goes, or had its tasks'
    results written only into checkpoints that go (its ``loop`` children): a fork
    re-runs a task under a new id, in a namespace of its own.

    Args:
        stored: Every root-namespace checkpoint of the thread.
        going: What ``doomed`` decided.
        roots: Per subgraph namespace, the root checkpoints its checkpoints name; None
            when one of them names none (it then stays).
    """
    results: dict[str, list[str]] = {}
    for s in stored:
        if s.parent_id is not None and s.source == "loop":
            results.setdefault(s.parent_id, []).append(s.checkpoint_id)

    def gone(root: str) -> bool:
        children = results.get(root)
        return root in going or (bool(children) and all(c in going for c in children or ()))

    return frozenset(
        namespace
        for namespace, named in roots.items()
        if named and all(gone(root) for root in named)
    )


def _lineage(by_id: Mapping[str, Stored], head_id: str) -> list[str]:
    """``head_id`` and its stored ancestors, newest first."""
    line: list[str] = []
    seen: set[str] = set()  # a parent pointer loop in damaged storage ends the walk
    at: str | None = head_id
    while at is not None and at in by_id and at not in seen:
        line.append(at)
        seen.add(at)
        at = by_id[at].parent_id
    return line


def _branches(stored: Sequence[Stored], protected: set[str], every: bool) -> set[str]:
    """The checkpoints off the protected lineages that go: all of them (``every``), or
    those in branches a newer neograph-ext fork beside them abandoned."""
    children: dict[str | None, list[Stored]] = {}
    for s in stored:
        children.setdefault(s.parent_id, []).append(s)
    going: set[str] = set()
    for siblings in children.values():
        newest_fork = max((s.checkpoint_id for s in siblings if s.forked), default=None)
        for s in siblings:
            if s.checkpoint_id in protected:
                continue
            if every or (newest_fork is not None and s.checkpoint_id < newest_fork):
                going.update(_subtree(children, s))
    return going


def _subtree(children: Mapping[str | None, list[Stored]], root: Stored) -> Iterable[str]:
    todo = [root]
    while todo:
        node = todo.pop()
        yield node.checkpoint_id
        todo.extend(children.get(node.checkpoint_id, ()))


def _older(
    by_id: Mapping[str, Stored], line: list[str], keep: int, accumulates: frozenset[str]
) -> list[str]:
    """The lineage's checkpoints (newest first in ``line``) older than the ``keep``
    newest, the turn of the head (with the checkpoint that saved the ``previous`` an
    entrypoint's turn starts from), and the last writer of each channel with its parent
    (of an accumulating channel, the first)."""
    oldest_first = line[::-1]
    cut = len(oldest_first) - keep
    inputs = [i for i, c in enumerate(oldest_first) if by_id[c].source == "input"]
    if inputs:
        started = by_id[oldest_first[inputs[-1]]]
        cut = min(cut, inputs[-1] - (PREVIOUS_CHANNEL in started.stores))
    kept_writer: dict[str, int] = {}
    for i, c in enumerate(oldest_first):
        for channel in by_id[c].wrote:
            if channel not in accumulates or channel not in kept_writer:
                kept_writer[channel] = i
    if kept_writer:
        cut = min(cut, min(kept_writer.values()) - 1)
    return oldest_first[: max(cut, 0)]


def _needed(by_id: Mapping[str, Stored], going: set[str]) -> set[str]:
    """The checkpoints of ``going`` that a kept checkpoint's reconstruction reads, to a
    fixed point: one kept for a reconstruction is kept, and its own needs with it."""
    needed: set[str] = set()
    walked: set[tuple[str, str]] = set()  # (checkpoint, channel): walked up from there
    todo = [s for s in by_id.values() if s.checkpoint_id not in going]
    while todo:
        kept = todo.pop()
        for channel in kept.rebuilt:
            at = kept.parent_id
            while at is not None and at in by_id and (at, channel) not in walked:
                walked.add((at, channel))
                ancestor = by_id[at]
                if at in going and at not in needed:
                    needed.add(at)
                    todo.append(ancestor)
                if channel in ancestor.stores:
                    break
                at = ancestor.parent_id
    return needed
