"""What neograph-ext writes into checkpoint metadata, and how it reads it back.

Rules:
- A stamp is computed once per compiled graph from the builder's static structure
  (``_introspect.build_stamp``); this module holds its model and wire format only.
- Metadata travels with every checkpoint, streamed chunk, event and trace, so only a
  reference rides there: ``STAMP_KEY`` holds ``"2:<stamp id>"``, and ``run()`` adds a
  run mark under ``RUN_KEY``; together at most ``MAX_METADATA_BYTES``. The stamp's
  description (every fingerprint and type signature) is stored once per distinct stamp
  beside the checkpoints (``_stamp_store``).
- 0.1.0 stored the whole description, as JSON, under ``STAMP_KEY`` in every checkpoint,
  with the run's input and verification under two keys of their own: still read.
- A run mark is bound to the stamp it was written under: a mark that reached another
  graph's checkpoints (a graph invoked inside a node of a run) is not trusted there.
- Reading is defensive: stamps come from storage, so they are parsed with ``json``
  only, size-capped before anything is cached, validated by pydantic, and never
  imported or evaluated. A stamp that cannot be trusted yields an ``Unreadable``
  reason, never an exception.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Final, Literal

import pydantic
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from neograph_ext.decision._fingerprint import Signature, digest

__all__ = [
    "ASK_AGAIN",
    "LEGACY_INPUT_KEY",
    "LEGACY_VERIFIED_KEY",
    "MAX_METADATA_BYTES",
    "MAX_STAMP_CHARS",
    "PLAIN_CALL",
    "REF_FORMAT",
    "RUN_KEY",
    "STAMP_FORMAT",
    "STAMP_KEY",
    "InputDigest",
    "NodeStamp",
    "RunMark",
    "Stamp",
    "StampRef",
    "Stamped",
    "Unreadable",
    "canonical_digest",
    "encode_run",
    "input_digest",
    "read_description",
    "read_marks",
    "read_run",
    "read_stamp",
    "stamp_id",
    "stamp_ref",
]

STAMP_KEY = "neograph_ext"
"""Checkpoint metadata key holding the stamp (SQLite filters need ``[a-zA-Z0-9_.-]``)."""

RUN_KEY = "neograph_ext_run"
"""Metadata written by ``run()``: ``<stamp id, 16 hex>.<decision>.<input digest>``, and
``.<checkpoint id>`` while turns of that head are replayed, and ``~<stamp id, 16 hex>``
when the run takes the thread over from that stamp's code (``ResumePolicy.take_over``);
a plain call of the graph writes ``PLAIN_CALL`` as decision."""

PLAIN_CALL = "invoke"
"""The decision of a run mark written by a plain call: nothing was checked."""

LEGACY_INPUT_KEY = "neograph_ext_input"
"""0.1.0's metadata key for the digest of the input the run started with."""

LEGACY_VERIFIED_KEY = "neograph_ext_verified"
"""0.1.0's metadata key for the stamp id the whole lineage was checked against."""

MAX_METADATA_BYTES: Final = 256
"""The most neograph-ext adds to any metadata, keys and JSON quoting included."""

STAMP_FORMAT: Final = 1
"""Version of a description's JSON shape; a description of another version is not trusted."""

REF_FORMAT: Final = 2
"""Version of what ``STAMP_KEY`` holds when it is a reference (0.1.0 held a description)."""

_REF = re.compile(rf"{REF_FORMAT}:([0-9a-f]{{64}})")
_MARK = re.compile(
    r"([0-9a-f]{16})\.([a-z_]{1,20})\.([0-9a-f]{32})?(?:\.([0-9a-f-]{36}))?(?:~([0-9a-f]{16}))?"
)
_REF_CHARS = len(f"{REF_FORMAT}:") + 64
_MARK_CHARS = 16 + 1 + 20 + 1 + 32 + 1 + 36 + 1 + 16
_CHECKPOINT_ID = re.compile(r"[0-9a-f-]{36}")
"""The longest run mark ``_MARK`` matches: longer strings are not parsed (nor cached)."""
_MARK_ID = 16
"""Hex digits of the stamp id a run mark is bound to."""
_INPUT_DIGITS = 32
"""Hex digits of an input digest kept in a run mark (128 bits)."""

