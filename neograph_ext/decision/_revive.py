"""Whether stored values come back as themselves: the rule, and its compile-time check.

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
  and ``__name__`` (not ``__qualname__``: a nested class is looked up at module level),
  then the call: a pydantic model is revived as ``cls(**data)``, else
  ``cls.model_construct(**data)``, so one whose data is not a mapping (a ``RootModel``)
  never comes back as itself. A parametrised generic model is looked up by its name
  (``Box[int]``), which pydantic binds in a module only where it is first parametrised
  at the module's top level.
  A class of ``__main__`` is importable only in a process whose main script defines it,
  so it counts as not revivable; when that is all (``Finding.script``) the script itself
  reads its values back, so the finding is guidance, never a refusal, and a value of it
  a rewind writes reads back in this process: only the others are ``refused``.
- A class that only the call or a generic's name fails for (``Finding.rebuilt``) is at
  hand in the process: a value of a channel declaring it (``Revival.validated``) that
  comes back as its data is validated into the declared type when a node reads it
  (``_validated_reads``), so it is guidance too, and no reason to rewind.
- At compile time every declared type (state channels, node outputs) is walked for the
  classes the serializer revives by path (``revived_classes``); each that cannot come
  back gets one warning naming it, the reason and the fix (``Finding``); strict mode
  makes it a ``GraphError``, but for a script's own class, which gets one INFO line per
  process and class instead: nothing needs doing while the script runs alone, and one
  rebuilt from data, which stays a warning.
- On resume, the head's stored values are checked against the declared types
  (``_misread``), by the same rule (``by_path``, ``same_class``).
- ``WriteChecks(readback=True)`` round-trips every value a node writes as it is
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
from typing import Annotated, Any, Literal, Optional, get_args, get_origin

from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import StateGraph
from pydantic import BaseModel, RootModel
from typing_extensions import is_typeddict

from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._introspect import channel_types, is_state_schema, return_type
from neograph_ext.decision._langgraph import (
    MSGPACK_ALLOWLIST,
    SAFE_MSGPACK_TYPES,
    expect_classes,
    strict_msgpack,
)
from neograph_ext.decision._langgraph_agents import prebuilt_output

__all__ = [
    "Allowed",
    "Finding",
    "Revival",
    "allowed_pairs",
    "by_path",
    "cleared",
    "declared",
    "declared_fields",
    "entrypoint_revival",
    "expected",
    "findings",
    "holds_refused",
    "node_inputs",
    "refused",
    "report",
    "revival",
    "revived_classes",
    "same_class",
    "type_hints",
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
    script: bool = False
    """Whether the one reason is that the class is the running script's (``__main__``):
    its values read back in this script, not in a process that imports the graph from a
    module (a worker, a server). Strict mode warns about it instead of refusing it."""
    rebuilt: bool = False
    """Whether the one reason is that the serializer cannot rebuild the class from its
    data (a ``RootModel``): a graph's node reading a channel that declares it is handed
    the data validated into the declared type. Strict mode warns about it instead of
    refusing it."""

    def describe(self) -> str:
        """One paragraph: the type, where it is declared, why, and the fix."""
        if self.rebuilt:
            name = self.type_name.rpartition(".")[2]
            return (
                f"values of {self.type_name} (declared by {', '.join(self.where)}) come back "
                f"from a checkpoint as their plain data: {'; '.join(self.reasons)}. A node of "
                f"the graph that reads the channel is handed the data validated into {name}; "
                f"the graph's state as read from outside (invoke's result, get_state) holds "
                f"the plain data. Fix, to have it read back everywhere: {self.fix}"
            )
        if self.script:
            return (
                f"values of {self.type_name} (declared by {', '.join(self.where)}) read back "
                f"as {self.type_name.rpartition('.')[2]} in this script alone: "
                f"{'; '.join(self.reasons)}. Fix, before a server or worker runs this graph: "
                f"{self.fix}"
            )
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
    """Channels whose declared type holds such a class, not a script's own (``refused``):
    converting a stored value of theirs cannot help, nor re-running its writer, it would
    not read back either."""
    inputs: Mapping[str, type] = dataclasses.field(default_factory=dict)
    """Per node whose input is a class of its own, not the state: a ``Send`` to it is
    stored with its argument whole, which must read back as that class."""
    subgraphs: Mapping[str, Revival] = dataclasses.field(default_factory=dict)
    """Per node running a compiled subgraph that declares a class stored by path, the
    subgraph's own: its checkpoint holds values the parent's head does not
    (``_subgraph_misread``)."""
    called: Mapping[str, Revival] = dataclasses.field(default_factory=dict)
    """Per graph a node's code calls that declares a class stored by path (keyed
    ``<node>/<name>``), its own: its checkpoints store that class too, so it is declared
    (``expected``); its values are not judged."""
    validated: frozenset[str] = frozenset()
    """Channels whose declared type holds a class the serializer cannot rebuild from its
    data (``Finding.rebuilt``) and none it cannot import: a value of theirs that comes
    back as data is validated into the declared type when a node reads it."""


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
            "it is defined in the script being run (`__main__`); a process that imports the "
            "graph from a module (a worker, LangGraph Server, a test run) has another "
            "`__main__` and gets a plain dict"
        )
    elif not same_class(_imported(module, name), cls):
        reasons.append(
            f"{_UNBOUND_GENERIC}, which the serializer looks up as `{module}.{name}`: "
            "pydantic binds that name in a module only where the model is first "
            "parametrised at the module's top level (not in a class body)"
            if _parametrised(cls)
            else f"`{module}.{name}` does not import it"
        )
    if issubclass(cls, RootModel):
        reasons.append(_NOT_A_MAPPING)
    return tuple(reasons)


_NOT_A_MAPPING = (
    "it is a pydantic RootModel, and LangGraph's serializer revives a model as "
    "`cls(**data)`, which fails for data that is not a mapping, and hands back the data"
)
_UNBOUND_GENERIC = "it is a parametrised generic model"


def _parametrised(cls: type) -> bool:
    """Whether ``cls`` is a pydantic generic model with its parameters given (``Box[int]``)."""
    meta = (
        getattr(cls, "__pydantic_generic_metadata__", None) if issubclass(cls, BaseModel) else None
    )
    return bool(meta and meta.get("origin") is not None)


def same_class(found: object, cls: type) -> bool:
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
    if _NOT_A_MAPPING in reasons:
        fixes.append(
            f"declare a model with a field holding {name}'s data in its place (or a pydantic "
            "state schema, which validates the channel on every read)"
        )
    if _parametrised(cls) and _rebuilt_only(reasons):
        return (
            f"parametrise it once at the top level of `{cls.__module__}`, before any class "
            f"body does (`{name.partition('[')[0]}Of = {name}`), or declare a pydantic state "
            "schema, which validates the channel on every read"
        )
    if _script_only(reasons):
        return (
            f"define {name} at the top level of an importable module and import it into the "
            "script; while the script runs alone, nothing needs doing"
        )
    if any("local class" in r or "__main__" in r or "does not import" in r for r in reasons):
        fixes.append(f"define {name} at the top level of an importable module")
    if any("allowlist" in r for r in reasons):
        fixes.append(
            f"declare {name} in the state schema (the type of a state key), or pass "
            f"allowed_msgpack_modules=[({cls.__module__!r}, {name!r})] to the saver's "
            "JsonPlusSerializer"
        )
    return "; or ".join(fixes)


def _script_only(reasons: Sequence[str]) -> bool:
    return len(reasons) == 1 and "`__main__`" in reasons[0]


def _rebuilt_only(reasons: Sequence[str]) -> bool:
    """Whether the class is importable and the serializer alone cannot rebuild it: the
    declared type, at hand in the process, validates its data."""
    return len(reasons) == 1 and (
        reasons[0] == _NOT_A_MAPPING or reasons[0].startswith(_UNBOUND_GENERIC)
    )


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
            stack.extend(type_hints(current).values())
            continue
        if by_path(current):
            yield current
            if issubclass(current, BaseModel):
                stack.extend(f.annotation for f in current.model_fields.values())
            elif dataclasses.is_dataclass(current) or _is_namedtuple(current):
                stack.extend(type_hints(current).values())


def by_path(cls: type) -> bool:
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


def type_hints(tp: type) -> dict[str, Any]:
    """``tp``'s resolved annotations, extras kept; none when they cannot be resolved."""
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
            fix = _fix(cls, reasons)
            found.append(
                Finding(
                    name,
                    tuple(places),
                    reasons,
                    fix,
                    _script_only(reasons),
                    _rebuilt_only(reasons),
                )
            )
    return tuple(found)


