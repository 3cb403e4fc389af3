"""How the command line opens the database ``--db`` names.

Rules:
- Read-only where the driver allows it (``mode=ro``, ``immutable=1`` for a WAL database
  no connection has open, a read-only PostgreSQL session); no saver ``setup()`` runs:
  the schema is checked, never created or migrated. ``accept`` alone asks for writing.
- ``--db`` may hold a password: no message echoes it, and a string that is neither a
  URL this reads nor an existing file is refused naming its scheme only.
- ``--db`` is declared once (``DbOpt``), so every command reads ``NEOGRAPH_EXT_DB`` when
  it is not given.
"""

from __future__ import annotations

import gc
import re
import sqlite3
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from neograph_ext.cli._boundary import CliError, one_line

__all__ = ["DB_ENV", "DbOpt", "OptionalDbOpt", "open_database", "sqlite_uri"]

Saver = BaseCheckpointSaver[Any]

DB_ENV = "NEOGRAPH_EXT_DB"
"""Where ``--db`` is read from when it is not given."""

_DB = typer.Option(
    metavar="URL", envvar=DB_ENV, help="SQLite path, sqlite:///path or postgresql://..."
)
DbOpt = Annotated[str, _DB]
"""Every command's ``--db``, from ``NEOGRAPH_EXT_DB`` when not given."""
OptionalDbOpt = Annotated[str | None, _DB]
"""``--db`` where another source may replace it (``check --fixtures``)."""


@contextmanager
def open_database(
    db: str, *, write: bool = False, serde: SerializerProtocol | None = None
) -> Iterator[Saver]:
    """A saver over ``db``, read-only, its schema checked but never created or migrated.

    ``write`` (for ``accept`` only) opens it for writing; the schema is still never
    created or migrated. ``serde`` (``_serde.reader``) replaces LangGraph's default
    serializer: which stored classes are revived.

    ``db`` may hold a password: no message echoes it (see ``_postgres``), and a string that
    is neither a URL this reads nor an existing file is refused naming its scheme only.
    """
    existing = Path(db).is_file()
    if db.startswith(("postgresql://", "postgres://")):
        opened = _postgres(db, write)
    elif db.startswith("sqlite:///"):
        opened = _sqlite(Path(db.removeprefix("sqlite:///")), write)
    elif (scheme := _SCHEME.match(db)) and not existing:
        raise CliError(
            "--db must be an SQLite path, sqlite:///path, postgresql://... or a libpq "
            f"key/value string (host=... dbname=...); it starts with {scheme.group()!r} "
            "but is none of these (a missing or extra slash?)"
        )
    elif "=" in db and not existing:
        opened = _postgres(db, write)  # a libpq key/value string: host=... password=...
    else:
        opened = _sqlite(Path(db), write)
    with opened as saver:
        if serde is not None:
            saver.serde = serde
        try:
            yield saver
        except BaseException as exc:
            _close_listings(exc)
            raise


# Two letters at least, so that a Windows drive (C:\...) is read as a path.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def _close_listings(exc: BaseException) -> None:
    """Finalise the ``saver.list`` generators an error left suspended in its frames.

    Each holds a cursor (and the saver's lock); left to the garbage collector, it is
    closed at interpreter exit, after the connection, and Python prints "Exception
    ignored in: <generator ...>" under the one-line error. Clearing the finished frames
    drops the last references, so the generators close now, while the connection is open.
    """
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:  # and the errors it was raised from
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)
        error = error.__cause__ or error.__context__
    gc.collect()