MAX_STAMP_CHARS = 2_000_000
"""Stamps larger than this are refused unread: a stamp is data from storage."""

_SERDE = JsonPlusSerializer()

_Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
_Name = Annotated[str, StringConstraints(min_length=1, max_length=1_000)]


class NodeStamp(BaseModel):
    """Everything a node's stored results depend on, as far as types can tell."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    fp: _Hex
    """Digest of the fields below: equal digests mean nothing relevant changed."""
    out: _Hex | None = None
    """Digest of the declared output type's signature (its body is in ``Stamp.sigs``)."""
    ver: str | None = Field(default=None, max_length=1_000)
    """The user's ``versions[node]`` string."""
    succ: tuple[_Name, ...] = ()
    """Static successors, sorted; ``*`` when a branch declares no destinations."""
    sub: dict[_Name, _Hex] | None = None
    """For a node running a compiled subgraph: the subgraph's node digests."""
    tools: dict[_Name, _Hex] | None = None
    """For a node that routes to a prebuilt ``ToolNode``: the digest of each bound tool's
    argument schema, by tool name (the tool calls it writes must fit them)."""
    outputs: dict[_Name, _Hex] | None = None
    """For a prebuilt ``ToolNode``: the digest of each bound tool's declared return type,
    by tool name (its ``ToolMessage``'s content and artifact are made of it); a tool that
    declares ``str`` or nothing is left out, and so is the field when none declares more."""
    sends: dict[_Name, _Hex] | None = None
    """For a node that routes by a branch or a ``Command``: the digest of the input type
    of each node it may route to that takes an input of its own (what a ``Send`` it makes
    carries), by node name; left out when it routes to none."""
    inner: dict[_Name, _Hex] | None = None
    """For a subgraph node, to explain a change (not part of ``fp``, which ``sub``
    covers): the digests inside it at any depth, keyed by path (``draft/out``,
    ``channel:outline``, ``inner/draft/out``, ``researcher/tools/output:lookup``)."""


class Stamp(BaseModel):
    """The fingerprints of one compiled graph: its description, stored once per id."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    v: Literal[1]
    """The stamp format (``STAMP_FORMAT``)."""
    id: _Hex
    """Digest of ``nodes`` and ``channels``: equal ids mean identical fingerprints."""
    nodes: dict[_Name, NodeStamp]
    """Per node name."""
    channels: dict[_Name, _Hex]
    """Per state channel: digest of its annotated type, reducer stripped."""
    sigs: dict[_Hex, dict[str, Any]]
    """Signatures by digest, so a later run can explain a change at field level."""
    renames: dict[_Name, _Name] | None = None
    """Old node name -> new name, for a graph whose nodes were only renamed: the
    decision's input, never stored (not part of ``id``)."""
    clears: tuple[_Name, ...] | None = None
    """Channels a node sets to None when it has nothing to say there (``create_agent``'s
    ``structured_response``): a None written there is no value of the channel's type, so
    a change of that type does not count against the step. The decision's input, never
    stored (not part of ``id``)."""
    accumulates: tuple[_Name, ...] | None = None
    """Channels whose reducer accumulates (``operator.add``, ``add_messages``): every
    write of an earlier turn is still part of the value, not only the last one. The
    decision's input, never stored (not part of ``id``)."""
    replaced: tuple[_Name, ...] | None = None
    """Channels every turn writes before any node reads them (``create_agent``'s
    ``structured_response``): an earlier turn's value there is replaced by the next turn,
    never read, whatever its type. The decision's input, never stored (not part of
    ``id``)."""

    def encode(self) -> str:
        """The description as JSON: what the stamp store keeps (and 0.1.0's metadata held)."""
        return self.model_dump_json(
            exclude_defaults=True, exclude={"renames", "clears", "accumulates", "replaced"}
        )


class Stamped:
    """A compiled graph that carries its stamp, as every graph ``compile`` returns does
    (``_graph.StampedGraph`` derives from this class): a compiled subgraph used as a
    node is recognised by its type, from below the graph layer."""

    neograph_ext_stamp: ClassVar[Stamp]
    """The fingerprints of this graph's types."""