def refused(found: Iterable[Finding]) -> frozenset[str]:
    """The names of the classes of ``found`` whose values this process cannot read back:
    all but a script's own (``Finding.script``), which the script revives."""
    return frozenset(f.type_name for f in found if not f.script)


def holds_refused(tp: object, names: frozenset[str]) -> bool:
    """Whether declared type ``tp`` holds a class ``names`` (``refused``) lists."""
    return any(f"{c.__module__}.{c.__qualname__}" in names for c in revived_classes(tp))


def expected(checked: Revival) -> frozenset[tuple[str, str]]:
    """The ``(module, name)`` of each class ``checked`` declares, its subgraphs' too, that
    reads back in this process (a script's own class included): what the serializer
    revives, and what its ``allowed_msgpack_modules`` must list under strict msgpack."""
    refused_names = refused(checked.findings)
    found = {
        (cls.__module__, cls.__name__)
        for tp in [*checked.types.values(), *checked.inputs.values()]
        for cls in revived_classes(tp)
        if f"{cls.__module__}.{cls.__qualname__}" not in refused_names
    }
    inner = [*checked.subgraphs.values(), *checked.called.values()]
    return frozenset(found).union(*(expected(graph) for graph in inner))


def cleared(channel_types: Mapping[str, object], clears: Iterable[str]) -> dict[str, object]:
    """``channel_types``, each channel a node clears with None when it has nothing to say
    there (``Stamp.clears``: ``create_agent``'s ``structured_response``) typed as holding
    None too: a stored None there is a value LangGraph wrote, not one that failed to
    read back. A JSON schema (a dict, no type) stays as it is: nothing judges by it."""
    gone = frozenset(clears)
    return {
        ch: Optional[tp] if ch in gone and not isinstance(tp, Mapping) else tp  # noqa: UP045
        for ch, tp in channel_types.items()
    }


