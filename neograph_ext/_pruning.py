"""``prune`` and ``aprune``: remove what forks left behind, thread by thread.

Rules:
- Dry run unless ``apply``: the report names what would go, and ``apply`` removes
  exactly that (what ``_prune.doomed`` decides, read again under the lock).
- A thread is pruned under its lock, taken without waiting (``on_busy="raise"``): a
  thread a run holds is skipped and reported ``busy``; a thread waiting at an
  interrupt's pending writes is skipped and reported ``waiting``.
- Each thread's rows go in one transaction (``_prune_sql``), so a kill leaves every
  thread whole or pruned, readable either way; description threads go last, each only
  while no checkpoint names its stamp.
- Reads go through the saver's public ``list``; only deleting and sizing is SQL.
- Sync and async twins differ by ``await`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.pregel import Pregel

from neograph_ext.decision._errors import GraphError, ThreadBusyError
from neograph_ext.decision._head_state import has_interrupt
from neograph_ext.decision._langgraph import COUNTERS_KEY, delta_channels
from neograph_ext.decision._stamp import STAMP_KEY, read_marks, stamp_ref
from neograph_ext.drivers._thread import checkpointer_of, stamped
from neograph_ext.storage._lock import athread_lock, thread_lock
from neograph_ext.storage._prune import (
    FORK_DECISIONS,
    DescriptionPruned,
    PruneReport,
    PruneSkip,
    Pruning,
    Stored,
    ThreadPruned,
    doomed,
    doomed_namespaces,
    unreferenced,
)
from neograph_ext.storage._prune_sql import Cut, Sizes
from neograph_ext.storage._prune_store import (
    acut,
    adescriptions,
    areferences,
    asizes,
    athreads,
    avacuum,
    cut,
    descriptions,
    references,
    sizes,
    threads,
    vacuum,
    vacuumable,
)
from neograph_ext.storage._stamp_store import is_store_thread
from neograph_ext.storage._storage import backend

__all__ = ["Saver", "aprune", "prune"]

Saver = BaseCheckpointSaver[Any]


def prune(
    graph: Pregel[Any, Any, Any, Any],
    *,
    apply: bool = False,
    all_branches: bool = False,
    keep_last: int | None = None,
    thread_ids: Sequence[str] | None = None,
    vacuum_after: bool = False,
) -> PruneReport:
    """What the graph's database holds that no thread reads any more, and (``apply``)
    remove it.

    By default what goes is what neograph-ext itself abandoned: the branches a rewind,
    a migration or an ``accept`` forked away from (and everything after them), and the
    stamp descriptions no remaining checkpoint names. The head's lineage stays, and so
    does every ancestor a kept ``DeltaChannel`` value is rebuilt from.

    Args:
        graph: A graph made by ``neograph_ext.compile`` with a SQLite or PostgreSQL
            checkpointer; its stamp's description always stays.
        apply: Delete; without it nothing is written (a dry run).
        all_branches: Also every branch off the head's lineage a user forked.
        keep_last: Also the head's lineage older than this many checkpoints, except
            what planning the head or rebuilding a kept value reads.
        thread_ids: Only these threads (descriptions are then left alone).
        vacuum_after: With ``apply`` on SQLite, ``VACUUM`` the file afterwards (it
            needs a moment without writers).

    Returns:
        Per thread what goes (or went), and why a thread was skipped; in total.

    Raises:
        GraphError: The graph was not compiled by neograph-ext, or its saver is not
            LangGraph's SQLite or PostgreSQL saver; ``vacuum_after`` without ``apply``
            or on another saver than SQLite's sync one (refused before anything goes).
        ValueError: ``keep_last`` is below 1.
    """
    saver, options, rebuildable = _setup(graph, all_branches, keep_last, apply, vacuum_after)
    names = _names(threads(saver), thread_ids)
    done = [_thread(saver, name, options, rebuildable, apply) for name in names]
    gone: tuple[DescriptionPruned, ...] = ()
    if thread_ids is None:
        gone = _descriptions(graph, descriptions(saver), references(saver), done)
        if apply and gone:
            cut(saver, None, [d.thread_id for d in gone])
    vacuumed = vacuum(saver) if apply and vacuum_after else None
    return PruneReport(tuple(d for d, _ in done), gone, apply, vacuumed)


async def aprune(
    graph: Pregel[Any, Any, Any, Any],
    *,
    apply: bool = False,
    all_branches: bool = False,
    keep_last: int | None = None,
    thread_ids: Sequence[str] | None = None,
    vacuum_after: bool = False,
) -> PruneReport:
    """Async twin of ``prune``, for the async savers."""
    saver, options, rebuildable = _setup(graph, all_branches, keep_last, apply, vacuum_after)
    names = _names(await athreads(saver), thread_ids)
    done = [await _athread(saver, name, options, rebuildable, apply) for name in names]
    gone: tuple[DescriptionPruned, ...] = ()
    if thread_ids is None:
        gone = _descriptions(graph, await adescriptions(saver), await areferences(saver), done)
        if apply and gone:
            await acut(saver, None, [d.thread_id for d in gone])
    vacuumed = await avacuum(saver) if apply and vacuum_after else None
    return PruneReport(tuple(d for d, _ in done), gone, apply, vacuumed)


_Done = tuple[ThreadPruned, frozenset[str]]
"""A thread's outcome, and the stamp references its kept checkpoints hold."""


