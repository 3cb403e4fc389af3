"""Whether stored values come back as themselves: three checks on one rule.

LangGraph's checkpoint serializer (``JsonPlusSerializer``) stores a pydantic model, a
dataclass, an enum or a NamedTuple as ``(module, __name__, data)`` and revives it by
``getattr(importlib.import_module(module), __name__)``, after its msgpack allowlist
let the pair through; when either fails it hands back the data instead (a ``dict``),
with at most a log line. So a class revives as itself exactly when it is reachable by
its module and plain name, in the process that reads it, and is allowed there.

Rules:
- One rule (``why_not``), the serializer's, read from ``jsonplus.py`` and
  ``_internal/_serde.py`` of langgraph 1.2.24 (checkpoint 4.3.2): the allowlist first
  (``MSGPACK_ALLOWLIST``: langgraph-checkpoint 3 has none), then the import by module
  and ``__name__`` (not ``__qualname__``: a nested class is looked up at module level).
  A class of ``__main__`` is importable only in a process whose main script defines it,
  so it counts as not revivable.
- At compile time every declared type (state channels, node outputs) is walked for the
  classes the serializer revives by path (``revived_classes``); each that cannot come
  back gets one warning naming it, the reason and the fix (``Finding``); strict mode
  makes it a ``GraphError``.
- On resume only the head's stored channel values a resume hands to nodes are checked
  against the channels' declared types (``misread``): a pure walk of values already
  read, never of the history. A value that reads back as declared (a TypedDict value is
  a dict; a pydantic state schema coerces on read) is never reported.
- ``compile(verify_writes=True)`` round-trips every value a node writes as it is
  written (``_verify_writes``).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import logging
import types
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, Required, get_args, get_origin

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import StateGraph
from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

from neograph_ext._errors import GraphError
from neograph_ext._introspect import channel_types, is_state_schema, return_type
from neograph_ext._langgraph import MSGPACK_ALLOWLIST, SAFE_MSGPACK_TYPES, strict_msgpack
from neograph_ext._langgraph_agents import prebuilt_output

__all__ = [
    "Finding",
    "Revival",
    "allowed_pairs",
    "class_mismatch",
    "declared",
    "findings",
    "head_misread",
    "misread",
    "report",
    "revival",
    "revived_classes",
    "why_not",
]

logger = logging.getLogger("neograph_ext")

Allowed = frozenset[tuple[str, ...]] | Literal[True]
"""What a serializer lets through: every class (``True``) or these ``(module, name)``
pairs, on top of LangGraph's ``SAFE_MSGPACK_TYPES``."""


@dataclass(frozen=True)
class Finding:
    """A declared class whose stored values cannot come back as themselves."""

    type_name: str
    """The class, as ``module.qualname``."""
    where: tuple[str, ...]
    """What declares it: ``channel `draft```, ``node `write` output``."""
    reasons: tuple[str, ...]
    """Why the serializer cannot revive it."""
    fix: str
    """What to do about it."""

    def describe(self) -> str:
        """One paragraph: the type, where it is declared, why, and the fix."""
        return (
            f"values of {self.type_name} (declared by {', '.join(self.where)}) will not read "
            f"back from a checkpoint as {self.type_name.rpartition('.')[2]}: "
            f"{'; '.join(self.reasons)}. A resumed node would get a plain dict instead. "
            f"Fix: {self.fix}"
        )


@dataclass(frozen=True)
class Revival:
    """What a compiled graph knows about reading its values back, held on its class."""

    types: Mapping[str, object] = dataclasses.field(default_factory=dict)
    """Each state channel's declared type."""
    coerced: frozenset[str] = frozenset()
    """Channels of a pydantic state schema: validated (so coerced) when a node reads them."""
    findings: tuple[Finding, ...] = ()
    """The declared classes that cannot come back as themselves (compile-time check)."""
    unrevivable: frozenset[str] = frozenset()
    """Channels whose declared type holds such a class: converting a stored value of
    theirs cannot help, it would not read back either."""