def revival(
    channel_types: Mapping[str, object],
    coerced: frozenset[str],
    outputs: Mapping[str, object],
    allowed: Allowed,
    inputs: Mapping[str, type] | None = None,
) -> Revival:
    """The compile-time check of a graph's declared types.

    Args:
        channel_types: Each state channel's declared type.
        coerced: The channels of a pydantic state schema.
        outputs: Each node's declared output type, where it declares one.
        inputs: Each node's input class, where a ``Send`` would carry one (``node_inputs``).
        allowed: What the graph's serializer lets through.
    """
    # A pydantic state schema validates its channels' values into their types on read.
    declared = [(f"channel `{ch}`", tp) for ch, tp in channel_types.items() if ch not in coerced]
    declared += [(f"node `{node}` output", tp) for node, tp in _updates(outputs, coerced)]
    found = findings(declared, allowed)
    channel_types = dict(channel_types)
    for _, key, tp in declared_fields(outputs):
        if channel_types.get(key, tp) in (Any, object):
            # An untyped channel holds what its writer declares: that is what must revive.
            channel_types[key] = tp
    bad = refused(f for f in found if not f.rebuilt)
    unrevivable = frozenset(ch for ch, tp in channel_types.items() if holds_refused(tp, bad))
    rebuilt = frozenset(f.type_name for f in found if f.rebuilt)
    validated = (
        frozenset(ch for ch, tp in channel_types.items() if holds_refused(tp, rebuilt))
        - unrevivable
    )
    return Revival(
        dict(channel_types), coerced, found, unrevivable, dict(inputs or {}), validated=validated
    )


