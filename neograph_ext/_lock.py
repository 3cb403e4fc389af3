"""A per-thread lock, so two processes never resume the same thread at once.

Rules:
- The lock lives where the checkpoints live, so it spans processes and machines
  that share them, and a holder that dies cannot leave it stuck:
  PostgreSQL: a session-level advisory lock, which the server drops when the
  session ends; SQLite on a file: ``flock`` on a small file beside the database,
  which the OS drops when the holder's process dies. A holder unlocks explicitly:
  a child it forked shares the lock's open file and would otherwise keep it.
- A SQLite database is known by its file's identity (device and inode), not by the
  path it was opened with: the lock folder is ``.neograph-locks`` in the directory
  of the database's real path (symlinks resolved), and each lock file is named by
  the database's identity and the thread. So symlinks, relative paths and hard links
  in one directory all take one lock. Hard links in different directories have no
  common directory, so their processes do not exclude each other: open a database
  through links of one directory.
- Savers without a shared store (in-memory, SQLite ``:memory:``) and unknown savers
  take no lock: a debug line says so.
- The lock is always tried without blocking and polled with short sleeps, so a
  timeout is honoured on every backend, and no saver lock or pool connection is held
  while waiting.
- The lock never takes a connection the saver needs: with a saver's single connection,
  each lock statement borrows it briefly under the saver's own lock; with a pool, the
  lock opens one connection of its own beside the pool, for as long as it waits or
  holds, so a pool of any size (even 1) serves as many concurrent runs as without it.
- Optional drivers are never imported here: a saver whose driver is not imported
  cannot be an instance of it.
- ``thread_lock`` and ``athread_lock`` differ by ``await`` alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, LiteralString, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver

from neograph_ext._errors import GraphError, ThreadBusyError

if TYPE_CHECKING:
    import threading

    from psycopg import AsyncConnection, Connection
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_DIR", "OnBusy", "advisory_key", "athread_lock", "lock_file", "thread_lock"]

logger = logging.getLogger("neograph_ext")

OnBusy = Literal["wait", "raise"]
"""What to do when another process holds the thread: wait for it (up to a timeout) or
raise ``ThreadBusyError`` at once."""

LOCK_DIR = ".neograph-locks"
"""In the directory of a database file's real path, the folder that holds one lock file
per database and thread (named by digests: never a path taken from the thread id)."""

_NAMESPACE = b"neograph-ext/thread-lock\x00"
"""Salts the advisory key so it does not collide with other users' advisory locks."""

_FIRST_POLL = 0.01
_MAX_POLL = 0.2