def _thread(
    saver: Saver, thread_id: str, options: Pruning, rebuildable: frozenset[str], apply: bool
) -> _Done:
    try:
        with thread_lock(saver, thread_id, on_busy="raise"):
            tuples = list(saver.list(_config(thread_id)))
            found, kept, skipped = _decided(saver, thread_id, tuples, options, rebuildable)
            size = sizes(saver, found) if found is not None else Sizes()
            if apply and found is not None:
                cut(saver, found)
    except ThreadBusyError:
        return ThreadPruned(thread_id, skipped=PruneSkip.BUSY), frozenset()
    return _pruned(thread_id, found, size, skipped), kept


async def _athread(
    saver: Saver, thread_id: str, options: Pruning, rebuildable: frozenset[str], apply: bool
) -> _Done:
    try:
        async with athread_lock(saver, thread_id, on_busy="raise"):
            tuples = [tup async for tup in saver.alist(_config(thread_id))]
            found, kept, skipped = _decided(saver, thread_id, tuples, options, rebuildable)
            size = await asizes(saver, found) if found is not None else Sizes()
            if apply and found is not None:
                await acut(saver, found)
    except ThreadBusyError:
        return ThreadPruned(thread_id, skipped=PruneSkip.BUSY), frozenset()
    return _pruned(thread_id, found, size, skipped), kept


def _setup(
    graph: Pregel[Any, Any, Any, Any],
    all_branches: bool,
    keep_last: int | None,
    apply: bool,
    vacuum_after: bool,
) -> tuple[Saver, Pruning, frozenset[str]]:
    """The saver, the options and the channels LangGraph rebuilds from ancestors; every
    option is refused here, before anything is deleted."""
    checked = stamped(graph)
    saver = checkpointer_of(checked)
    backend(saver)
    if vacuum_after:
        if not apply:
            raise GraphError("vacuum_after needs apply=True: a dry run deletes nothing")
        vacuumable(saver)
    options = Pruning(all_branches=all_branches, keep_last=keep_last)
    # LangGraph rebuilds these from ancestors' writes when a checkpoint stores no value
    # of theirs: a DeltaChannel, and a reducer channel once written as one.
    rebuildable = set(delta_channels(checked))
    rebuildable.update(
        name for name, ch in checked.channels.items() if isinstance(ch, BinaryOperatorAggregate)
    )
    return saver, options, frozenset(rebuildable)


def _names(found: Sequence[str], asked: Sequence[str] | None) -> list[str]:
    graphs = sorted(name for name in set(found) if not is_store_thread(name))
    if asked is None:
        return graphs
    wanted = set(asked)
    return [name for name in graphs if name in wanted]


def _config(thread_id: str) -> RunnableConfig:
    """Every namespace of the thread: its subgraphs' checkpoints too."""
    return {"configurable": {"thread_id": thread_id}}


def _decided(
    saver: Saver,
    thread_id: str,
    listed: Sequence[CheckpointTuple],
    options: Pruning,
    rebuildable: frozenset[str],
) -> tuple[Cut | None, frozenset[str], PruneSkip | None]:
    """What goes from one thread (None: nothing), the stamp references of what stays,
    and why the thread is skipped, if it is."""
    tuples = [t for t in listed if not t.config["configurable"].get("checkpoint_ns")]
    if not tuples:
        return None, frozenset(), None
    head = max(tuples, key=lambda tup: tup.checkpoint["id"])
    if has_interrupt(head):
        return None, _refs(listed, frozenset(), ()), PruneSkip.WAITING
    by_id = {tup.checkpoint["id"]: tup for tup in tuples}
    stored = [_stored(tup, by_id, rebuildable) for tup in tuples]
    # The channels LangGraph rebuilds are those that accumulate (every write stays in
    # the value), with the DeltaChannels the checkpoints' metadata names.
    accumulates = rebuildable.union(*(_counted(tup) for tup in tuples))
    going = doomed(stored, head.checkpoint["id"], options, accumulates)
    namespaces = sorted(doomed_namespaces(stored, going, _roots(listed)))
    kept = _refs(listed, going, namespaces)
    if not going and not namespaces:
        return None, kept, None
    versions = _versions(t for t in tuples if t.checkpoint["id"] not in going)
    blobs = _versions(t for t in tuples if t.checkpoint["id"] in going) - versions
    found = Cut(
        backend(saver),
        thread_id,
        tuple(sorted(going)),
        tuple(sorted(blobs)),
        tuple(namespaces),
    )
    return found, kept, None