@dataclass(frozen=True)
class StampRef:
    """A stamp known by its id alone; its description is looked up in the stamp store."""

    id: str
    """The stamp's id (64 hex digits)."""


@dataclass(frozen=True)
class Unreadable:
    """Why a stored stamp is not trusted; the checkpoint then counts as unverified."""

    reason: Literal["format", "version", "invalid"]
    """``format``: not a JSON object; ``version``: unknown format; ``invalid``: bad shape."""
    detail: str
    """One line for the log."""


@dataclass(frozen=True)
class RunMark:
    """What ``run()`` recorded on a checkpoint, as far as the checkpoint's stamp vouches."""

    verified: str | None = None
    """The stamp id against which the whole lineage was checked, or adopted (an
    ``unverified`` resume), if it was."""
    input: str | None = None
    """Digest (``_INPUT_DIGITS`` hex) of the input the run started with, if known."""
    decision: str | None = None
    """The decision the mark was written under (``ASK_AGAIN``: a question is owed)."""
    replaying: str | None = None
    """The checkpoint id of the head whose later turns the run replays (``replay_turns``):
    the turns it has not started yet are owed."""
    took_from: str | None = None
    """The first 16 hex digits of the stamp id whose code the run took the thread over
    from (``ResumePolicy.take_over``, ``accept``): on this thread, the run's code counts
    as newer than that code's (``_ownership``)."""


ASK_AGAIN = "ask_again"
"""The decision of a run that rewinds to ask a question again: until the question is
stored, an answer sent to the thread was given to the old one, and is set aside."""


def stamp_ref(stamp: Stamp) -> str:
    """The value stored under ``STAMP_KEY`` for ``stamp``."""
    return f"{REF_FORMAT}:{stamp.id}"


def encode_run(
    stamp: Stamp,
    decision: str,
    given_input: str | None,
    replaying: str | None = None,
    took_from: str | None = None,
) -> str:
    """The run mark ``run()`` writes under ``RUN_KEY``.

    Args:
        stamp: The stamp of the graph being run; the mark is bound to it.
        decision: The plan's kind; ``unverified`` means the lineage was not checked.
        given_input: The input's digest (``input_digest``), if the run started one.
        replaying: The id of the head whose later turns are being replayed, if any (an
            id of another shape than LangGraph's is not recorded).
        took_from: The id of the stamp whose code the run takes the thread over from,
            if it does (``ResumePolicy.take_over``, ``accept``).
    """
    mark = f"{stamp.id[:_MARK_ID]}.{decision}.{(given_input or '')[:_INPUT_DIGITS]}"
    if replaying is not None and _CHECKPOINT_ID.fullmatch(replaying):
        mark += f".{replaying}"
    if took_from is not None:
        mark += f"~{took_from[:_MARK_ID]}"
    return mark


def read_stamp(raw: object) -> Stamp | StampRef | Unreadable | None:
    """Parse the metadata value stored under ``STAMP_KEY``.

    Args:
        raw: The value found in checkpoint metadata, or None when absent.

    Returns:
        A reference (the current format); the whole stamp (0.1.0's format); ``None``
        when the checkpoint carries none; ``Unreadable`` with a reason when it carries
        one that cannot be trusted.
    """
    if raw is None:
        return None
    if not isinstance(raw, str):
        return Unreadable("format", f"stamp is a {type(raw).__name__}, not a JSON string")
    ref = _ref(raw) if len(raw) == _REF_CHARS else None
    return read_description(raw) if ref is None else ref


def read_description(raw: str) -> Stamp | Unreadable:
    """Parse a stamp's description (from the stamp store, or 0.1.0's metadata).

    Args:
        raw: The JSON text.

    Returns:
        The stamp, or why it is not trusted.
    """
    # Checked before the cache: a refused giant must not stay in memory.
    if len(raw) > MAX_STAMP_CHARS:
        return Unreadable("format", f"stamp of {len(raw)} characters exceeds {MAX_STAMP_CHARS}")
    return _parse(raw)


