"""What a StateGraph builder declares, read into its stamp (``build_stamp``).

Rules:
- Only the builder's static structure is read, never run: node output types (a
  node's return annotation, or ``output_types``), ``versions``, successors, the tools a
  node's calls must fit, subgraphs and state channel types.
- A compiled subgraph used as a node is fingerprinted inside its node: by the stamp
  it carries (``_stamp.Stamped``), or, compiled by plain LangGraph, from its builder.
  So is a compiled graph that a node's code or its tools call (``_called``), keyed by
  the name the code holds it by; a graph that calls itself back is left out there.
- What agent builders build (``ToolNode``, ``create_agent``, deep agents) is known
  through ``_langgraph_agents`` alone.
- A type that cannot be fingerprinted (an unresolved forward reference) is left out
  and logged at debug level: the stamp errs on judging by what the node wrote.
"""

from __future__ import annotations

import inspect
import logging
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, NamedTuple, get_args, get_origin

from langgraph.channels import BinaryOperatorAggregate, Topic
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command
from pydantic import BaseModel

try:
    from langgraph.channels.delta import DeltaChannel

    _FOLDING: tuple[type, ...] = (BinaryOperatorAggregate, DeltaChannel)
except ImportError:  # langgraph < 1.2
    _FOLDING = (BinaryOperatorAggregate,)

from neograph_ext.decision._called import called_graphs
from neograph_ext.decision._fingerprint import Signature, UnresolvedTypeError, digest, signature
from neograph_ext.decision._langgraph_agents import (
    RESPONSE_CHANNEL,
    makes_tool_calls,
    overwrites,
    prebuilt_output,
    response_schema,
    sub_agents,
    tool_callables,
    tool_objects,
    tool_schemas,
)
from neograph_ext.decision._stamp import (
    STAMP_FORMAT,
    NodeStamp,
    Stamp,
    Stamped,
    canonical_digest,
    stamp_id,
)

__all__ = ["build_stamp", "channel_types", "is_state_schema", "return_type"]

logger = logging.getLogger("neograph_ext")


def build_stamp(
    builder: StateGraph[Any, Any, Any, Any],
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
    *,
    enclosing: frozenset[int] = frozenset(),
    paused_before: Iterable[str] | str | None = None,
) -> Stamp:
    """Fingerprint a StateGraph builder's nodes and channels.

    Args:
        builder: The uncompiled graph.
        output_types: Per node, a type that overrides the callable's return annotation.
        versions: Per node, an opaque string to bump after a prompt or logic change.
        renames: Old node name -> current name, for nodes that were only renamed.
        enclosing: The ids of the builders whose stamps this one is part of (a graph
            called from a node's code may call its caller back): not stamped again.
        paused_before: The compiled graph's ``interrupt_before``: a turn paused before
            the node that starts it shows an earlier turn's values, so none is replaced.

    Returns:
        The stamp to write into every checkpoint of the compiled graph.

    Raises:
        ValueError: ``output_types``, ``versions`` or ``renames`` names a node the
            builder lacks (``renames``: as new name), or renames onto a current node.
    """
    renames = dict(renames or {})
    _check_names(builder, output_types or {}, versions or {}, renames)
    sigs = _Sigs()
    known = _Known(
        builder,
        dict(output_types or {}),
        dict(versions or {}),
        _successors(builder),
        _tool_digests(builder, sigs.remember),
        _tool_output_digests(builder, sigs.remember),
        # An agent builder's model call made the tool calls that its middleware nodes
        # route on: the tools' schemas are its own, and no router's.
        {name for name, spec in builder.nodes.items() if makes_tool_calls(spec.runnable)},
        _send_digests(builder, sigs.remember),
        sigs,
        enclosing | {id(builder)},
    )
    nodes = {name: _node_stamp(known, name, spec.runnable) for name, spec in builder.nodes.items()}
    channels = _channel_digests(builder, sigs)
    return Stamp(
        v=STAMP_FORMAT,
        id=stamp_id(nodes, channels),
        nodes=nodes,
        channels=channels,
        sigs=dict(sigs),
        renames=renames or None,
        clears=(RESPONSE_CHANNEL,) if _response_type(builder) is not None else None,
        accumulates=_accumulating(builder),
        replaced=_replaced(builder, known.output_types, paused_before),
    )


class _Sigs(dict[str, Signature]):
    """The signatures a stamp describes, by digest."""

    def remember(self, tp: object) -> str:
        """``tp``'s digest, its signature kept."""
        sig = signature(tp)
        key = digest(sig)
        self[key] = sig
        return key


class _Known(NamedTuple):
    """What stamping each node of one builder reads."""

    builder: StateGraph[Any, Any, Any, Any]
    output_types: dict[str, object]
    versions: dict[str, str]
    successors: Mapping[str, set[str]]
    tools: dict[str, dict[str, str]]
    tool_outputs: dict[str, dict[str, str]]
    callers: set[str]
    sends: dict[str, dict[str, str]]
    sigs: _Sigs
    enclosing: frozenset[int]


