"""Thread fixtures: a thread's lineage as a portable, versioned JSON file.

Rules:
- One file per thread, self-contained: the head's lineage (and, for a head that replays
  earlier turns, the lineage it replays) as the saver returned its checkpoint tuples,
  and the stamp descriptions they refer to. ``docs/fixtures.md`` documents the format;
  ``FORMAT`` is bumped on any change a reader of the previous version would misread.
- Without values (the default), no state value leaves the database: every state value,
  every pending write's value and every ``Send``'s argument is left out; what planning
  reads of them is kept: which channels hold None, the node each ``Send`` goes to, and
  the digest of the turn's input (which the run mark records anyway). LangGraph's own
  routing channels (``branch:*``, ``join:*``: node names and None) are kept whole.
- Values (``with_values``) are LangGraph's ``JsonPlusSerializer`` encoding, base64: a
  reader revives them as a saver would, under the classes of the code that reads.
- Reading never guesses: an unknown ``format`` or a malformed file is a
  ``FixtureError`` naming the file and what to do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Send

from neograph_ext.decision._budget import Ledger, decode_ledger, encode_ledger
from neograph_ext.decision._claim import CLAIM
from neograph_ext.decision._errors import FixtureError
from neograph_ext.decision._langgraph import TASKS_CHANNEL
from neograph_ext.decision._stamp import InputDigest, Stamp, input_digest, read_description
from neograph_ext.storage._storage_rows import thread_config

__all__ = [
    "FORMAT",
    "REDACTED",
    "Redacted",
    "ThreadFixture",
    "decoded",
    "encoded",
    "file_name",
    "read_fixture",
    "read_fixtures",
]

FORMAT = 1
"""The version of the fixture format this code writes and reads."""

_KIND = "neograph-ext thread fixture"
"""The ``kind`` every fixture file names, so a stray JSON file is told apart."""

_INPUT = "__start__"
_KEPT_PREFIXES = ("branch:", "join:")
"""LangGraph's routing channels: they hold node names and None, never state."""

_SERDE = JsonPlusSerializer()


@dataclass(frozen=True)
class Redacted:
    """A value left out of a fixture exported without values (a turn's input is an
    ``InputDigest`` instead: planning compares it)."""


REDACTED = Redacted()
"""Every value left out, but a turn's input."""


@dataclass(frozen=True)
class ThreadFixture:
    """One exported thread, read back: its checkpoint tuples as the saver returned them
    (values redacted unless exported with them) and the stamp descriptions they name."""

    thread_id: str
    """The thread's id in the database it was exported from."""
    head_id: str
    """The thread's newest checkpoint when it was exported: what a resume plans from."""
    tuples: tuple[CheckpointTuple, ...]
    """The checkpoints, newest first, as a saver lists a thread."""
    stamps: Mapping[str, Stamp] = field(default_factory=dict)
    """The stamp descriptions the checkpoints refer to, by id."""
    with_values: bool = False
    """Whether state values were exported."""
    head_values: Mapping[str, Any] = field(default_factory=dict)
    """With values: the head's ``DeltaChannel`` values as LangGraph rebuilds them
    (``get_state``), which its ``channel_values`` do not hold."""
    source: str = ""
    """The file it was read from."""
    order: tuple[str, ...] = ()
    """The stamp ids the database had stored when the thread was exported, oldest first
    (``_stamp_order``), up to the newest one the checkpoints name: which code owns the
    thread during a rolling deploy. Empty for a file that predates it: the code planned
    with then counts as the newest, as code about to be deployed does."""
    ledger: Ledger | None = None
    """The thread's budget ledger when it was exported (``check --fixtures --cost``);
    None when none was recorded, or for a file that predates it."""

    def tuple_at(self, checkpoint_id: str | None) -> CheckpointTuple | None:
        """The checkpoint ``checkpoint_id`` names, or (None) the head; None if absent."""
        wanted = checkpoint_id or self.head_id
        return next((t for t in self.tuples if t.checkpoint["id"] == wanted), None)