def allowed_pairs(saver: object, registered: set[tuple[str, ...]] | None) -> Allowed:
    """What the serializer of ``saver`` revives, as its ext hook decides it.

    Args:
        saver: The compiled graph's checkpointer (after ``StateGraph.compile`` merged its
            allowlist in), or None / a flag when a saver is injected at run time.
        registered: The allowlist the compiled graph registers (``_serde_allowlist``).
    """
    if not MSGPACK_ALLOWLIST:
        return True
    serde = getattr(saver, "serde", None)
    if isinstance(serde, EncryptedSerializer):
        serde = serde.serde
    if isinstance(serde, JsonPlusSerializer):
        allowed = serde._allowed_msgpack_modules
        return True if allowed is True else frozenset(allowed or ())
    if serde is not None or not strict_msgpack():
        return True  # another serializer: not ours to judge
    return frozenset(registered or ())


def why_not(cls: type, allowed: Allowed) -> tuple[str, ...]:
    """Why the serializer cannot revive a value of ``cls`` as ``cls``; empty when it can."""
    module, name = cls.__module__, cls.__name__
    reasons: list[str] = []
    pair = (module, name)
    if (
        MSGPACK_ALLOWLIST
        and allowed is not True
        and pair not in SAFE_MSGPACK_TYPES
        and pair not in allowed
    ):
        reasons.append(
            "it is not on the msgpack allowlist the compiled graph registers "
            "(LANGGRAPH_STRICT_MSGPACK is on)"
        )
    if "<locals>" in cls.__qualname__:
        reasons.append("it is a local class (defined inside a function), which cannot be imported")
    elif module == "__main__":
        reasons.append(
            "it is defined in `__main__`, which another process (a worker, a server, a "
            "test run) imports as a different script"
        )
    elif not _same_class(_imported(module, name), cls):
        reasons.append(f"`{module}.{name}` does not import it")
    return tuple(reasons)


def _same_class(found: object, cls: type) -> bool:
    """Whether ``found`` is ``cls`` as far as a checkpoint can tell: the class itself, or
    one defined again at the same path (a module reloaded, a class redefined by a
    deploy), which the serializer revives in its place and fingerprints compare."""
    return found is cls or (
        isinstance(found, type)
        and found.__module__ == cls.__module__
        and found.__qualname__ == cls.__qualname__
    )


def _fix(cls: type, reasons: Sequence[str]) -> str:
    name = cls.__name__
    fixes: list[str] = []
    if any("local class" in r or "__main__" in r or "does not import" in r for r in reasons):
        fixes.append(f"define {name} at the top level of an importable module")
    if any("allowlist" in r for r in reasons):
        fixes.append(
            f"declare {name} in the state schema (the type of a state key), or pass "
            f"allowed_msgpack_modules=[({cls.__module__!r}, {name!r})] to the saver's "
            "JsonPlusSerializer"
        )
    return "; or ".join(fixes)


def _imported(module: str, name: str) -> object:
    try:
        return getattr(importlib.import_module(module), name, None)
    except Exception:  # an import error of any kind: the serializer gets none either
        return None


def revived_classes(tp: object) -> Iterator[type]:
    """The classes inside a declared type that the serializer stores by path.

    Walks what LangGraph's allowlist collection walks (unions, ``Annotated``,
    containers, ``NewType``, TypedDict, pydantic and dataclass fields) and yields each
    pydantic model, dataclass, enum and NamedTuple class once.
    """
    seen: set[int] = set()
    stack: list[object] = [tp]
    while stack:
        current = stack.pop()
        if id(current) in seen or current is Any or current is None:
            continue
        seen.add(id(current))
        origin = get_origin(current)
        if origin is Literal:
            continue
        if origin is Annotated:
            stack.append(get_args(current)[0])  # the rest is metadata
            continue
        if origin is not None or isinstance(current, types.UnionType):
            stack.extend(get_args(current))
            continue
        supertype = getattr(current, "__supertype__", None)
        if supertype is not None:
            stack.append(supertype)
            continue
        if not isinstance(current, type):
            continue
        if is_typeddict(current):
            stack.extend(_hints(current).values())
            continue
        if _by_path(current):
            yield current
            if issubclass(current, BaseModel):
                stack.extend(f.annotation for f in current.model_fields.values())
            elif dataclasses.is_dataclass(current) or _is_namedtuple(current):
                stack.extend(_hints(current).values())