def _channel_digests(builder: StateGraph[Any, Any, Any, Any], sigs: _Sigs) -> dict[str, str]:
    """Each state channel's type digest; a type that cannot be resolved is left out."""
    channels: dict[str, str] = {}
    for key, tp in channel_types(builder).items():
        try:
            channels[key] = (
                canonical_digest(dict(tp)) if isinstance(tp, Mapping) else sigs.remember(tp)
            )
        except UnresolvedTypeError as exc:
            logger.debug("channel %r: type not fingerprinted: %s", key, exc)
    return channels


def _check_names(
    builder: StateGraph[Any, Any, Any, Any],
    output_types: Mapping[str, object],
    versions: Mapping[str, str],
    renames: Mapping[str, str],
) -> None:
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


def _node_stamp(known: _Known, name: str, runnable: object) -> NodeStamp:
    """One node's fingerprint: its output type, version, successors, what runs inside
    it, and the tools it routes to."""
    succ = tuple(sorted(known.successors.get(name, ())))
    sub, inner = _inside(runnable, known)
    fields: dict[str, Any] = {
        "out": _output_digest(known, name, runnable),
        "ver": known.versions.get(name),
        "succ": succ,
        "sub": sub,
    }
    if known.callers:
        routed = _routed_tools(("*",), known.tools) if name in known.callers else None
    else:
        routed = _routed_tools(succ, known.tools)
    if routed is not None:  # only when set: fingerprints of other nodes stay as they were
        fields["tools"] = routed
    if known.tool_outputs.get(name):  # as ``tools``: a ToolNode of str tools keeps its fp
        fields["outputs"] = known.tool_outputs[name]
    if name in known.sends:  # as ``tools``: a node that sends nothing keeps its fingerprint
        fields["sends"] = known.sends[name]
    return NodeStamp(fp=canonical_digest(fields), inner=inner, **fields)


def _output_digest(known: _Known, name: str, runnable: object) -> str | None:
    out_type = (
        known.output_types[name]
        if name in known.output_types
        else prebuilt_output(runnable) or return_type(runnable)
    )
    if out_type is None or is_state_schema(known.builder, out_type):
        # ``-> State`` says nothing about which keys the node writes: judge it by the
        # channels it actually wrote, as an unannotated node.
        return None
    try:
        return known.sigs.remember(out_type)
    except UnresolvedTypeError as exc:
        logger.debug("node %r: output type not fingerprinted: %s", name, exc)
        return None


def _inside(runnable: object, known: _Known) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """The digests of what runs inside a node (a subgraph's, an agent's, a graph its code
    calls), and their inner fingerprints; their signatures join ``known.sigs``."""
    inside = _subgraph_stamp(runnable, known.enclosing)
    if inside is not None:
        known.sigs.update(inside.sigs)
        return _sub_digests(inside), _inner_digests(inside)
    if isinstance(runnable, Pregel):
        return _plain_sub(runnable), None
    sub: dict[str, str] = {}
    inner: dict[str, str] = {}
    for name, found in _reached(runnable, known.enclosing).items():
        if isinstance(found, Stamp):
            known.sigs.update(found.sigs)
            sub.update({f"{name}/{k}": fp for k, fp in _sub_digests(found).items()})
            inner.update({f"{name}/{k}": fp for k, fp in _inner_digests(found).items()})
        else:
            sub.update({f"{name}/{k}": fp for k, fp in found.items()})
    return sub or None, inner or None


def _accumulating(builder: StateGraph[Any, Any, Any, Any]) -> tuple[str, ...] | None:
    """The channels whose reducer folds each write into the value (a
    ``BinaryOperatorAggregate``, a ``DeltaChannel``, a ``Topic`` that accumulates): an
    earlier write stays in it after a later one."""
    found = sorted(
        k
        for k, ch in builder.channels.items()
        if isinstance(ch, _FOLDING) or (isinstance(ch, Topic) and ch.accumulate)
    )
    return tuple(found) or None


def _replaced(
    builder: StateGraph[Any, Any, Any, Any],
    output_types: Mapping[str, object],
    paused_before: Iterable[str] | str | None,
) -> tuple[str, ...] | None:
    """The channels every turn writes before any node reads them: each node a turn starts
    with (where ``START`` leads) writes them on every call without reading them. That is
    ``create_agent``'s model node for its structured response (``overwrites``), and a
    node whose input schema leaves the channel out while its declared output type, a
    TypedDict, requires it."""
    starts = {end for start, end in builder.edges if start == START}
    starts |= _routes(builder).get(START, set())
    paused = {"*"} if isinstance(paused_before, str) else set(paused_before or ())
    if not starts or not starts <= builder.nodes.keys() or "*" in paused or starts & paused:
        return None  # END, any node ("*"), or a pause before the turn's first node
    found: frozenset[str] | None = None
    for name in starts:
        spec = builder.nodes[name]
        out = output_types.get(name) or return_type(spec.runnable)
        own = overwrites(spec.runnable) | _required_unread(builder, spec.input_schema, out)
        found = own if found is None else found & own
    return tuple(sorted((found or frozenset()) & builder.channels.keys())) or None