def file_name(thread_id: str) -> str:
    """A file name for ``thread_id``: readable, and distinct for distinct ids."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", thread_id).strip("-.")[:40] or "thread"
    return f"{slug}-{hashlib.sha256(thread_id.encode()).hexdigest()[:10]}.json"


def encoded(
    thread_id: str,
    head_id: str,
    tuples: Sequence[CheckpointTuple],
    stamps: Mapping[str, Stamp],
    *,
    with_values: bool,
    head_values: Mapping[str, Any],
    order: Sequence[str] = (),
    ledger: Ledger | None = None,
) -> str:
    """A thread's fixture file, as JSON text (``docs/fixtures.md``).

    Args:
        thread_id: The thread.
        head_id: Its newest checkpoint.
        tuples: The checkpoints to export, in any order.
        stamps: The descriptions they refer to, by id.
        with_values: Export state values; else they are left out (see the rules).
        head_values: With values: the head's rebuilt ``DeltaChannel`` values.
        order: The database's order of stamps, as far as the checkpoints name them.
        ledger: The thread's budget ledger, if one was recorded.

    Raises:
        FixtureError: A metadata or version value is not JSON, or a value cannot be
            encoded by LangGraph's serializer.
    """
    ordered = sorted(tuples, key=lambda t: t.checkpoint["id"])
    document = {
        "format": FORMAT,
        "kind": _KIND,
        "thread_id": thread_id,
        "head": head_id,
        "values": with_values,
        "checkpoints": [_checkpoint(thread_id, t, with_values) for t in ordered],
        "head_values": {k: _value(v) for k, v in head_values.items()} if with_values else {},
        "stamps": {key: json.loads(stamp.encode()) for key, stamp in sorted(stamps.items())},
        "order": list(order),
        "ledger": None if ledger is None else encode_ledger(ledger),
    }
    try:
        return json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise FixtureError(
            f"thread {thread_id!r} cannot be exported: its checkpoint metadata or versions "
            f"hold a value that is not JSON ({exc})"
        ) from exc


def _checkpoint(thread_id: str, tup: CheckpointTuple, with_values: bool) -> dict[str, Any]:
    checkpoint = tup.checkpoint
    values: Mapping[str, Any] = checkpoint.get("channel_values") or {}
    try:
        stored = {
            name: _value(value) if with_values else _redacted_value(name, value)
            for name, value in values.items()
        }
        writes = [
            # A claim's value names code, not data: kept, as the stamps are.
            [
                task,
                channel,
                _value(value) if with_values or value is None or task == CLAIM else _LEFT_OUT,
            ]
            for task, channel, value in tup.pending_writes or ()
        ]
    except (TypeError, ValueError) as exc:
        raise FixtureError(
            f"thread {thread_id!r}, checkpoint {checkpoint['id']}: a value cannot be "
            f"encoded by LangGraph's serializer ({exc}); export without --with-values"
        ) from exc
    parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    return {
        "id": checkpoint["id"],
        "parent": parent,
        "metadata": dict(tup.metadata or {}),
        "checkpoint": {k: v for k, v in checkpoint.items() if k != "channel_values"},
        "channel_values": {k: v for k, v in stored.items() if v is not _ABSENT},
        "pending_writes": writes,
    }


_LEFT_OUT = {"redacted": True}
"""A pending write's value, left out."""
_ABSENT = object()
"""A state value left out: its channel is then absent, as if it held nothing."""


