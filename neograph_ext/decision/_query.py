"""The storage layer's protocol: what a storage flow asks of a backend, and nothing else.

A storage flow (a read of a saver's tables, a prune's cut, a stamp description's
write) is a generator written once: it yields queries and is sent each one's answer,
and returns what it read. It never touches a connection, as h11's protocol never
touches a socket; ``_storage.run`` and ``_storage.arun`` drive it over the saver's
backend (``_storage_sqlite``, ``_storage_postgres``: one ``execute`` / ``aexecute``
pair each), and a saver call (``Call``, ``Listing``) over the saver's own API.

Rules:
- Pure: records only, no I/O and no driver import.
- An error a query raises is thrown into the flow at its ``yield``, so a flow may
  catch it (and roll back what it owns through a ``finally``).
- A new read is one flow: the SQL and the decoding of its rows, for each backend.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["Call", "Flow", "Listing", "Query", "Sql", "Transaction"]

_T = TypeVar("_T")


@dataclass(frozen=True)
class Sql:
    """One statement; answered with its rows (tuples, or mappings when ``named``)."""

    text: str
    """The statement, in the backend's parameter style (``?`` or ``%s``)."""
    params: Sequence[Any] | Mapping[str, Any] = ()
    """Its parameters."""
    named: bool = False
    """Rows as mappings by column name (PostgreSQL's ``dict_row``), for the saver's own
    row decoding; else tuples."""
    alone: bool = False
    """Run outside any transaction the connection has open (SQLite's ``VACUUM``)."""


@dataclass(frozen=True)
class Transaction:
    """Statements run in one transaction, all or none; answered with None."""

    statements: tuple[Sql, ...]
    """In the order they run."""


@dataclass(frozen=True)
class Call:
    """A call of the saver's own API (or of ``on``'s): ``method`` on a sync run,
    ``amethod`` awaited on an async one (``"a" + method`` unless given); answered with
    what it returns."""

    method: str
    """The sync method's name."""
    args: tuple[Any, ...] = ()
    """Its positional arguments."""
    amethod: str = field(default="")
    """The async method's name, when it is not ``"a" + method``."""
    on: Any = None
    """What has the method, when it is not the saver (a lock's guard, its connection's
    driver)."""


@dataclass(frozen=True)
class Listing:
    """The saver's ``list`` (``alist`` on an async run), answered with the whole list."""

    config: Any
    """The config ``list`` takes (None: every thread)."""
    limit: int | None = None
    """At most this many checkpoints, newest first."""


Query = Sql | Transaction | Call | Listing
"""What a flow may yield."""

Flow = Generator[Query, Any, _T]
"""A storage flow returning ``_T``."""