@contextmanager
def _sqlite(path: Path, write: bool = False) -> Iterator[Saver]:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        raise CliError("SQLite databases need an extra: install neograph-ext[sqlite]") from None
    if not path.is_file():
        raise CliError(f"no SQLite database at {str(path)!r}")
    wal = Path(f"{path}-wal")
    uri = path.resolve().as_uri() if write else sqlite_uri(path, wal)
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    try:
        try:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
            columns = {row[1] for row in conn.execute("PRAGMA table_info(writes)")}
        except sqlite3.OperationalError as exc:
            if not wal.exists():
                raise CliError(f"cannot read {str(path)!r}: {exc}") from exc
            raise CliError(
                f"cannot read {str(path)!r} read-only ({exc}): it is in WAL mode and "
                f"{wal.name!r} exists, so an app has it open or stopped without a "
                f"checkpoint, and reading it means sharing {path.name + '-shm'!r}, which "
                "needs write access to its folder; run where the folder is writable, or "
                "stop the app so that its last connection removes the -wal file"
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise CliError(f"{str(path)!r} is not an SQLite database: {exc}") from exc
        if not {"checkpoints", "writes"} <= tables:
            raise CliError(f"{str(path)!r} is not a LangGraph checkpoint database")
        saver = SqliteSaver(conn)
        saver.is_setup = True  # setup() writes (journal mode, DDL): the schema is checked above
        saver._has_task_path = "task_path" in columns  # what setup() would have found out
        yield saver
    finally:
        conn.close()


def sqlite_uri(path: Path, wal: Path) -> str:
    """``mode=ro``, plus ``immutable=1`` for a WAL database that no connection has open.

    ``mode=ro`` alone still creates the -wal and -shm files of a WAL database and writes
    the -shm: side files in the app's folder, and "unable to open database file" where
    the folder is not writable. ``immutable=1`` reads the file alone, creating nothing,
    but ignores other connections: it is safe only when there are none. A WAL database
    keeps its -wal file while any connection is open (SqliteSaver keeps one for the
    app's life), so a missing -wal file means no writer, and no committed data outside
    the main file. An app that opens the database while the CLI reads it may go unseen,
    or make the read fail (one line, exit 2); run again. With a -wal file present, the
    CLI reads through it, as any reader does, and sees everything committed.
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    with path.open("rb") as file:
        header = file.read(_SQLITE_HEADER)
    in_wal_mode = header.startswith(b"SQLite format 3\0") and header[18:19] == b"\x02"
    return f"{uri}&immutable=1" if in_wal_mode and not wal.exists() else uri


# The file format's header: byte 18, the write version, is 2 in WAL mode, 1 otherwise.
_SQLITE_HEADER = 20


@contextmanager
def _postgres(dsn: str, write: bool = False) -> Iterator[Saver]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.conninfo import conninfo_to_dict
        from psycopg.rows import dict_row
    except ImportError:
        raise CliError("PostgreSQL needs an extra: install neograph-ext[postgres]") from None
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        # From None: libpq's message quotes pieces of the string, the password among them.
        raise CliError(
            f"--db is not a PostgreSQL URL or libpq key/value string: {_unquote(str(exc))}"
        ) from None
    try:
        read_only = "" if write else " -c default_transaction_read_only=on"
        options = f"{params.get('options') or ''}{read_only}".strip()
        conn = psycopg.connect(
            dsn,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options=options,  # added to the DSN's own options, which a keyword would replace
            connect_timeout=params.get("connect_timeout", 10),
        )
    except psycopg.Error as exc:
        reason = one_line(exc)
        if password := params.get("password"):
            reason = reason.replace(str(password), "***")
        raise CliError(f"cannot connect to PostgreSQL at {_masked(params)}: {reason}") from exc
    with conn:
        try:
            row = conn.execute("SELECT max(v) AS v FROM checkpoint_migrations").fetchone()
        except psycopg.errors.UndefinedTable:
            raise CliError("the database is not a LangGraph checkpoint database") from None
        version, expected = (row or {}).get("v"), len(PostgresSaver.MIGRATIONS) - 1
        if version is None or version < expected:
            raise CliError(
                f"the checkpoint schema is at migration {version}, this version of "
                f"langgraph-checkpoint-postgres reads {expected}: let the app's "
                "PostgresSaver.setup() migrate it first"
            )
        yield PostgresSaver(conn)


def _masked(params: dict[str, Any]) -> str:
    """A parsed DSN as a libpq key/value string, its password (if any) as ``***``."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo(**{k: "***" if k == "password" else v for k, v in params.items()})


def _unquote(message: str) -> str:
    """libpq's parse error, each quoted piece that is not an option name as ``"***"``."""
    from psycopg.pq import Conninfo

    names = {option.keyword.decode() for option in Conninfo.get_defaults()}
    return re.sub(r'"([^"]*)"', lambda m: m.group() if m[1] in names else '"***"', message)