def node_inputs(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, type]:
    """Per node whose input is declared as a class the serializer revives by path, or as
    a TypedDict holding one (a private input schema, as map-reduce graphs declare), and
    not as the state, that class: what a ``Send`` to the node carries."""
    return {
        name: spec.input_schema
        for name, spec in builder.nodes.items()
        if spec.input_schema is not builder.state_schema
        and isinstance(spec.input_schema, type)
        and (
            by_path(spec.input_schema)
            or (is_typeddict(spec.input_schema) and any(revived_classes(spec.input_schema)))
        )
    }


def entrypoint_revival(
    name: str, saves: Mapping[str, object], returns: Mapping[str, object], allowed: Allowed
) -> Revival:
    """``revival`` of an ``@entrypoint``: what it saves for its next turn, and what each
    of its tasks returns (their cached results are served on a resume).

    Args:
        name: The entrypoint's name.
        saves: Its one channel, ``__previous__``, and the type saved there, if declared.
        returns: Per task, the type it declares it returns.
        allowed: What the graph's serializer lets through.
    """
    declared = [(f"entrypoint `{name}` save", tp) for tp in saves.values()]
    declared += [(f"task `{task}` output", tp) for task, tp in sorted(returns.items())]
    # No node reads what an entrypoint saved or a task returned: nothing validates it.
    found = tuple(dataclasses.replace(f, rebuilt=False) for f in findings(declared, allowed))
    bad = refused(found)
    unrevivable = frozenset(ch for ch, tp in saves.items() if holds_refused(tp, bad))
    return Revival(dict(saves), frozenset(), found, unrevivable)


def _updates(
    outputs: Mapping[str, object], coerced: frozenset[str]
) -> Iterator[tuple[str, object]]:
    """What a node's declared output puts into channels: the fields of a model,
    dataclass or TypedDict it returns (LangGraph stores each field in its channel, never
    the returned object) but those of coerced channels, else the type itself
    (``output_types`` naming a value's type)."""
    for node, tp in outputs.items():
        if isinstance(tp, type) and (is_typeddict(tp) or by_path(tp)):
            yield from (
                (node, f) for _, key, f in declared_fields({node: tp}) if key not in coerced
            )
        else:
            yield node, tp


def declared_fields(outputs: Mapping[str, object]) -> Iterator[tuple[str, str, object]]:
    """``(node, key, type)`` for each field of the model, dataclass or TypedDict a node
    declares it returns: the updates of those keys."""
    for node, tp in outputs.items():
        if not isinstance(tp, type) or not (is_typeddict(tp) or by_path(tp)):
            continue
        if issubclass(tp, BaseModel):
            yield from ((node, k, f.annotation) for k, f in tp.model_fields.items())
        else:
            yield from ((node, k, hint) for k, hint in type_hints(tp).items())


def report(checked: Revival, graph_name: str, strict: bool) -> None:
    """Log each finding once (a script's own class at INFO, once per process), or, in
    strict mode, raise those but a script's classes and those a node is handed validated
    (``Finding.rebuilt``).
    LangGraph's own line for a declared class that reads back (``expect_classes``) is
    spared: it says nothing a user must act on.

    Raises:
        GraphError: ``strict`` and some declared class cannot come back as itself, even
            where the graph is imported from its module.
    """
    refused = [
        finding
        for finding in checked.findings
        if strict and not finding.script and not finding.rebuilt
    ]
    if refused:
        raise GraphError(
            f"graph {graph_name!r}: " + "\n".join(finding.describe() for finding in refused)
        )
    for finding in checked.findings:
        if finding.script:
            _note_script_class(finding.type_name)
        else:
            logger.warning("graph %r: %s", graph_name, finding.describe())
    expect_classes(expected(checked))


@functools.cache
def _note_script_class(type_name: str) -> None:
    """One short INFO line per process and class for a script's own class: the script
    reads its values back, so nothing needs doing until a worker or server runs the graph
    (a script compiles its graph again and again, and a class redefined there keeps its
    name). ``cache`` is what remembers the classes already named."""
    logger.info(
        "%s is the running script's own class: its values read back in this script, not in "
        "a worker or server that imports the graph (docs/read-back.md)",
        type_name,
    )


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