def _roots(listed: Sequence[CheckpointTuple]) -> dict[str, frozenset[str] | None]:
    """Per subgraph namespace, the root checkpoints its checkpoints name (LangGraph's
    ``parents[""]``); None when one names none."""
    roots: dict[str, frozenset[str] | None] = {}
    for tup in listed:
        namespace = tup.config["configurable"].get("checkpoint_ns")
        if not namespace:
            continue
        metadata = tup.metadata if isinstance(tup.metadata, Mapping) else {}
        parents = metadata.get("parents")
        root = parents.get("") if isinstance(parents, Mapping) else None
        known = roots.get(namespace, frozenset())
        roots[namespace] = known | {root} if isinstance(root, str) and known is not None else None
    return roots


def _refs(
    listed: Sequence[CheckpointTuple], going: frozenset[str], namespaces: Sequence[str]
) -> frozenset[str]:
    """The stamp references of the checkpoints that stay, in every namespace."""
    gone = set(namespaces)
    return frozenset(
        ref
        for tup in listed
        if (namespace := tup.config["configurable"].get("checkpoint_ns") or "") not in gone
        and not (namespace == "" and tup.checkpoint["id"] in going)
        and (ref := _ref(tup))
    )


def _ref(tup: CheckpointTuple) -> str | None:
    metadata = tup.metadata if isinstance(tup.metadata, Mapping) else {}
    ref = metadata.get(STAMP_KEY)
    return ref if isinstance(ref, str) and len(ref) < 100 else None


def _versions(tuples: Any) -> set[tuple[str, str]]:
    return {
        (channel, str(version))
        for tup in tuples
        for channel, version in tup.checkpoint.get("channel_versions", {}).items()
    }


def _stored(
    tup: CheckpointTuple, by_id: Mapping[str, CheckpointTuple], rebuildable: frozenset[str]
) -> Stored:
    metadata: Mapping[str, Any] = tup.metadata if isinstance(tup.metadata, Mapping) else {}
    _, mark = read_marks(metadata)
    checkpoint = tup.checkpoint
    values = checkpoint.get("channel_values", {})
    versions = checkpoint.get("channel_versions", {})
    parent_id = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    parent = by_id.get(parent_id) if isinstance(parent_id, str) else None
    before = parent.checkpoint.get("channel_versions", {}) if parent is not None else {}
    delta = rebuildable | _counted(tup)
    return Stored(
        checkpoint_id=checkpoint["id"],
        parent_id=parent_id if isinstance(parent_id, str) else None,
        source=str(metadata.get("source", "")),
        forked=mark.decision in FORK_DECISIONS,
        wrote=frozenset(
            name
            for name, version in versions.items()
            if before.get(name) != version and not name.startswith(("__", "branch:", "join:"))
        ),
        stores=frozenset(values),
        rebuilt=frozenset(name for name in delta if name in versions and name not in values),
        refers=mark.replaying,
    )


def _counted(tup: CheckpointTuple) -> frozenset[str]:
    """The DeltaChannels a checkpoint's metadata names (LangGraph's update counters)."""
    metadata = tup.metadata if isinstance(tup.metadata, Mapping) else {}
    counted = metadata.get(COUNTERS_KEY)
    return frozenset(counted) if isinstance(counted, Mapping) else frozenset()


def _pruned(
    thread_id: str, found: Cut | None, size: Sizes, skipped: PruneSkip | None
) -> ThreadPruned:
    return ThreadPruned(
        thread_id,
        checkpoints=found.checkpoints if found is not None else (),
        namespaces=found.namespaces if found is not None else (),
        subgraph_checkpoints=size.subgraphs,
        writes=size.writes,
        blobs=size.blobs,
        bytes=size.bytes,
        skipped=skipped,
    )


def _descriptions(
    graph: Pregel[Any, Any, Any, Any],
    stored: Mapping[str, Sizes],
    refs: Sequence[tuple[str, str]],
    done: Sequence[_Done],
) -> tuple[DescriptionPruned, ...]:
    """The description threads no checkpoint that stays names: the threads read here
    (every namespace) say what of theirs stays; for the others (busy ones), every stamp
    their checkpoints name counts."""
    read = {pruned.thread_id for pruned, _ in done if pruned.skipped is not PruneSkip.BUSY}
    named = {
        ref
        for thread, ref in refs
        if thread not in read and not is_store_thread(thread)  # a description names itself
    }
    for _, kept in done:
        named |= kept
    named.add(stamp_ref(stamped(graph).neograph_ext_stamp))
    return unreferenced({name: size.bytes for name, size in stored.items()}, named)
