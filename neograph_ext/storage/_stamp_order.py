"""The order in which a database first stored each stamp: which code is newer.

During a rolling deploy, workers of the old and the new code serve the same threads. To
tell which code is newer without trusting any worker's clock, each database keeps the
stamps it has stored, in the order it first stored them: the code that first wrote to
the database later is the newer one (``_ownership`` decides with it).

Rules:
- The order is one reserved thread beside the stamp descriptions (``ORDER_THREAD``),
  written and read through the saver's public ``put`` / ``list``, so every saver keeps
  it. Its checkpoint ids are ``<position, 8 hex>-0000-6000-8000-<stamp id, 12 hex>``:
  the position is one more than the highest listed when the stamp was added, so the
  order is the database's own, the same for every worker.
- A stamp takes its place when its description is stored, once per process and saver
  (``_graph.StampedGraph.neograph_ext_save``): at the end of the order, or, listed
  already, at its place again (the same checkpoint id and stamp, as a description is
  written again), so a process makes the same writes whatever the database holds.
  Two stamps added at once share a position and are ordered by their ids; the same
  stamp added twice at once writes the same checkpoint twice. No place is ever moved
  or deleted.
- A stamp not listed has never been stored through a graph that writes here: it counts
  as newer than every stamp listed (code about to be deployed) when it is the current
  code's, and as older than all of them otherwise (code of before the order was kept).
- The order a process read is kept per saver (``_KNOWN``): a stamp's place never
  changes once listed, and a stamp listed later is newer than every one kept. It is
  listed again only when the stamp asked about is not in it and the order's newest
  checkpoint (one indexed read) is not the one it ended with: so a thread written by
  code that never took a place (a version of neograph-ext before the order) costs one
  read, not a listing. A stamp added at the very moment another took the same
  position, with a lower id, is seen once a later stamp is added.
- A saver that cannot list (``list`` left unimplemented) keeps no order: a plain call
  on it works as under LangGraph's own compile.
- A release declared at compile (``RELEASE_ENV``) is kept with the stamp's place, the
  latest declared for a stamp replacing the one before. Stamps that declare one are
  ordered among themselves by release, compared in natural order (runs of digits as
  numbers: ``1.10`` after ``1.9``), ties by the database's order; they keep the places
  the database gave the set of them, so the other stamps keep theirs.
- The running code's declared release is compared at plan time (``order``'s
  ``declared``), in place of what the database kept for its stamp (none, when the same
  code ran undeclared before, as a CI suite's earlier test may) and, for a stamp not
  listed, at the end of the order, where its first write will put it: a plan reads the
  order as it stands once this code has written.
- Only this module knows the layout; sync and async twins differ by ``await`` alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    empty_checkpoint,
)

from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._records import OrderEntry, read_order_entry, read_release
from neograph_ext.decision._stamp import Stamp
from neograph_ext.storage._stamp_store import THREAD_PREFIX

__all__ = [
    "ORDER_THREAD",
    "RELEASE_ENV",
    "Declared",
    "aorder",
    "aregister",
    "declared_release",
    "order",
    "register",
]

ORDER_THREAD = THREAD_PREFIX + "order"
"""The thread holding the order (reserved like every description's thread)."""

_CHANNEL = "stamp"

RELEASE_ENV = "NEOGRAPH_EXT_RELEASE"
"""The environment variable a deploy declares its release in, read at compile."""

_Places = dict[str, str | None]
"""Each stamp id the order lists, in the database's order, with the release kept for it."""

Declared = tuple[str, str] | None
"""The running code's stamp id and the release it declares, if it declares one."""


@dataclass(frozen=True, slots=True)
class _Listed:
    """The order as this process last listed it from one saver."""

    places: _Places
    newest: str | None
    """The id of the order's newest checkpoint then."""
    ranked: dict[Declared, tuple[str, ...]] = field(default_factory=dict)
    """Per running code's ``Declared``, the order ranked with it: sorting releases costs
    milliseconds with a thousand stamps, once per listing rather than once per plan."""

    def rank(self, declared: Declared) -> tuple[str, ...]:
        found = self.ranked.get(declared)
        if found is None:
            found = self.ranked[declared] = _ranked(self.places, declared)
        return found


_KNOWN: weakref.WeakKeyDictionary[BaseCheckpointSaver[Any], _Listed] = weakref.WeakKeyDictionary()
"""Per saver, the order as this process last listed it."""


def order(
    saver: BaseCheckpointSaver[Any], wanted: str, declared: Declared = None
) -> tuple[str, ...]:
    """The stamp ids ``saver`` holds, oldest first (each once, at its first position);
    listed again only if the order kept lacks ``wanted`` and has grown since.
    ``declared``: the running code's stamp id and release, ranked with that release."""
    known = _KNOWN.get(saver) or _Listed({}, None)
    newest = known.newest
    if not (
        wanted in known.places or (newest is not None and newest == _id(saver.get_tuple(_thread())))
    ):
        known = _kept(saver, list(saver.list(_thread())))
    return known.rank(declared)


async def aorder(
    saver: BaseCheckpointSaver[Any], wanted: str, declared: Declared = None
) -> tuple[str, ...]:
    """Async twin of ``order``."""
    known = _KNOWN.get(saver) or _Listed({}, None)
    newest = known.newest
    if not (
        wanted in known.places
        or (newest is not None and newest == _id(await saver.aget_tuple(_thread())))
    ):
        known = _kept(saver, [tup async for tup in saver.alist(_thread())])
    return known.rank(declared)


def declared_release() -> str | None:
    """The release the environment declares (``RELEASE_ENV``), if any.

    Raises:
        GraphError: It is set to something other than 1 to 100 printable characters.
    """
    raw = os.environ.get(RELEASE_ENV)
    if not raw:
        return None
    release = read_release(raw)
    if release is None:
        raise GraphError(
            f"{RELEASE_ENV}={raw[:120]!r} is no release: declare 1 to 100 printable ASCII "
            "characters without spaces (a version such as 1.4.2, or a build number), or "
            "unset it to order code by the database's order"
        )
    return release


def register(saver: BaseCheckpointSaver[Any], stamp: Stamp, release: str | None = None) -> None:
    """Write ``stamp``'s place in ``saver``'s order: at the end, or where it is listed,
    with ``release`` (else the one already kept there)."""
    try:
        listed = list(saver.list(_thread()))
    except NotImplementedError:
        return  # a saver that cannot list keeps no order (nor can it plan a lineage)
    saver.put(*_write(saver, stamp, *_place(listed, stamp, release)))
    _kept(saver, list(saver.list(_thread())))


async def aregister(
    saver: BaseCheckpointSaver[Any], stamp: Stamp, release: str | None = None
) -> None:
    """Async twin of ``register``."""
    try:
        listed = [tup async for tup in saver.alist(_thread())]
    except NotImplementedError:
        return
    await saver.aput(*_write(saver, stamp, *_place(listed, stamp, release)))
    _kept(saver, [tup async for tup in saver.alist(_thread())])


def _kept(saver: BaseCheckpointSaver[Any], listed: list[CheckpointTuple]) -> _Listed:
    found = _Listed(_places(listed), max((tup.checkpoint["id"] for tup in listed), default=None))
    # A saver that cannot be weakly referenced is listed every time.
    with contextlib.suppress(TypeError):
        _KNOWN[saver] = found
    return found


def _id(tup: CheckpointTuple | None) -> str | None:
    return tup.checkpoint["id"] if tup is not None else None


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": ORDER_THREAD, "checkpoint_ns": ""}}


def _entries(tuples: Iterable[CheckpointTuple]) -> list[tuple[int, OrderEntry]]:
    """``(position, entry)`` per checkpoint of the order that reads as one (``_records``)."""
    found = []
    for tup in tuples:
        position = _position(tup.checkpoint.get("id"))
        entry = read_order_entry(tup.checkpoint.get("channel_values"))
        if position is not None and entry is not None:
            found.append((position, entry))
    return found


def _places(tuples: Iterable[CheckpointTuple]) -> _Places:
    first: _Places = {}
    for _, entry in sorted(_entries(tuples), key=lambda found: (found[0], found[1].stamp)):
        first.setdefault(entry.stamp, entry.release)
    return first


def _ranked(known: _Places, declared: Declared) -> tuple[str, ...]:
    """The stamp ids of ``known``, the ones with a release sorted by it among the places
    the set of them holds; ``declared`` (a stamp id and release) ranked with that release,
    at its place or, not listed, at the end."""
    first = known if declared is None else {**known, declared[0]: declared[1]}
    ids = list(first)
    places = [index for index, stamp_id in enumerate(ids) if first[stamp_id] is not None]
    by_release = sorted((ids[index] for index in places), key=lambda s: _natural(first[s]))
    for index, stamp_id in zip(places, by_release, strict=True):
        ids[index] = stamp_id
    return tuple(ids)


def _natural(release: str | None) -> tuple[tuple[int, int, str], ...]:
    """A release's sort key: runs of digits compare as numbers, the rest as text."""
    runs = re.findall(r"\d+|\D+", release or "")
    return tuple((0, int(run), "") if run.isdigit() else (1, 0, run) for run in runs)


def _place(
    listed: Iterable[CheckpointTuple], stamp: Stamp, release: str | None
) -> tuple[int, str | None]:
    """Where ``stamp`` is listed first, else one past the highest position; and the
    release to keep there: ``release``, else the one kept."""
    entries = _entries(listed)
    mine = sorted(
        (position, entry.release) for position, entry in entries if entry.stamp == stamp.id
    )
    if mine:
        return mine[0][0], release if release is not None else mine[0][1]
    return max((position for position, _ in entries), default=-1) + 1, release


def _position(checkpoint_id: object) -> int | None:
    if not isinstance(checkpoint_id, str) or len(checkpoint_id) != 36:
        return None
    try:
        return int(checkpoint_id[:8], 16)
    except ValueError:
        return None


def _write(
    saver: BaseCheckpointSaver[Any], stamp: Stamp, position: int, release: str | None
) -> tuple[RunnableConfig, Checkpoint, CheckpointMetadata, dict[str, Any]]:
    version = saver.get_next_version(None, None)
    checkpoint = empty_checkpoint()
    checkpoint["id"] = f"{position:08x}-0000-6000-8000-{stamp.id[:12]}"
    values = {_CHANNEL: stamp.id} | ({"release": release} if release is not None else {})
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, version)
    metadata: CheckpointMetadata = {"source": "update", "step": position, "parents": {}}
    return _thread(), checkpoint, metadata, dict.fromkeys(values, version)