def read_marks(
    metadata: Mapping[str, Any],
) -> tuple[Stamp | StampRef | Unreadable | None, RunMark]:
    """The stamp a checkpoint's metadata names (``read_stamp``) and its run mark, as far
    as that stamp vouches for it (``read_run``).

    Args:
        metadata: The checkpoint's metadata.
    """
    stamp = read_stamp(metadata.get(STAMP_KEY))
    return stamp, read_run(metadata, stamp)


def read_run(metadata: Mapping[str, Any], stamp: Stamp | StampRef | Unreadable | None) -> RunMark:
    """The run mark of a checkpoint, trusted only as far as its own stamp vouches.

    Args:
        metadata: The checkpoint's metadata.
        stamp: What ``read_stamp`` found in it.

    Returns:
        An empty mark when there is none, or when it was written under another stamp.
    """
    if isinstance(stamp, Stamp):  # 0.1.0: two keys of their own
        verified, given = metadata.get(LEGACY_VERIFIED_KEY), metadata.get(LEGACY_INPUT_KEY)
        return RunMark(
            verified if isinstance(verified, str) else None,
            given[:_INPUT_DIGITS] if isinstance(given, str) and given else None,
        )
    raw = metadata.get(RUN_KEY)
    if not isinstance(stamp, StampRef) or not isinstance(raw, str) or len(raw) > _MARK_CHARS:
        return _NO_MARK
    return _run_mark(raw, stamp.id)


_NO_MARK = RunMark()


def _ref(raw: str) -> StampRef | None:
    ref = _REF.fullmatch(raw)
    return StampRef(ref.group(1)) if ref else None


def _run_mark(raw: str, stamp_id: str) -> RunMark:
    mark = _MARK.fullmatch(raw)
    if mark is None or mark.group(1) != stamp_id[:_MARK_ID]:
        return _NO_MARK
    # A run that resumed checkpoints it could not verify adopted them: the warning said
    # they count as unchanged, so from then on they count as that code's own.
    checked = mark.group(2) != PLAIN_CALL
    return RunMark(
        stamp_id if checked else None, mark.group(3), mark.group(2), mark.group(4), mark.group(5)
    )


def _parse(raw: str) -> Stamp | Unreadable:
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return Unreadable("format", f"stamp is not JSON: {str(exc)[:200]}")
    if not isinstance(data, dict):
        return Unreadable("format", "stamp is not a JSON object")
    if type(data.get("v")) is not int or data["v"] != STAMP_FORMAT:
        return Unreadable("version", f"unknown stamp format {str(data.get('v'))[:50]!r}")
    try:
        stamp = Stamp.model_validate_json(raw)
    except (pydantic.ValidationError, RecursionError) as exc:
        return Unreadable("invalid", f"stamp has a bad shape: {str(exc)[:200]}")
    if stamp.id != stamp_id(stamp.nodes, stamp.channels):
        return Unreadable("invalid", "stamp id does not match its contents")
    if any(_sig_digest(sig) != key for key, sig in stamp.sigs.items()):
        return Unreadable("invalid", "a type signature does not match its digest")
    return stamp


def _sig_digest(sig: Signature) -> str | None:
    """The digest a stored signature should be filed under; None if it has none."""
    try:
        return digest(sig)
    except (TypeError, ValueError, RecursionError):
        return None


class InputDigest(str):
    """An input known by its digest alone (a thread fixture exported without values)."""

    __slots__ = ()


def input_digest(value: object) -> str | None:
    """SHA-256 (its first 128 bits, as hex) of a run's input as LangGraph's serializer
    encodes it; None if it cannot. An ``InputDigest`` is its own digest."""
    if isinstance(value, InputDigest):
        return str(value)
    try:
        _, data = _SERDE.dumps_typed(value)
    except Exception:
        return None
    return hashlib.sha256(data).hexdigest()[:_INPUT_DIGITS]


def canonical_digest(data: object) -> str:
    """SHA-256 (hex) of ``data`` as canonical JSON: what a stamp's digests are made of."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def stamp_id(nodes: Mapping[str, NodeStamp], channels: Mapping[str, str]) -> str:
    """A stamp's id: the digest of its node and channel digests."""
    return canonical_digest(
        {"nodes": {k: n.fp for k, n in nodes.items()}, "channels": dict(channels)}
    )
