"""The SQLite thread lock: ``flock`` on a small file beside the database.

Rules:
- A database is known by its file's identity (device and inode), not by the path it
  was opened with: the lock folder is ``.neograph-locks`` in the directory of the
  database's real path, and each lock file is named by the database's identity and a
  digest of the thread. The real path is resolved once per path, again when the path
  comes to name another file.
- The OS drops a ``flock`` when its holder dies; a holder unlocks explicitly before
  closing, since a child it forked shares the open file.
- Lock files are never deleted.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any

from neograph_ext.decision._errors import GraphError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "LOCK_DIR",
    "FileLock",
    "flock_available",
    "lock_file",
    "lock_path",
    "main_file",
]

LOCK_DIR = ".neograph-locks"
"""In the directory of a database file's real path, the folder that holds one lock file
per database and thread (named by digests: never a path taken from the thread id)."""


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
    return Path(lock_path(os.fspath(database), thread_id))


def lock_path(database: str, thread_id: str) -> str:
    """``lock_file`` as a string: a ``Path`` costs more to build than finding it."""
    identity = os.stat(database)  # follows symlinks: the real file's
    known = _PLACES.get(database)
    if known is None or known[0] != identity.st_ino or known[1] != identity.st_dev:
        folder = os.path.join(os.path.dirname(os.path.realpath(database)), LOCK_DIR)
        prefix = os.path.join(folder, f"{identity.st_dev:x}-{identity.st_ino:x}-")
        known = _PLACES[database] = (identity.st_ino, identity.st_dev, prefix)
    name = hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{known[2]}{name}.lock"


_PLACES: dict[str, tuple[int, int, str]] = {}
"""Per database path as given, the identity (inode, device) of the file it named and the
start of its lock files' paths, beside its real path. Resolving the real path walks
every directory of the path (most of a resume's locking cost), so it is done again only
when the path names another file, which the ``stat`` every lock takes anyway tells."""


def main_file(rows: Any) -> str:
    """The main database's file from ``PRAGMA database_list``; empty for in-memory."""
    for _, name, file in rows:
        if name == "main":
            return str(file or "")
    return ""


class FileLock:
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
        # Opening the file is file I/O: in a thread, off the event loop. Shielded, so
        # that a wait cancelled meanwhile still lets go of a lock taken for no one.
        taking = asyncio.get_running_loop().run_in_executor(None, self.try_acquire)
        try:
            return await asyncio.shield(taking)
        except asyncio.CancelledError:
            taking.add_done_callback(lambda _: self.release())
            raise

    async def arelease(self) -> None:
        await asyncio.to_thread(self.release)


def flock_available() -> bool:
    """Whether this platform has ``flock`` (Windows has not)."""
    return fcntl is not None