def _required_unread(
    builder: StateGraph[Any, Any, Any, Any], input_schema: object, out: object
) -> frozenset[str]:
    """The keys a node's declared output type (a TypedDict) requires that its input schema
    (not the graph's state) leaves out: written on every call, never read."""
    if out is None or input_schema is None or input_schema is builder.state_schema:
        return frozenset()
    try:
        written, read = _fields(out), _fields(input_schema)
    except UnresolvedTypeError as exc:
        logger.debug("node types not resolved: %s", exc)
        return frozenset()
    if written is None or read is None or written[0] != "typeddict":
        return frozenset()
    return frozenset(k for k, field in written[1].items() if field["req"]) - read[1].keys()


def _fields(tp: object) -> tuple[str, dict[str, Any]] | None:
    """A class's kind and fields, as its signature describes them; None for another type."""
    sig = signature(tp)
    found = sig["defs"].get(sig["root"]) if isinstance(sig["root"], str) else None
    if not isinstance(found, dict) or "fields" not in found:
        return None
    return found["kind"], found["fields"]


def _reached(runnable: object, enclosing: frozenset[int]) -> dict[str, Stamp | dict[str, str]]:
    """The graphs a node runs without being one, by name: the sub-agents of a ToolNode's
    tools (deep agents' ``task``), then the graphs its code or its tools call
    (``_called``); each as its stamp, or its structure when it has no builder."""
    graphs: dict[str, object] = {}
    for tool in (tool_objects(runnable) or {}).values():
        graphs.update(sub_agents(tool) or {})
    for name, called in called_graphs(runnable).items():
        graphs.setdefault(name, called)
    found: dict[str, Stamp | dict[str, str]] = {}
    for name, graph in graphs.items():
        if id(getattr(graph, "builder", None)) in enclosing:
            continue  # a graph calling its caller back: stamped as the caller already
        stamp = _subgraph_stamp(graph, enclosing)
        plain = _plain_sub(graph) if stamp is None else None
        if stamp is not None or plain:
            found[name] = stamp if stamp is not None else plain or {}
    return found


def is_state_schema(builder: StateGraph[Any, Any, Any, Any], tp: object) -> bool:
    """Whether ``tp`` is one of the builder's state schemas (``-> State``)."""
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
                    canonical_digest(dict(schema))
                    if isinstance(schema, Mapping)
                    else remember(schema)
                )
            except (UnresolvedTypeError, TypeError, ValueError) as exc:
                logger.debug("tool %r: argument schema not fingerprinted: %s", tool, exc)
        found[name] = digests
    return found


def _tool_output_digests(
    builder: StateGraph[Any, Any, Any, Any], remember: Callable[[object], str]
) -> dict[str, dict[str, str]]:
    """Per ``ToolNode`` node: each bound tool's declared return type digest, by tool name.

    A tool returning ``str`` (or declaring nothing) is left out: its content is stored as
    it is returned, and most tools declare it, so their nodes keep their fingerprints.
    """
    found: dict[str, dict[str, str]] = {}
    for name, spec in builder.nodes.items():
        digests: dict[str, str] = {}
        for tool, fn in (tool_callables(spec.runnable) or {}).items():
            tp = _declared_return(fn)
            if tp in (None, type(None), Any, str):
                continue
            try:
                digests[tool] = remember(tp)
            except UnresolvedTypeError as exc:
                logger.debug("tool %r: return type not fingerprinted: %s", tool, exc)
        if digests:
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


def _successors(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, set[str]]:
    """Static destinations of each node; ``*`` stands for 'any node'."""
    out = _routes(builder)
    for start, end in builder.edges:
        out.setdefault(start, set()).add(end)
    for starts, end in builder.waiting_edges:
        for start in starts:
            out.setdefault(start, set()).add(end)
    return out


def _routes(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, set[str]]:
    """Where each node routes by a branch or a ``Command``: the only ways it can ``Send``."""
    out: dict[str, set[str]] = {}
    for start, branches in builder.branches.items():
        for branch in branches.values():
            ends = branch.ends.values() if branch.ends is not None else ("*",)
            out.setdefault(start, set()).update(ends)
    for name, spec in builder.nodes.items():
        if isinstance(spec.ends, dict) or spec.ends:
            out.setdefault(name, set()).update(spec.ends)
    return out