def advisory_key(thread_id: str) -> int:
    """The PostgreSQL advisory lock key of a thread: a signed 64-bit integer.

    Args:
        thread_id: The LangGraph thread id.

    Returns:
        The first 8 bytes of SHA-256 over a namespace and the thread id, as ``bigint``.
    """
    data = hashlib.sha256(_NAMESPACE + thread_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(data[:8], "big", signed=True)


def lock_file(database: str | os.PathLike[str], thread_id: str) -> Path:
    """The lock file of a thread of a SQLite database file.

    Args:
        database: The database file; it must exist, since its identity names the lock.
        thread_id: The LangGraph thread id.

    Returns:
        ``<directory of the real path>/.neograph-locks/<device>-<inode>-<first 32 hex
        digits of SHA-256(thread_id)>.lock``, device and inode in hex.

    Raises:
        OSError: The database file cannot be found or examined.
    """
    return Path(_lock_path(os.fspath(database), thread_id))


def _lock_path(database: str, thread_id: str) -> str:
    """``lock_file`` as a string: a ``Path`` costs more to build than finding it."""
    identity = os.stat(database)  # follows symlinks: the real file's
    known = _PLACES.get(database)
    if known is None or known[:2] != (identity.st_dev, identity.st_ino):
        folder = os.path.join(os.path.dirname(os.path.realpath(database)), LOCK_DIR)
        known = (identity.st_dev, identity.st_ino, folder)
        _PLACES[database] = known
    name = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return os.path.join(known[2], f"{identity.st_dev:x}-{identity.st_ino:x}-{name}.lock")


_PLACES: dict[str, tuple[int, int, str]] = {}
"""Per database path as given, the identity of the file it named and the lock folder
beside its real path. Resolving the real path walks every directory of the path (most
of a resume's locking cost), so it is done again only when the path names another
file, which the ``stat`` every lock takes anyway tells."""


@contextmanager
def thread_lock(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    *,
    on_busy: OnBusy = "wait",
    timeout: float = 300.0,
) -> Iterator[None]:
    """Hold the thread's lock for the duration of the block.

    Args:
        saver: The graph's checkpointer; it decides which lock is taken (see module).
        thread_id: The thread to lock.
        on_busy: ``"wait"`` polls until the lock is free or ``timeout`` passes;
            ``"raise"`` raises at once when another holder has it.
        timeout: Seconds to wait in ``"wait"`` mode.

    Raises:
        ThreadBusyError: Another holder has the lock (``"raise"``), or still had it
            after ``timeout`` seconds (``"wait"``).
        GraphError: The lock cannot be taken where it lives: its PostgreSQL connection
            cannot be opened, or its SQLite lock folder cannot be used.
        ValueError: ``on_busy`` or ``timeout`` is invalid.
    """
    waits = _waits(thread_id, on_busy, timeout)
    lock = _lock_for(saver, thread_id)
    if lock is None:
        yield
        return
    try:  # a lock that gave up waiting still closes what it opened
        while not lock.try_acquire():
            time.sleep(next(waits))
        yield
    finally:
        lock.release()


@asynccontextmanager
async def athread_lock(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    *,
    on_busy: OnBusy = "wait",
    timeout: float = 300.0,
) -> AsyncIterator[None]:
    """Async twin of ``thread_lock``; waiting never blocks the event loop."""
    waits = _waits(thread_id, on_busy, timeout)
    lock = await _alock_for(saver, thread_id)
    if lock is None:
        yield
        return
    try:
        while not await lock.atry_acquire():
            await asyncio.sleep(next(waits))
        yield
    finally:
        await lock.arelease()


def _waits(thread_id: str, on_busy: str, timeout: float) -> Iterator[float]:
    """Validates the options, then yields how long to sleep before each retry.

    Raises ``ThreadBusyError`` (from ``next``) once no more waiting is allowed.
    """
    if on_busy not in ("wait", "raise"):
        raise ValueError(f"on_busy must be 'wait' or 'raise', not {on_busy!r}")
    if not timeout >= 0:  # also refuses NaN
        raise ValueError(
            f"the lock timeout (lock_timeout) must be a number of seconds >= 0, not {timeout!r}"
        )
    return _delays(thread_id, on_busy, timeout)


def _delays(thread_id: str, on_busy: str, timeout: float) -> Iterator[float]:
    if on_busy == "raise":
        raise ThreadBusyError(
            f"thread {thread_id!r} is being run by another process (on_busy='raise'); "
            "retry later, or pass on_busy='wait'"
        )
    deadline = time.monotonic() + timeout
    delay = _FIRST_POLL
    while (left := deadline - time.monotonic()) > 0:
        yield min(delay, left)
        delay = min(delay * 2, _MAX_POLL)
    raise ThreadBusyError(
        f"thread {thread_id!r} is still being run by another process after waiting "
        f"{timeout:g} s; retry later, or raise the lock timeout"
    )


class _Lock(Protocol):
    def try_acquire(self) -> bool: ...
    def release(self) -> None: ...


class _ALock(Protocol):
    async def atry_acquire(self) -> bool: ...
    async def arelease(self) -> None: ...


def _lock_for(saver: BaseCheckpointSaver[Any], thread_id: str) -> _Lock | None:
    conn = _connection(saver)
    if isinstance(conn, sqlite3.Connection):
        return _file_lock(_sqlite_file(conn, _saver_lock(saver)), thread_id, saver)
    if _is(conn, "psycopg", "Connection") or _is(conn, "psycopg_pool", "ConnectionPool"):
        return _AdvisoryLock(conn, _saver_lock(saver), thread_id)
    if _async_kind(conn):
        logger.warning(
            "thread %r: %s is asynchronous: the sync run() takes no lock; use arun()",
            thread_id,
            type(saver).__name__,
        )
        return None
    _no_lock(saver, thread_id)
    return None


async def _alock_for(saver: BaseCheckpointSaver[Any], thread_id: str) -> _ALock | None:
    conn = _connection(saver)
    if _is(conn, "aiosqlite", "Connection"):
        async with _saver_alock(saver):
            rows = await (await conn.execute("PRAGMA database_list")).fetchall()
        return _file_lock(_main_file(rows), thread_id, saver)
    if _is(conn, "psycopg", "AsyncConnection") or _is(conn, "psycopg_pool", "AsyncConnectionPool"):
        return _AsyncAdvisoryLock(conn, _saver_alock(saver), thread_id)
    # A sync saver never gets here: LangGraph's sync savers refuse arun's aget_tuple.
    _no_lock(saver, thread_id)
    return None


def _no_lock(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    logger.debug(
        "thread %r: %s keeps no shared store; no thread lock is taken",
        thread_id,
        type(saver).__name__,
    )


def _connection(saver: BaseCheckpointSaver[Any]) -> Any:
    """The saver's connection, for the savers this module knows; None otherwise."""
    known = (
        ("langgraph.checkpoint.sqlite", "SqliteSaver"),
        ("langgraph.checkpoint.sqlite.aio", "AsyncSqliteSaver"),
        ("langgraph.checkpoint.postgres.base", "BasePostgresSaver"),
    )
    if any(_is(saver, module, name) for module, name in known):
        return getattr(saver, "conn", None)
    return None


def _is(obj: object, module: str, name: str) -> bool:
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(obj, cls)


def _async_kind(conn: object) -> bool:
    return (
        _is(conn, "aiosqlite", "Connection")
        or _is(conn, "psycopg", "AsyncConnection")
        or _is(conn, "psycopg_pool", "AsyncConnectionPool")
    )


def _saver_lock(saver: BaseCheckpointSaver[Any]) -> threading.Lock:
    """The lock a sync saver takes around every use of its connection."""
    lock: threading.Lock = saver.lock  # type: ignore[attr-defined]
    return lock


def _saver_alock(saver: BaseCheckpointSaver[Any]) -> asyncio.Lock:
    """The lock an async saver takes around every use of its connection."""
    lock: asyncio.Lock = saver.lock  # type: ignore[attr-defined]
    return lock


def _sqlite_file(conn: sqlite3.Connection, guard: threading.Lock) -> str:
    with guard:
        rows = conn.execute("PRAGMA database_list").fetchall()
    return _main_file(rows)


def _main_file(rows: Any) -> str:
    """The main database's file from ``PRAGMA database_list``; empty for in-memory."""
    for _, name, file in rows:
        if name == "main":
            return str(file or "")
    return ""


def _file_lock(path: str, thread_id: str, saver: BaseCheckpointSaver[Any]) -> _FileLock | None:
    if not path:
        _no_lock(saver, thread_id)
        return None
    if fcntl is None:  # pragma: no cover - Windows
        logger.warning("thread %r: no flock on this platform; no thread lock is taken", thread_id)
        return None
    try:
        return _FileLock(_lock_path(path, thread_id), thread_id)
    except OSError as exc:
        raise GraphError(
            f"thread {thread_id!r}: the SQLite database {path} cannot be examined to find "
            f"its thread lock ({exc.strerror or exc}); check that the file exists and "
            "that this user can reach it"
        ) from exc


class _FileLock:
    """``flock`` on a per-thread file; the OS releases it when the holder dies.

    Each acquisition opens its own file description, so two holders in one process
    exclude each other too. Lock files are never deleted: removing one while another
    process has it open would let a third lock a new file of the same name.
    """

    def __init__(self, path: str, thread_id: str) -> None:
        self._path = path
        self._thread_id = thread_id
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        try:
            fd = self._open()
        except (PermissionError, NotADirectoryError, FileExistsError) as exc:
            raise GraphError(self._unusable(exc)) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return True

    def _open(self) -> int:
        # Python's descriptors are not inherited across exec (PEP 446); a fork shares
        # them, which is why release unlocks before closing.
        try:
            return os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the first lock beside this database: make the folder
            Path(self._path).parent.mkdir(exist_ok=True)
            return os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)

    def _unusable(self, exc: OSError) -> str:
        folder = Path(self._path).parent
        if isinstance(exc, PermissionError):
            fix = (
                f"let every user that runs threads of this database create files in {folder} "
                "(a shared group, or the same user)"
            )
        else:
            fix = f"move away the file {folder}: that name belongs to the lock folder"
        return (
            f"thread {self._thread_id!r}: cannot use the thread lock file {self._path} "
            f"({exc.strerror or exc}); {fix}"
        )

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                # Children forked while the lock was held share its open file: closing
                # our descriptor alone would leave them holding the lock.
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    async def atry_acquire(self) -> bool:
        return self.try_acquire()  # non-blocking: safe on the event loop

    async def arelease(self) -> None:
        self.release()


_TRY_SQL = (
    "SELECT CASE WHEN EXISTS ("
    " SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
    " AND classid = %(hi)s::oid AND objid = %(lo)s::oid AND objsubid = 1"
    ") THEN false ELSE pg_try_advisory_lock(%(key)s) END AS locked"
)
"""Refuses a lock this session already holds: advisory locks are re-entrant per
session, and a saver's single connection is shared by every caller in the process."""

_UNLOCK_SQL = "SELECT pg_advisory_unlock(%(key)s) AS unlocked"


def _params(key: int) -> dict[str, int]:
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return {"key": key, "hi": unsigned >> 32, "lo": unsigned & 0xFFFF_FFFF}


class _AdvisoryLock:
    """A session-level advisory lock, taken without ever holding a pool connection.

    On the saver's single connection, each statement runs under the saver's own lock,
    so it never interleaves with the saver's queries; nothing is held between
    statements, so the run itself is never blocked by the lock. With a pool, the lock
    opens one connection of its own, beside the pool, for the lock's life: a lock held
    on a pooled connection starved the saver as soon as ``max_size`` runs were locked.
    Closing that connection ends its session, which drops the lock if unlocking did not.
    """

    def __init__(
        self,
        source: Connection[Any] | ConnectionPool[Any],
        guard: threading.Lock,
        thread_id: str,
    ) -> None:
        self._source = source
        self._guard = guard
        self._thread_id = thread_id
        self._params = _params(advisory_key(thread_id))
        self._own: Connection[Any] | None = None
        self._held = False

    def try_acquire(self) -> bool:
        if _is(self._source, "psycopg", "Connection"):
            conn: Connection[Any] = self._source  # type: ignore[assignment]
            with self._guard:
                self._held = _query(conn, _TRY_SQL, self._params)
            return self._held
        if self._own is None:
            self._own = _connect(self._source, self._thread_id)  # type: ignore[arg-type]
        self._held = _query(self._own, _TRY_SQL, self._params)
        return self._held

    def release(self) -> None:
        own, self._own = self._own, None
        held, self._held = self._held, False
        if own is not None:
            # Unlocking first makes the lock free when release returns; the server
            # ends a closed session a moment later, which is too late for the next run.
            try:
                if held:
                    _unlock(own, self._params)
            finally:
                own.close()
        elif held:
            conn: Connection[Any] = self._source  # type: ignore[assignment]
            with self._guard:
                _unlock(conn, self._params)


class _AsyncAdvisoryLock:
    """Async twin of ``_AdvisoryLock``."""

    def __init__(
        self,
        source: AsyncConnection[Any] | AsyncConnectionPool[Any],
        guard: asyncio.Lock,
        thread_id: str,
    ) -> None:
        self._source = source
        self._guard = guard
        self._thread_id = thread_id
        self._params = _params(advisory_key(thread_id))
        self._own: AsyncConnection[Any] | None = None
        self._held = False

    async def atry_acquire(self) -> bool:
        if _is(self._source, "psycopg", "AsyncConnection"):
            conn: AsyncConnection[Any] = self._source  # type: ignore[assignment]
            async with self._guard:
                self._held = await _aquery(conn, _TRY_SQL, self._params)
            return self._held
        if self._own is None:
            self._own = await _aconnect(self._source, self._thread_id)  # type: ignore[arg-type]
        self._held = await _aquery(self._own, _TRY_SQL, self._params)
        return self._held

    async def arelease(self) -> None:
        own, self._own = self._own, None
        held, self._held = self._held, False
        if own is not None:
            try:
                if held:
                    await _aunlock(own, self._params)
            finally:
                await own.close()
        elif held:
            conn: AsyncConnection[Any] = self._source  # type: ignore[assignment]
            async with self._guard:
                await _aunlock(conn, self._params)


def _connect(pool: ConnectionPool[Any], thread_id: str) -> Connection[Any]:
    """A connection of the lock's own, made as the pool makes its connections."""
    conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
    kwargs = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
    try:
        conn: Connection[Any] = pool.connection_class.connect(conninfo, **_lock_kwargs(kwargs))
    except _operational_error() as exc:
        raise GraphError(_connect_failed(thread_id, exc)) from exc
    return conn


async def _aconnect(pool: AsyncConnectionPool[Any], thread_id: str) -> AsyncConnection[Any]:
    """Async twin of ``_connect``; the pool's conninfo and kwargs may be coroutines."""
    conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
    if inspect.isawaitable(conninfo):
        conninfo = await conninfo
    kwargs = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
    if inspect.isawaitable(kwargs):
        kwargs = await kwargs
    try:
        aconn: AsyncConnection[Any] = await pool.connection_class.connect(
            conninfo, **_lock_kwargs(kwargs)
        )
    except _operational_error() as exc:
        raise GraphError(_connect_failed(thread_id, exc)) from exc
    return aconn


def _lock_kwargs(kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    # Autocommit: no statement of the lock leaves a transaction open on the server.
    return {**(kwargs or {}), "autocommit": True}


def _connect_failed(thread_id: str, exc: Exception) -> str:
    return (
        f"thread {thread_id!r}: the thread lock could not open its connection to "
        f"PostgreSQL ({exc}); each locked run holds one connection beside the saver's "
        "pool: check that the server accepts them (max_connections)"
    )


def _operational_error() -> type[Exception]:
    from psycopg import OperationalError  # the caller has psycopg imported already

    return OperationalError


def _query(conn: Connection[Any], sql: LiteralString, params: dict[str, int]) -> bool:
    """One boolean statement; commits the transaction it opened on a non-autocommit
    connection, so the connection is left as it was found (the lock is session-level)."""
    opened = not conn.autocommit and conn.info.transaction_status == _idle()
    with conn.cursor() as cur:
        cur.execute(sql, params)
        row = cur.fetchone()
    if opened:
        conn.commit()
    return bool(_first(row))


async def _aquery(conn: AsyncConnection[Any], sql: LiteralString, params: dict[str, int]) -> bool:
    """Async twin of ``_query``."""
    opened = not conn.autocommit and conn.info.transaction_status == _idle()
    async with conn.cursor() as cur:
        await cur.execute(sql, params)
        row = await cur.fetchone()
    if opened:
        await conn.commit()
    return bool(_first(row))


def _unlock(conn: Connection[Any], params: dict[str, int]) -> None:
    if conn.closed:
        return  # the session, and every lock it held, is gone already
    if not _query(conn, _UNLOCK_SQL, params):
        logger.warning("thread lock %s was not held at release", params["key"])


async def _aunlock(conn: AsyncConnection[Any], params: dict[str, int]) -> None:
    if conn.closed:
        return  # the session, and every lock it held, is gone already
    if not await _aquery(conn, _UNLOCK_SQL, params):
        logger.warning("thread lock %s was not held at release", params["key"])


def _first(row: object) -> object:
    """The first column of a row, whatever the connection's row factory."""
    if isinstance(row, dict):
        return next(iter(row.values()), None)
    if isinstance(row, tuple | list):
        return row[0] if row else None
    return row


def _idle() -> object:
    from psycopg.pq import TransactionStatus  # the caller has psycopg imported already

    return TransactionStatus.IDLE