def _by_path(cls: type) -> bool:
    """Whether the serializer stores instances of ``cls`` by module and name."""
    if cls.__module__ == "builtins":
        return False
    return (
        issubclass(cls, BaseModel | enum.Enum)
        or dataclasses.is_dataclass(cls)
        or _is_namedtuple(cls)
    )


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_asdict")


def _hints(tp: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tp, include_extras=True)
    except Exception:  # unresolvable annotations: nothing to walk
        return {}


def findings(declared: Sequence[tuple[str, object]], allowed: Allowed) -> tuple[Finding, ...]:
    """The declared classes that cannot come back as themselves, one finding per class.

    Args:
        declared: ``(what declares it, type)`` pairs: every state channel and node output.
        allowed: What the graph's serializer lets through (``allowed_pairs``).
    """
    where: dict[type, list[str]] = {}
    for what, tp in declared:
        for cls in revived_classes(tp):
            places = where.setdefault(cls, [])
            if what not in places:
                places.append(what)
    found = []
    for cls, places in where.items():
        reasons = why_not(cls, allowed)
        if reasons:
            name = f"{cls.__module__}.{cls.__qualname__}"
            found.append(Finding(name, tuple(places), reasons, _fix(cls, reasons)))
    return tuple(found)


def revival(
    channel_types: Mapping[str, object],
    coerced: frozenset[str],
    outputs: Mapping[str, object],
    allowed: Allowed,
) -> Revival:
    """The compile-time check of a graph's declared types.

    Args:
        channel_types: Each state channel's declared type.
        coerced: The channels of a pydantic state schema.
        outputs: Each node's declared output type, where it declares one.
        allowed: What the graph's serializer lets through.
    """
    # A pydantic state schema validates its channels' values into their types on read.
    declared = [(f"channel `{ch}`", tp) for ch, tp in channel_types.items() if ch not in coerced]
    declared += [(f"node `{node}` output", tp) for node, tp in _updates(outputs, coerced)]
    found = findings(declared, allowed)
    bad = {f.type_name for f in found}
    channel_types = dict(channel_types)
    for _, key, tp in _fields(outputs):
        if channel_types.get(key, tp) in (Any, object):
            # An untyped channel holds what its writer declares: that is what must revive.
            channel_types[key] = tp
    unrevivable = frozenset(
        ch
        for ch, tp in channel_types.items()
        if any(f"{c.__module__}.{c.__qualname__}" in bad for c in revived_classes(tp))
    )
    return Revival(dict(channel_types), coerced, found, unrevivable)


def _updates(
    outputs: Mapping[str, object], coerced: frozenset[str]
) -> Iterator[tuple[str, object]]:
    """What a node's declared output puts into channels: the fields of a model,
    dataclass or TypedDict it returns (LangGraph stores each field in its channel, never
    the returned object) but those of coerced channels, else the type itself
    (``output_types`` naming a value's type)."""
    for node, tp in outputs.items():
        if isinstance(tp, type) and (is_typeddict(tp) or _by_path(tp)):
            yield from ((node, f) for _, key, f in _fields({node: tp}) if key not in coerced)
        else:
            yield node, tp


def _fields(outputs: Mapping[str, object]) -> Iterator[tuple[str, str, object]]:
    """``(node, key, type)`` for each field of the model, dataclass or TypedDict a node
    declares it returns: the updates of those keys."""
    for node, tp in outputs.items():
        if not isinstance(tp, type) or not (is_typeddict(tp) or _by_path(tp)):
            continue
        if issubclass(tp, BaseModel):
            yield from ((node, k, f.annotation) for k, f in tp.model_fields.items())
        else:
            yield from ((node, k, hint) for k, hint in _hints(tp).items())