def _send_digests(
    builder: StateGraph[Any, Any, Any, Any], remember: Callable[[object], str]
) -> dict[str, dict[str, str]]:
    """Per node that routes by a branch or a ``Command``, the digest of the input type of
    each node it may route to that takes an input of its own (its first parameter's
    type, as LangGraph reads a node's input schema): the model of the ``Send`` argument
    it makes, which a stored ``Send`` holds in that node's old shape."""
    graph_schemas = {builder.state_schema, builder.input_schema, builder.output_schema}
    inputs: dict[str, str] = {}
    for name, spec in builder.nodes.items():
        if spec.input_schema not in graph_schemas:
            try:
                inputs[name] = remember(spec.input_schema)
            except UnresolvedTypeError as exc:
                logger.debug("node %r: input type not fingerprinted: %s", name, exc)
    found: dict[str, dict[str, str]] = {}
    for name, ends in _routes(builder).items():
        targets = inputs.keys() if "*" in ends else ends & inputs.keys()
        if targets:
            found[name] = {target: inputs[target] for target in sorted(targets)}
    return found


def _callable_of(runnable: object) -> Callable[..., Any] | None:
    for attr in ("func", "afunc"):
        fn = getattr(runnable, attr, None)
        if callable(fn):
            return typing.cast("Callable[..., Any]", fn)
    return None


def return_type(runnable: object) -> object | None:
    """The node's declared output type, or None when it declares nothing useful."""
    fn = _callable_of(runnable)
    if fn is None:
        return None
    tp = _declared_return(fn)
    if tp is Command or get_origin(tp) is Command:
        # Command[...] parametrises the goto targets, not the update's type.
        return None
    if tp in (None, type(None), Any, dict) or get_origin(tp) is dict:
        return None
    return tp


def _declared_return(fn: object) -> object | None:
    """A function's return annotation, the result type of a coroutine function's; None
    when it has none or it does not resolve."""
    try:
        hints = typing.get_type_hints(inspect.unwrap(fn), include_extras=True)  # type: ignore[arg-type]
    except (NameError, TypeError, AttributeError) as exc:
        logger.debug("return annotation of %r not resolved: %s", fn, exc)
        return None
    tp: object = hints.get("return")
    origin = get_origin(tp)
    if origin in (typing.Coroutine, typing.Awaitable) or (
        origin is not None and getattr(origin, "__name__", "") in ("Coroutine", "Awaitable")
    ):
        tp = get_args(tp)[-1]
    return tp


def _subgraph_stamp(runnable: object, enclosing: frozenset[int]) -> Stamp | None:
    """The stamp of a compiled subgraph used as a node or called, however it was compiled."""
    if isinstance(runnable, Stamped):
        return runnable.neograph_ext_stamp
    builder = getattr(runnable, "builder", None)
    if isinstance(runnable, CompiledStateGraph) and isinstance(builder, StateGraph):
        # Compiled by plain LangGraph: its builder is fingerprinted as compile() would.
        return build_stamp(builder, enclosing=enclosing)
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
    return {name: canonical_digest(name) for name in runnable.nodes if not name.startswith("__")}


def _inner_digests(stamp: Stamp) -> dict[str, str]:
    """Every digest inside a subgraph, by path, to explain a change field by field."""
    found = {f"channel:{k}": fp for k, fp in stamp.channels.items()}
    for name, node in stamp.nodes.items():
        if node.out is not None:
            found[f"{name}/out"] = node.out
        found.update({f"{name}/tool:{k}": fp for k, fp in (node.tools or {}).items()})
        found.update({f"{name}/output:{k}": fp for k, fp in (node.outputs or {}).items()})
        found.update({f"{name}/{k}": fp for k, fp in (node.inner or {}).items()})
        # A nested subgraph's own node digests: what a rewind inside it judges by.
        found.update({f"{name}/{k}": fp for k, fp in (node.sub or {}).items()})
    return found


def _response_type(builder: StateGraph[Any, Any, Any, Any]) -> object | None:
    """The structured response a ``create_agent`` graph asks for, if it asks for one."""
    schemas = (response_schema(spec.runnable) for spec in builder.nodes.values())
    return next((schema for schema in schemas if schema is not None), None)


def channel_types(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, object]:
    """Each state key's annotated type, as the user declared it.

    ``create_agent`` types its ``structured_response`` with a type variable: the schema
    its ``response_format`` asks for is that channel's type, for the stamp and for what
    keeping, migrating and reading back judge its stored value by.
    """
    types = _declared_channel_types(builder)
    response = _response_type(builder)
    if response is not None and RESPONSE_CHANNEL in types:
        types[RESPONSE_CHANNEL] = response
    return types


def _declared_channel_types(builder: StateGraph[Any, Any, Any, Any]) -> dict[str, object]:
    """Each state key's type as its schema annotates it."""
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
