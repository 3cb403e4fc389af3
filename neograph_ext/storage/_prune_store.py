"""Pruning's reads and writes of a saver's own tables, each one flow (``_query``).

Rules:
- The statements are ``_prune_sql``'s; ``_storage.run`` and ``_storage.arun`` run them
  on the saver's connection (under its lock) or one of its pool's; each flow's sync and
  async entry points are made by ``_storage.bound``.
- Each ``cut`` is one transaction: a kill leaves a thread whole or pruned.
"""

from __future__ import annotations

from collections.abc import Sequence

from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._query import Flow, Sql, Transaction
from neograph_ext.storage._prune_sql import (
    SIZE_SQL,
    Cut,
    Saver,
    Sizes,
    descriptions_sql,
    dropping,
    pages,
    references_sql,
    sized,
    threads_sql,
)
from neograph_ext.storage._storage import backend, bound
from neograph_ext.storage._storage_rows import THREAD_PREFIX

__all__ = [
    "acut",
    "adescriptions",
    "areferences",
    "asizes",
    "athreads",
    "avacuum",
    "cut",
    "descriptions",
    "references",
    "sizes",
    "threads",
    "vacuum",
    "vacuumable",
]


def _threads(saver: Saver) -> Flow[list[str]]:
    """Every thread with a root-namespace checkpoint, description threads too."""
    return [str(row[0]) for row in (yield Sql(threads_sql(backend(saver))))]


def _references(saver: Saver) -> Flow[list[tuple[str, str]]]:
    """Distinct ``(thread, stamp reference)`` of every stamped checkpoint."""
    rows = yield Sql(references_sql(backend(saver)))
    return [(str(t), ref) for t, ref in rows if isinstance(ref, str)]


def _descriptions(saver: Saver) -> Flow[dict[str, Sizes]]:
    """Every description thread, with what it holds."""
    args = (len(THREAD_PREFIX), THREAD_PREFIX)
    rows = yield Sql(descriptions_sql(backend(saver)), args)
    return {str(t): Sizes(checkpoints=int(n), bytes=int(b)) for t, n, b in rows}


def _sizes(saver: Saver, found: Cut) -> Flow[Sizes]:
    """What the rows of ``found`` hold."""
    total = Sizes()
    for table, (sql, args) in found.measuring():
        ((count, size),) = yield Sql(sql, args)
        total += sized(table, int(count), int(size))
    return total


def _cut(saver: Saver, found: Cut | None, dropped: Sequence[str] = ()) -> Flow[None]:
    """Delete the rows of ``found`` and the description threads ``dropped``, in one
    transaction (a description still named by a checkpoint stays)."""
    statements = found.deleting() if found is not None else []
    for thread_id in dropped:
        statements += dropping(backend(saver), thread_id)
    if statements:
        yield Transaction(tuple(Sql(sql, args) for sql, args in statements))


def vacuumable(saver: Saver) -> None:
    """Check that ``VACUUM`` can run on ``saver``'s database.

    Raises:
        GraphError: The saver is not one of SQLite's.
    """
    if backend(saver) != "sqlite":
        raise GraphError(
            "vacuum is for SQLite only; PostgreSQL reclaims space itself (autovacuum, "
            "or VACUUM FULL run by an administrator)"
        )


def _vacuum(saver: Saver) -> Flow[tuple[int, int]]:
    """``VACUUM`` a SQLite database; its size in bytes before and after.

    Raises:
        GraphError: The saver is not one of SQLite's.
    """
    vacuumable(saver)
    before = pages((yield Sql(SIZE_SQL)))
    yield Sql("VACUUM", alone=True)  # VACUUM cannot run inside a transaction
    return before, pages((yield Sql(SIZE_SQL)))


threads, athreads = bound(_threads)
references, areferences = bound(_references)
descriptions, adescriptions = bound(_descriptions)
sizes, asizes = bound(_sizes)
cut, acut = bound(_cut)
vacuum, avacuum = bound(_vacuum)