def _redacted_value(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name.startswith(_KEPT_PREFIXES):
        return _value(value)
    if name == TASKS_CHANNEL:
        return {"sends": [send.node for send in value if isinstance(send, Send)]}
    if name == _INPUT:
        return {"redacted": True, "digest": input_digest(value)}
    return _ABSENT


def _value(value: Any) -> Any:
    if value is None:
        return None
    kind, data = _SERDE.dumps_typed(value)
    return {"type": kind, "data": base64.b64encode(data).decode("ascii")}


def read_fixtures(directory: str | Path) -> tuple[ThreadFixture, ...]:
    """Every fixture in ``directory`` (its ``*.json`` files), by file name.

    Raises:
        FixtureError: The directory does not exist or holds no fixture, or a file is
            not a fixture this version reads (``read_fixture``).
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise FixtureError(
            f"no fixture directory at {str(folder)!r}: export threads into it first "
            "(neograph-ext export GRAPH --db DB --out DIR)"
        )
    files = sorted(folder.glob("*.json"))
    if not files:
        raise FixtureError(
            f"{str(folder)!r} holds no thread fixture (*.json): export threads into it "
            "first (neograph-ext export GRAPH --db DB --out DIR)"
        )
    return tuple(read_fixture(path) for path in files)


def read_fixture(path: str | Path) -> ThreadFixture:
    """One fixture file, read back.

    Raises:
        FixtureError: It is not JSON, not a fixture, of a format version this code does
            not read, or malformed; the message names the file and the fix.
    """
    where = str(path)
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FixtureError(f"fixture {where!r} cannot be read as JSON: {exc}") from exc
    if not isinstance(document, dict) or document.get("kind") != _KIND:
        raise FixtureError(
            f'{where!r} is not a neograph-ext thread fixture (no "kind": {_KIND!r}): '
            "remove it from the fixture directory, or export the thread again"
        )
    version = document.get("format")
    if version != FORMAT:
        raise FixtureError(
            f"fixture {where!r} is in format {version!r}; this version of neograph-ext "
            f"reads format {FORMAT}: export the thread again with this version, or use the "
            "version of neograph-ext that exported it"
        )
    try:
        return decoded(document, where)
    except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as exc:
        raise FixtureError(
            f"fixture {where!r} is malformed ({type(exc).__name__}: {exc}): export the thread again"
        ) from exc


def decoded(document: Mapping[str, Any], source: str = "") -> ThreadFixture:
    """A fixture from its parsed JSON (``format`` already checked).

    Raises:
        KeyError, TypeError, ValueError: A field is missing or of the wrong shape.
    """
    thread_id, head_id = str(document["thread_id"]), str(document["head"])
    with_values = bool(document["values"])
    stamps: dict[str, Stamp] = {}
    for key, description in dict(document["stamps"]).items():
        stamp = read_description(json.dumps(description))
        if isinstance(stamp, Stamp) and stamp.id == key:
            stamps[key] = stamp  # a wrong one is left out: planning counts it as changed
    by_id = {}
    for entry in document["checkpoints"]:
        tup = _tuple(thread_id, entry, with_values)
        by_id[tup.checkpoint["id"]] = tup
    if head_id not in by_id:
        raise ValueError(f"the head {head_id} is not among the checkpoints")
    head_values = {k: _revived(v) for k, v in dict(document.get("head_values") or {}).items()}
    newest_first = tuple(by_id[key] for key in sorted(by_id, reverse=True))
    # Absent from a file exported before the order was kept: a compatible addition.
    order = tuple(str(stamp_id) for stamp_id in document.get("order") or ())
    # Absent from a file exported before ledgers were: as a thread without one.
    ledger = decode_ledger(document.get("ledger"))
    return ThreadFixture(
        thread_id, head_id, newest_first, stamps, with_values, head_values, source, order, ledger
    )


def _tuple(thread_id: str, entry: Mapping[str, Any], with_values: bool) -> CheckpointTuple:
    checkpoint = dict(entry["checkpoint"])
    checkpoint["id"] = str(entry["id"])
    values = dict(entry["channel_values"])
    checkpoint["channel_values"] = {
        name: _revived(value) if with_values else _unredacted(name, value)
        for name, value in values.items()
    }
    writes = [
        (str(task), str(channel), _revived(value) if with_values else _unredacted("", value))
        for task, channel, value in entry["pending_writes"]
    ]
    parent = entry["parent"]
    metadata = entry["metadata"]
    if not isinstance(metadata, dict):
        raise TypeError("checkpoint metadata is not an object")
    return CheckpointTuple(
        config=thread_config(thread_id, checkpoint["id"]),
        checkpoint=checkpoint,  # type: ignore[arg-type]
        metadata=metadata,  # type: ignore[arg-type]
        parent_config=thread_config(thread_id, str(parent)) if parent is not None else None,
        pending_writes=writes,
    )


def _unredacted(name: str, value: Any) -> Any:
    """A value of a fixture without values, as planning reads it."""
    if value is None:
        return None
    if isinstance(value, dict) and "sends" in value:
        return [Send(str(node), REDACTED) for node in value["sends"]]
    if isinstance(value, dict) and value.get("redacted"):
        digest = value.get("digest")
        return InputDigest(digest) if isinstance(digest, str) else REDACTED
    return _revived(value)


def _revived(value: Any) -> Any:
    if value is None:
        return None
    return _SERDE.loads_typed((str(value["type"]), base64.b64decode(value["data"])))