def report(checked: Revival, graph_name: str, strict: bool) -> None:
    """Log each finding once, or, in strict mode, raise them all.

    Raises:
        GraphError: ``strict`` and some declared class cannot come back as itself.
    """
    if not checked.findings:
        return
    if strict:
        raise GraphError(
            f"graph {graph_name!r}: "
            + "\n".join(finding.describe() for finding in checked.findings)
        )
    for finding in checked.findings:
        logger.warning("graph %r: %s", graph_name, finding.describe())


def misread(checked: Revival, values: Mapping[str, Any]) -> dict[str, str]:
    """Per stored channel value that does not read back as its channel's declared type,
    the reason (``stored value of `draft` does not read back as `Draft`: got `dict```).

    Args:
        checked: The graph's ``Revival``.
        values: The head checkpoint's channel values, as the saver revived them.
    """
    found: dict[str, str] = {}
    for channel, tp in checked.types.items():
        if channel not in values:
            continue
        miss = _mismatch(tp, values[channel])
        if miss is not None and channel in checked.coerced and _validates(tp, values[channel]):
            miss = None  # a pydantic state validates it into the declared type on read
        if miss is not None:
            expected, got = miss
            found[channel] = (
                f"stored value of `{channel}` does not read back as `{expected}`: got `{got}`"
            )
    return found


def _validates(tp: object, value: object) -> bool:
    try:
        TypeAdapter[Any](tp).validate_python(value)  # type: ignore[arg-type]
    except (ValidationError, TypeError, ValueError, AttributeError):
        return False
    return True


def _mismatch(tp: object, value: object) -> tuple[str, str] | None:
    """``(declared, found)`` type names where ``value`` is not of the declared ``tp``,
    judged only where the serializer could have changed it: classes it revives by path,
    and the containers and TypedDicts that hold them. Anything else passes."""
    if not isinstance(value, _HOLDERS) and not dataclasses.is_dataclass(value):
        # Then only its class matters: judged once per type and class (a thread's
        # thousands of messages are few classes).
        try:
            return _leaf(tp, type(value))  # type: ignore[arg-type]
        except TypeError:  # an unhashable annotation
            pass
    return _judged(tp, value)


def class_mismatch(tp: object, value: object) -> tuple[str, str] | None:
    """``(declared, found)`` type names where the class of ``value`` alone is not the
    declared ``tp``, as ``_mismatch`` judges it but never looking at the items a value
    holds (a ``dict`` passes for a TypedDict, a ``list`` for ``list[Draft]``): one cached
    lookup per type and class."""
    try:
        return _leaf(tp, type(value))  # type: ignore[arg-type]
    except TypeError:  # an unhashable annotation
        return None


@functools.lru_cache(maxsize=1024)
def _leaf(tp: object, cls: type) -> tuple[str, str] | None:
    """``_judged`` of a value of class ``cls`` that holds no other values; of any value
    judged by its class alone (``class_mismatch``): a mapping passes for a TypedDict."""
    origin = get_origin(tp)
    if origin is Annotated or origin in (Required, NotRequired):
        return _leaf(get_args(tp)[0], cls)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        if any(_leaf(member, cls) is None for member in get_args(tp)):
            return None
        return (" | ".join(_name(m) for m in get_args(tp)), cls.__name__)
    if tp is type(None) or tp is None:
        return None if cls is type(None) else ("None", cls.__name__)
    supertype = getattr(tp, "__supertype__", None)
    if supertype is not None:
        return _leaf(supertype, cls)
    if origin is not None or not isinstance(tp, type):
        return None
    if is_typeddict(tp):
        return None if issubclass(cls, Mapping) else (tp.__name__, cls.__name__)
    if _by_path(tp) and not issubclass(cls, tp) and not _same_class(cls, tp):
        return (tp.__name__, cls.__name__)
    return None


