"""What neograph-ext writes into checkpoint metadata, and how it reads it back.

Rules:
- A stamp is computed once per compiled graph from the builder's static structure
  (node output types, ``versions``, successors, subgraphs, state channel types).
- It travels as one JSON string under ``STAMP_KEY`` in the graph's config metadata;
  LangGraph copies str config metadata into every checkpoint an invocation writes.
- Reading is defensive: stamps come from storage, so they are parsed with ``json``
  only, size-capped, validated by pydantic, and never imported or evaluated. A stamp
  that cannot be trusted yields an ``Unreadable`` reason, never an exception.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, get_args, get_origin

import pydantic
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from neograph_ext._fingerprint import Signature, UnresolvedTypeError, digest, signature

__all__ = [
    "INPUT_KEY",
    "MAX_STAMP_CHARS",
    "STAMP_FORMAT",
    "STAMP_KEY",
    "VERIFIED_KEY",
    "NodeStamp",
    "Stamp",
    "Unreadable",
    "build_stamp",
    "input_digest",
    "read_stamp",
]

logger = logging.getLogger("neograph_ext")

STAMP_KEY = "neograph_ext"
"""Checkpoint metadata key holding the stamp (SQLite filters need ``[a-zA-Z0-9_.-]``)."""

INPUT_KEY = "neograph_ext_input"
"""Metadata written by ``run()``: digest of the input the current run started with."""

VERIFIED_KEY = "neograph_ext_verified"
"""Metadata written by ``run()``: the stamp id the whole lineage was checked against."""

STAMP_FORMAT: Final = 1
"""Version of the stamp's JSON shape; a stamp of another version is not trusted."""

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


class Stamp(BaseModel):
    """The fingerprints of one compiled graph, as stored in checkpoint metadata."""

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

    def encode(self) -> str:
        """The JSON string stored under ``STAMP_KEY``."""
        return self.model_dump_json(exclude_defaults=True)


@dataclass(frozen=True)
class Unreadable:
    """Why a stored stamp is not trusted; the checkpoint then counts as unverified."""

    reason: Literal["format", "version", "invalid"]
    """``format``: not a JSON object; ``version``: unknown format; ``invalid``: bad shape."""
    detail: str
    """One line for the log."""


def read_stamp(raw: object) -> Stamp | Unreadable | None:
    """Parse the metadata value stored under ``STAMP_KEY``.

    Args:
        raw: The value found in checkpoint metadata, or None when absent.

    Returns:
        The stamp; ``None`` when the checkpoint carries none; ``Unreadable`` with a
        reason when it carries one that cannot be trusted.
    """
    if raw is None:
        return None
    if not isinstance(raw, str):
        return Unreadable("format", f"stamp is a {type(raw).__name__}, not a JSON string")
    return _parse(raw)


@functools.lru_cache(maxsize=16)
def _parse(raw: str) -> Stamp | Unreadable:
    """Cached: a thread's checkpoints repeat the same few stamps thousands of times."""
    if len(raw) > MAX_STAMP_CHARS:
        return Unreadable("format", f"stamp of {len(raw)} characters exceeds {MAX_STAMP_CHARS}")
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
    """SHA-256 of a run's input as LangGraph's serializer encodes it; None if it cannot."""
    try:
        _, data = _SERDE.dumps_typed(value)
    except Exception:
        return None
    return hashlib.sha256(data).hexdigest()


def build_stamp(
    builder: StateGraph[Any, Any, Any, Any],
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
) -> Stamp:
    """Fingerprint a StateGraph builder's nodes and channels.

    Args:
        builder: The uncompiled graph.
        output_types: Per node, a type that overrides the callable's return annotation.
        versions: Per node, an opaque string to bump after a prompt or logic change.

    Returns:
        The stamp to write into every checkpoint of the compiled graph.

    Raises:
        ValueError: ``output_types`` or ``versions`` names a node the builder lacks.
    """
    output_types = dict(output_types or {})
    versions = dict(versions or {})
    for option, names in (("output_types", output_types), ("versions", versions)):
        unknown = sorted(set(names) - set(builder.nodes))
        if unknown:
            raise ValueError(
                f"{option} names nodes the graph does not have: {unknown}; "
                f"its nodes are {sorted(builder.nodes)}"
            )
    sigs: dict[str, Signature] = {}

    def remember(tp: object) -> str:
        sig = signature(tp)
        key = digest(sig)
        sigs[key] = sig
        return key

    successors = _successors(builder)
    nodes: dict[str, NodeStamp] = {}
    for name, spec in builder.nodes.items():
        out_type = output_types[name] if name in output_types else _return_type(spec.runnable)
        out = None
        if out_type is not None:
            try:
                out = remember(out_type)
            except UnresolvedTypeError as exc:
                logger.debug("node %r: output type not fingerprinted: %s", name, exc)
        sub = _subgraph_nodes(spec.runnable)
        fields: dict[str, Any] = {
            "out": out,
            "ver": versions.get(name),
            "succ": tuple(sorted(successors.get(name, ()))),
            "sub": sub,
        }
        nodes[name] = NodeStamp(fp=_sha(fields), **fields)
    channels: dict[str, str] = {}
    for key, tp in _channel_types(builder).items():
        try:
            channels[key] = remember(tp)
        except UnresolvedTypeError as exc:
            logger.debug("channel %r: type not fingerprinted: %s", key, exc)
    return Stamp(
        v=STAMP_FORMAT, id=_stamp_id(nodes, channels), nodes=nodes, channels=channels, sigs=sigs
    )


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


def _subgraph_nodes(runnable: object) -> dict[str, str] | None:
    """For a compiled subgraph node: the subgraph's own node digests."""
    if not isinstance(runnable, Pregel):
        return None
    raw = (runnable.config or {}).get("metadata", {}).get(STAMP_KEY)
    stamp = read_stamp(raw)
    if isinstance(stamp, Stamp):
        nodes = {k: n.fp for k, n in stamp.nodes.items()}
        nodes.update({f"channel:{k}": fp for k, fp in stamp.channels.items()})
        return nodes
    # A subgraph compiled by plain LangGraph: its structure is all we can see.
    return {name: _sha(name) for name in runnable.nodes if not name.startswith("__")}


def _channel_types(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, object]:
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
