"""What neograph-ext writes into checkpoint metadata, and how it reads it back.

Rules:
- A stamp is computed once per compiled graph from the builder's static structure
  (node output types, ``versions``, successors, subgraphs, state channel types).
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

import functools
import hashlib
import inspect
import json
import logging
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, get_args, get_origin

import pydantic
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from neograph_ext._fingerprint import Signature, UnresolvedTypeError, digest, signature
from neograph_ext._langgraph import (
    RESPONSE_CHANNEL,
    makes_tool_calls,
    prebuilt_output,
    response_schema,
    sub_agents,
    tool_objects,
    tool_schemas,
)

__all__ = [
    "ASK_AGAIN",
    "LEGACY_INPUT_KEY",
    "LEGACY_VERIFIED_KEY",
    "MAX_METADATA_BYTES",
    "MAX_STAMP_CHARS",
    "PLAIN_CALL",
    "RUN_KEY",
    "STAMP_FORMAT",
    "STAMP_KEY",
    "NodeStamp",
    "RunMark",
    "Stamp",
    "StampRef",
    "Unreadable",
    "build_stamp",
    "channel_types",
    "encode_run",
    "input_digest",
    "read_description",
    "read_marks",
    "read_run",
    "read_stamp",
    "stamp_ref",
]

logger = logging.getLogger("neograph_ext")

STAMP_KEY = "neograph_ext"
"""Checkpoint metadata key holding the stamp (SQLite filters need ``[a-zA-Z0-9_.-]``)."""

RUN_KEY = "neograph_ext_run"
"""Metadata written by ``run()``: ``<stamp id, 16 hex>.<decision>.<input digest>``, and
``.<checkpoint id>`` while turns of that head are replayed; a plain call of the graph
writes ``PLAIN_CALL`` as decision."""

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
_MARK = re.compile(r"([0-9a-f]{16})\.([a-z_]{1,20})\.([0-9a-f]{32})?(?:\.([0-9a-f-]{36}))?")
_REF_CHARS = len(f"{REF_FORMAT}:") + 64
_MARK_CHARS = 16 + 1 + 20 + 1 + 32 + 1 + 36
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
    inner: dict[_Name, _Hex] | None = None
    """For a subgraph node, to explain a change (not part of ``fp``, which ``sub``
    covers): the digests inside it at any depth, keyed by path (``draft/out``,
    ``channel:outline``, ``inner/draft/out``)."""


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

    def encode(self) -> str:
        """The description as JSON: what the stamp store keeps (and 0.1.0's metadata held)."""
        return self.model_dump_json(exclude_defaults=True, exclude={"renames", "clears"})


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
    """The stamp id against which the whole lineage was checked, if it was."""
    input: str | None = None
    """Digest (``_INPUT_DIGITS`` hex) of the input the run started with, if known."""
    decision: str | None = None
    """The decision the mark was written under (``ASK_AGAIN``: a question is owed)."""
    replaying: str | None = None
    """The checkpoint id of the head whose later turns the run replays (``replay_turns``):
    the turns it has not started yet are owed."""


ASK_AGAIN = "ask_again"
"""The decision of a run that rewinds to ask a question again: until the question is
stored, an answer sent to the thread was given to the old one, and is set aside."""


def stamp_ref(stamp: Stamp) -> str:
    """The value stored under ``STAMP_KEY`` for ``stamp``."""
    return f"{REF_FORMAT}:{stamp.id}"


def encode_run(
    stamp: Stamp, decision: str, given_input: str | None, replaying: str | None = None
) -> str:
    """The run mark ``run()`` writes under ``RUN_KEY``.

    Args:
        stamp: The stamp of the graph being run; the mark is bound to it.
        decision: The plan's kind; ``unverified`` means the lineage was not checked.
        given_input: The input's digest (``input_digest``), if the run started one.
        replaying: The id of the head whose later turns are being replayed, if any (an
            id of another shape than LangGraph's is not recorded).
    """
    mark = f"{stamp.id[:_MARK_ID]}.{decision}.{(given_input or '')[:_INPUT_DIGITS]}"
    if replaying is not None and _CHECKPOINT_ID.fullmatch(replaying):
        mark += f".{replaying}"
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


@functools.lru_cache(maxsize=64)
def _ref(raw: str) -> StampRef | None:
    """Cached, as ``_run_mark``: a thread's checkpoints repeat the same few references."""
    ref = _REF.fullmatch(raw)
    return StampRef(ref.group(1)) if ref else None


@functools.lru_cache(maxsize=64)
def _run_mark(raw: str, stamp_id: str) -> RunMark:
    """Cached: a thread's checkpoints repeat the same few marks, and a planned resume
    reads its head's twice (to plan, then to mark what it writes)."""
    mark = _MARK.fullmatch(raw)
    if mark is None or mark.group(1) != stamp_id[:_MARK_ID]:
        return _NO_MARK
    checked = mark.group(2) not in ("unverified", PLAIN_CALL)
    return RunMark(stamp_id if checked else None, mark.group(3), mark.group(2), mark.group(4))


@functools.lru_cache(maxsize=16)
def _parse(raw: str) -> Stamp | Unreadable:
    """Cached: a thread's checkpoints repeat the same few stamps thousands of times."""
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
    if stamp.id != _stamp_id(stamp.nodes, stamp.channels):
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


def input_digest(value: object) -> str | None:
    """SHA-256 (its first 128 bits, as hex) of a run's input as LangGraph's serializer
    encodes it; None if it cannot."""
    try:
        _, data = _SERDE.dumps_typed(value)
    except Exception:
        return None
    return hashlib.sha256(data).hexdigest()[:_INPUT_DIGITS]


def build_stamp(
    builder: StateGraph[Any, Any, Any, Any],
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
) -> Stamp:
    """Fingerprint a StateGraph builder's nodes and channels.

    Args:
        builder: The uncompiled graph.
        output_types: Per node, a type that overrides the callable's return annotation.
        versions: Per node, an opaque string to bump after a prompt or logic change.
        renames: Old node name -> current name, for nodes that were only renamed.

    Returns:
        The stamp to write into every checkpoint of the compiled graph.

    Raises:
        ValueError: ``output_types``, ``versions`` or ``renames`` names a node the
            builder lacks (``renames``: as new name), or renames onto a current node.
    """
    output_types = dict(output_types or {})
    versions = dict(versions or {})
    renames = dict(renames or {})
    for option, names in (
        ("output_types", output_types),
        ("versions", versions),
        ("renames (new names)", renames.values()),
    ):
        unknown = sorted(set(names) - set(builder.nodes))
        if unknown:
            raise ValueError(
                f"{option} names nodes the graph does not have: {unknown}; "
                f"its nodes are {sorted(builder.nodes)}"
            )
    clash = sorted(set(renames) & set(builder.nodes))
    if clash:
        raise ValueError(
            f"renames maps old names that are still nodes of the graph: {clash}; "
            "a rename's old name must be gone"
        )
    sigs: dict[str, Signature] = {}

    def remember(tp: object) -> str:
        sig = signature(tp)
        key = digest(sig)
        sigs[key] = sig
        return key

    successors = _successors(builder)
    tools = _tool_digests(builder, remember)
    # An agent builder's model call made the tool calls that its middleware nodes route
    # on: the tools' schemas are its own, and no router's.
    callers = {name for name, spec in builder.nodes.items() if makes_tool_calls(spec.runnable)}
    nodes: dict[str, NodeStamp] = {}
    for name, spec in builder.nodes.items():
        out_type = (
            output_types[name]
            if name in output_types
            else prebuilt_output(spec.runnable) or _return_type(spec.runnable)
        )
        if _is_state_schema(builder, out_type):
            # ``-> State`` says nothing about which keys the node writes: judge it by
            # the channels it actually wrote, as an unannotated node.
            out_type = None
        out = None
        if out_type is not None:
            try:
                out = remember(out_type)
            except UnresolvedTypeError as exc:
                logger.debug("node %r: output type not fingerprinted: %s", name, exc)
        inside = _subgraph_stamp(spec.runnable)
        agents = _agent_stamps(spec.runnable) if inside is None else {}
        for found in (inside, *agents.values()):
            if found is not None:
                sigs.update(found.sigs)
        succ = tuple(sorted(successors.get(name, ())))
        sub, inner = _plain_sub(spec.runnable), None
        if inside is not None:
            sub, inner = _sub_digests(inside), _inner_digests(inside)
        elif agents:
            sub = {f"{a}/{k}": fp for a, st in agents.items() for k, fp in _sub_digests(st).items()}
            inner = {
                f"{a}/{k}": fp for a, st in agents.items() for k, fp in _inner_digests(st).items()
            }
        fields: dict[str, Any] = {
            "out": out,
            "ver": versions.get(name),
            "succ": succ,
            "sub": sub,
        }
        if callers:
            routed = _routed_tools(("*",), tools) if name in callers else None
        else:
            routed = _routed_tools(succ, tools)
        if routed is not None:  # only when set: fingerprints of other nodes stay as they were
            fields["tools"] = routed
        nodes[name] = NodeStamp(fp=_sha(fields), inner=inner, **fields)
    types = channel_types(builder)
    schemas = (response_schema(spec.runnable) for spec in builder.nodes.values())
    response = next((schema for schema in schemas if schema is not None), None)
    if response is not None and RESPONSE_CHANNEL in types:
        # create_agent types it with a type variable: the schema asked for is the type.
        types[RESPONSE_CHANNEL] = response
    channels: dict[str, str] = {}
    for key, tp in types.items():
        try:
            channels[key] = _sha(dict(tp)) if isinstance(tp, Mapping) else remember(tp)
        except UnresolvedTypeError as exc:
            logger.debug("channel %r: type not fingerprinted: %s", key, exc)
    return Stamp(
        v=STAMP_FORMAT,
        id=_stamp_id(nodes, channels),
        nodes=nodes,
        channels=channels,
        sigs=sigs,
        renames=renames or None,
        clears=(RESPONSE_CHANNEL,) if response is not None else None,
    )


def _agent_stamps(runnable: object) -> dict[str, Stamp]:
    """For a ToolNode whose tools run sub-agents (deep agents' ``task``): their stamps."""
    found: dict[str, Stamp] = {}
    for tool in (tool_objects(runnable) or {}).values():
        for agent, graph in (sub_agents(tool) or {}).items():
            stamp = _subgraph_stamp(graph)
            if stamp is not None:
                found[agent] = stamp
    return found


def _is_state_schema(builder: StateGraph[Any, Any, Any, Any], tp: object) -> bool:
    try:
        return tp in builder.schemas
    except TypeError:  # unhashable annotations are no schema
        return False


def _tool_digests(
    builder: StateGraph[Any, Any, Any, Any], remember: Callable[[object], str]
) -> dict[str, dict[str, str]]:
    """Per ``ToolNode`` node: each bound tool's argument schema digest, by tool name."""
    found: dict[str, dict[str, str]] = {}
    for name, spec in builder.nodes.items():
        schemas = tool_schemas(spec.runnable)
        if schemas is None:
            continue
        digests: dict[str, str] = {}
        for tool, schema in schemas.items():
            try:
                digests[tool] = (
                    _sha(dict(schema)) if isinstance(schema, Mapping) else remember(schema)
                )
            except (UnresolvedTypeError, TypeError, ValueError) as exc:
                logger.debug("tool %r: argument schema not fingerprinted: %s", tool, exc)
        found[name] = digests
    return found


def _routed_tools(
    succ: tuple[str, ...], tools: Mapping[str, Mapping[str, str]]
) -> dict[str, str] | None:
    """The tool schemas a node's tool calls must fit: those of the ToolNodes it routes to."""
    targets = set(tools) if "*" in succ else set(succ) & set(tools)
    if not targets:
        return None
    return {tool: fp for target in sorted(targets) for tool, fp in tools[target].items()}


def _sha(data: object) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _stamp_id(nodes: Mapping[str, NodeStamp], channels: Mapping[str, str]) -> str:
    return _sha({"nodes": {k: n.fp for k, n in nodes.items()}, "channels": dict(channels)})


def _successors(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, set[str]]:
    """Static destinations of each node; ``*`` stands for 'any node'."""
    out: dict[str, set[str]] = {}
    for start, end in builder.edges:
        out.setdefault(start, set()).add(end)
    for starts, end in builder.waiting_edges:
        for start in starts:
            out.setdefault(start, set()).add(end)
    for start, branches in builder.branches.items():
        for branch in branches.values():
            ends = branch.ends.values() if branch.ends is not None else ("*",)
            out.setdefault(start, set()).update(ends)
    for name, spec in builder.nodes.items():
        if isinstance(spec.ends, dict) or spec.ends:
            out.setdefault(name, set()).update(spec.ends)
    return out


def _callable_of(runnable: object) -> Callable[..., Any] | None:
    for attr in ("func", "afunc"):
        fn = getattr(runnable, attr, None)
        if callable(fn):
            return typing.cast("Callable[..., Any]", fn)
    return None


def _return_type(runnable: object) -> object | None:
    """The node's declared output type, or None when it declares nothing useful."""
    fn = _callable_of(runnable)
    if fn is None:
        return None
    try:
        hints = typing.get_type_hints(inspect.unwrap(fn), include_extras=True)
    except (NameError, TypeError, AttributeError) as exc:
        logger.debug("return annotation of %r not resolved: %s", fn, exc)
        return None
    tp: object = hints.get("return")
    origin = get_origin(tp)
    if origin in (typing.Coroutine, typing.Awaitable) or (
        origin is not None and getattr(origin, "__name__", "") in ("Coroutine", "Awaitable")
    ):
        tp = get_args(tp)[-1]
    if tp is Command or get_origin(tp) is Command:
        # Command[...] parametrises the goto targets, not the update's type.
        return None
    if tp in (None, type(None), Any, dict) or get_origin(tp) is dict:
        return None
    return tp


def _subgraph_stamp(runnable: object) -> Stamp | None:
    """The stamp of a compiled subgraph used as a node, however it was compiled."""
    stamp = getattr(runnable, "neograph_ext_stamp", None)  # see _graph.StampedGraph
    if isinstance(stamp, Stamp):
        return stamp
    builder = getattr(runnable, "builder", None)
    if isinstance(runnable, CompiledStateGraph) and isinstance(builder, StateGraph):
        # Compiled by plain LangGraph: its builder is fingerprinted as compile() would.
        return build_stamp(builder)
    return None


def _sub_digests(stamp: Stamp) -> dict[str, str]:
    """What a subgraph node's fingerprint covers: every inner node and channel digest."""
    nodes = {k: n.fp for k, n in stamp.nodes.items()}
    nodes.update({f"channel:{k}": fp for k, fp in stamp.channels.items()})
    return nodes


def _plain_sub(runnable: object) -> dict[str, str] | None:
    """A graph without a builder (functional API): its structure is all we can see."""
    if not isinstance(runnable, Pregel):
        return None
    return {name: _sha(name) for name in runnable.nodes if not name.startswith("__")}


def _inner_digests(stamp: Stamp) -> dict[str, str]:
    """Every digest inside a subgraph, by path, to explain a change field by field."""
    found = {f"channel:{k}": fp for k, fp in stamp.channels.items()}
    for name, node in stamp.nodes.items():
        if node.out is not None:
            found[f"{name}/out"] = node.out
        found.update({f"{name}/tool:{k}": fp for k, fp in (node.tools or {}).items()})
        found.update({f"{name}/{k}": fp for k, fp in (node.inner or {}).items()})
    return found


def channel_types(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, object]:
    """Each state key's annotated type, as the user declared it."""
    types: dict[str, object] = {}
    for schema in builder.schemas:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            for key, field in schema.model_fields.items():
                tp: object = field.annotation
                if field.metadata:
                    tp = Annotated[(tp, *field.metadata)]
                types.setdefault(key, tp)
            continue
        try:
            hints = typing.get_type_hints(schema, include_extras=True)
        except (NameError, TypeError) as exc:
            logger.debug("state schema %r not resolved: %s", schema, exc)
            continue
        for key, tp in hints.items():
            if key in builder.channels:
                types.setdefault(key, tp)
    return types