def _judged(tp: object, value: object) -> tuple[str, str] | None:
    origin = get_origin(tp)
    if origin is Annotated or origin in (Required, NotRequired):
        return _mismatch(get_args(tp)[0], value)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        misses = [_mismatch(member, value) for member in get_args(tp)]
        if any(miss is None for miss in misses):
            return None
        return (" | ".join(_name(m) for m in get_args(tp)), type(value).__name__)
    if tp is type(None) or tp is None:
        return None if value is None else ("None", type(value).__name__)
    supertype = getattr(tp, "__supertype__", None)
    if supertype is not None:
        return _mismatch(supertype, value)
    if origin is not None:
        return _items_mismatch(origin, get_args(tp), value)
    if not isinstance(tp, type):
        return None
    if is_typeddict(tp):
        if not isinstance(value, Mapping):
            return (tp.__name__, type(value).__name__)
        hints = _hints(tp)
        return _first(_mismatch(hints[key], item) for key, item in value.items() if key in hints)
    if not _by_path(tp):
        return None
    if not isinstance(value, tp) and not _same_class(type(value), tp):
        return (tp.__name__, type(value).__name__)
    if dataclasses.is_dataclass(tp) and not issubclass(tp, BaseModel):
        # Revived by calling the class with its stored fields: nothing validates them.
        hints = _hints(tp)
        return _first(
            _mismatch(hints[f.name], getattr(value, f.name, None))
            for f in dataclasses.fields(tp)
            if f.name in hints
        )
    return None


def _items_mismatch(origin: object, args: tuple[Any, ...], value: object) -> tuple[str, str] | None:
    if not isinstance(origin, type) or not args:
        return None
    if issubclass(origin, Mapping):
        if isinstance(value, Mapping) and len(args) == 2:
            return _each(args[1], value.values())
        return None
    if not isinstance(value, list | tuple | set | frozenset):
        return None
    if issubclass(origin, tuple) and args[-1:] != (...,):
        return _first(_mismatch(a, item) for a, item in zip(args, value, strict=False))
    return _each(args[0], value)


def _each(tp: object, items: Iterable[object]) -> tuple[str, str] | None:
    """The first item of ``items`` not of ``tp``; an item holding no other values is
    judged once per class (a list of a thousand messages holds a few classes)."""
    leaves: dict[type, tuple[str, str] | None] = {}
    for item in items:
        cls = type(item)
        if cls in leaves:
            miss = leaves[cls]
        else:
            miss = _mismatch(tp, item)
            if not issubclass(cls, _HOLDERS) and not dataclasses.is_dataclass(cls):
                leaves[cls] = miss
        if miss is not None:
            return miss
    return None


_HOLDERS = (Mapping, list, tuple, set, frozenset)
"""Values that hold other values: judged item by item, never by their class alone."""


def _first(misses: Iterator[tuple[str, str] | None]) -> tuple[str, str] | None:
    return next((miss for miss in misses if miss is not None), None)


def _name(tp: object) -> str:
    if tp is type(None):
        return "None"
    return tp.__name__ if isinstance(tp, type) else str(tp)


def declared(
    builder: StateGraph[Any, Any, Any, Any], output_types: Mapping[str, object] | None
) -> tuple[dict[str, object], frozenset[str], dict[str, object]]:
    """A builder's declared types, as the stamp reads them: each state channel's, the
    channels of its pydantic state schemas, and each node's output type."""
    outputs: dict[str, object] = {}
    for name, spec in builder.nodes.items():
        out = (output_types or {}).get(name) or prebuilt_output(spec.runnable)
        out = out or return_type(spec.runnable)
        if out is not None and not is_state_schema(builder, out):
            outputs[name] = out
    coerced = frozenset(
        key
        for schema in builder.schemas
        if isinstance(schema, type) and issubclass(schema, BaseModel)
        for key in schema.model_fields
    )
    return channel_types(builder), coerced, outputs


def head_misread(checked: Revival, head: CheckpointTuple | None, waits: bool) -> dict[str, str]:
    """``misread`` of a head's stored values when a resume hands them to nodes (the head
    ``waits`` on nodes); nothing for a complete head, from which no node reads."""
    if head is None or not waits or not checked.types:
        return {}
    return misread(checked, head.checkpoint.get("channel_values") or {})
