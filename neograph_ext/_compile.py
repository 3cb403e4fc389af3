"""``compile``: LangGraph's ``StateGraph.compile`` plus a stamp, and the graph class
that carries it.

Rules:
- The compiled object is the one LangGraph built, its class swapped for a per-compile
  subclass of ``StampedGraph`` (or, with ``AutoResume`` attached, of
  ``AutoResumingGraph``) holding the stamp and the policies. Nothing is copied, so
  whatever LangGraph sets on a compiled graph (today or in a later version) stays.
- Every option is checked here, before anything runs: unknown nodes, channels or
  types, and (strict) values that cannot read back from a checkpoint.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, overload

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.typing import ContextT, InputT, OutputT, StateT

from neograph_ext._attach import Attached, Attachment, attached
from neograph_ext._auto_resume import AutoResumingGraph
from neograph_ext.decision._cache_key import cache_salts
from neograph_ext.decision._carrying import carrying
from neograph_ext.decision._entrypoint import entrypoint_function, entrypoint_stamp, seen_tasks
from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._introspect import build_stamp, channel_types
from neograph_ext.decision._langgraph import compile_options, fold_cache_keys, fold_task_cache_keys
from neograph_ext.decision._langgraph_calls import PREVIOUS_CHANNEL
from neograph_ext.decision._policy import LockPolicy, ResumePolicy, asked, resolve
from neograph_ext.decision._revive import (
    Revival,
    allowed_pairs,
    cleared,
    declared,
    declared_fields,
    entrypoint_revival,
    node_inputs,
    report,
    revival,
)
from neograph_ext.decision._stamp import STAMP_KEY, Stamp, stamp_ref
from neograph_ext.decision._subgraph_misread import called_revivals, subgraph_revivals
from neograph_ext.drivers._call_match import with_checked_calls
from neograph_ext.drivers._graph import StampedGraph, metadata_of
from neograph_ext.drivers._validated_reads import validating_reads
from neograph_ext.drivers._verify_writes import verifying
from neograph_ext.drivers._written_types import watching
from neograph_ext.storage._stamp_order import declared_release

__all__ = ["compile"]

_KEEP: Any = object()
"""``compile``'s default checkpointer: none for a builder, its own for a compiled graph."""


@overload
def compile(
    builder: StateGraph[StateT, ContextT, InputT, OutputT],
    *,
    checkpointer: Any = ...,
    output_types: Mapping[str, object] | None = ...,
    versions: Mapping[str, str] | None = ...,
    renames: Mapping[str, str] | None = ...,
    resume: ResumePolicy | None = ...,
    lock: LockPolicy | None = ...,
    attach: Iterable[Attachment] = ...,
    **compile_kwargs: Any,
) -> CompiledStateGraph[StateT, ContextT, InputT, OutputT]: ...


@overload
def compile(
    builder: CompiledStateGraph[StateT, ContextT, InputT, OutputT],
    *,
    checkpointer: Any = ...,
    output_types: Mapping[str, object] | None = ...,
    versions: Mapping[str, str] | None = ...,
    renames: Mapping[str, str] | None = ...,
    resume: ResumePolicy | None = ...,
    lock: LockPolicy | None = ...,
    attach: Iterable[Attachment] = ...,
    **compile_kwargs: Any,
) -> CompiledStateGraph[StateT, ContextT, InputT, OutputT]: ...


@overload
def compile(
    builder: Pregel[StateT, ContextT, InputT, OutputT],
    *,
    checkpointer: Any = ...,
    output_types: Mapping[str, object] | None = ...,
    versions: Mapping[str, str] | None = ...,
    renames: Mapping[str, str] | None = ...,
    resume: ResumePolicy | None = ...,
    lock: LockPolicy | None = ...,
    attach: Iterable[Attachment] = ...,
    **compile_kwargs: Any,
) -> Pregel[StateT, ContextT, InputT, OutputT]: ...


def compile(
    builder: StateGraph[Any, Any, Any, Any]
    | CompiledStateGraph[Any, Any, Any, Any]
    | Pregel[Any, Any, Any, Any],
    *,
    checkpointer: Any = _KEEP,
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    attach: Iterable[Attachment] = (),
    **compile_kwargs: Any,
) -> Pregel[Any, Any, Any, Any]:
    """Compile a StateGraph whose checkpoints carry the fingerprints of its types.

    Args:
        builder: Any LangGraph ``StateGraph``, or a graph compiled from one (a prebuilt
            agent too): compiled again from its builder with its options, the keywords
            given here winning. Or an ``@entrypoint``: a copy of it is stamped (each
            ``@task`` it can see, its return and save types; docs/functional.md).
        checkpointer: Passed to ``StateGraph.compile``; ``run`` needs one. ``None`` suits
            a subgraph added as a node, and a graph whose server injects one. Left out:
            none, or a compiled graph's own.
        output_types: Per node (for an entrypoint: per task name, or its own name), the
            type its results have; overrides the return annotation.
        versions: Per node (or task), an opaque string to bump after a prompt or logic change.
        renames: Old node name -> new name, for nodes that were only renamed: their
            stored results are kept instead of counting as a topology change.
        resume: What a resume does about changes (``ResumePolicy``) when a call gives none.
        lock: How a resume waits for a thread another process runs (``LockPolicy``).
        attach: Records that add to what the graph does, one of each kind:
            ``AutoResume()``, ``WriteChecks(...)``, ``budget.Budget(...)``,
            ``Telemetry()`` (each documents itself). 0.3's keywords for them still work,
            deprecated; ``auto_resume=False`` keeps 0.2's strict plain calls until 0.5.
        **compile_kwargs: Every other keyword of ``StateGraph.compile``.

    Returns:
        LangGraph's compiled graph, all of its API as usual, typed as LangGraph types it
        (a ``CompiledStateGraph`` of the builder's state, context, input and output
        types; an ``@entrypoint``'s ``Pregel``); what neograph-ext adds to any metadata
        is at most 256 bytes, and to a ``cache_policy``'s keys the node's fingerprint.

    Raises:
        ValueError: ``output_types``, ``versions`` or ``renames`` names an unknown node,
            or the resume policy an unknown channel or type.
        GraphError: ``builder`` is a ``Pregel`` no ``StateGraph`` or ``@entrypoint``
            built; an entrypoint is given an option only graphs have, or names a task it
            does not call; strict (``on_change="raise"``), a declared type's values cannot
            read back from a checkpoint; a deprecated keyword is given beside its record;
            ``attach`` holds something else; ``NEOGRAPH_EXT_RELEASE`` names no release.
    """
    given, compile_kwargs = asked("compile", resume, lock, compile_kwargs)
    extras, compile_kwargs = attached(attach, compile_kwargs)
    resume, lock = resolve(given, ResumePolicy(), LockPolicy())
    options = _Options(output_types, versions, renames, resume, lock, extras)
    if isinstance(builder, Pregel) and not isinstance(builder, CompiledStateGraph):
        checkpointer = builder.checkpointer if checkpointer is _KEEP else checkpointer
        return _compile_entrypoint(builder, checkpointer, options, compile_kwargs)
    return _compile_graph(builder, checkpointer, options, compile_kwargs)


@dataclass(frozen=True, slots=True)
class _Options:
    """What one ``compile`` was asked, resolved."""

    output_types: Mapping[str, object] | None
    versions: Mapping[str, str] | None
    renames: Mapping[str, str] | None
    resume: ResumePolicy
    lock: LockPolicy
    attached: Attached


def _compile_graph(
    builder: StateGraph[Any, Any, Any, Any] | CompiledStateGraph[Any, Any, Any, Any],
    checkpointer: Any,
    opts: _Options,
    compile_kwargs: Mapping[str, Any],
) -> StampedGraph:
    """``compile`` for a ``StateGraph`` (or a graph compiled from one)."""
    options: dict[str, Any] = {}
    config: RunnableConfig = {}
    if isinstance(builder, CompiledStateGraph):
        # A copy made by with_config() keeps its config (recursion_limit, tags, ...).
        options, config = compile_options(builder), builder.config or {}
        builder = builder.builder
    if checkpointer is not _KEEP:
        options["checkpointer"] = checkpointer
    options.update(compile_kwargs)
    stamp = build_stamp(
        builder,
        opts.output_types,
        opts.versions,
        opts.renames,
        paused_before=options.get("interrupt_before"),
    )
    types = channel_types(builder)
    carrying(types, opts.resume.keep_compatible, opts.resume.migrations)  # names checked
    graph = builder.compile(**options)
    channels, coerced, outputs = declared(builder, opts.output_types)
    channels = cleared(channels, stamp.clears or ())
    revived = _revival(builder, graph, channels, coerced, outputs)
    report(revived, graph.name, strict=opts.resume.on_change == "raise")
    validating_reads(graph, {ch: revived.types[ch] for ch in revived.validated})
    watching(graph, outputs, coerced, deep=opts.attached.checks.readback)
    if opts.attached.checks.readback:
        verifying(graph, frozenset(channels))
    fold_cache_keys(graph, cache_salts(stamp, _written(outputs)))
    # In place, not with_config(): a copy would lose what compile() set afterwards.
    graph.config = {
        **config,
        **(graph.config or {}),
        "metadata": {
            **metadata_of(config),
            **metadata_of(graph.config),
            STAMP_KEY: stamp_ref(stamp),
        },
    }
    return _stamped_as(
        graph, stamp, opts, neograph_ext_channel_types=types, neograph_ext_revival=revived
    )


def _written(outputs: Mapping[str, object]) -> dict[str, set[str]]:
    """Per node whose declared output type has fields, those fields: the channels its
    cached writes can hold (``cache_salts``)."""
    written: dict[str, set[str]] = {}
    for node, key, _ in declared_fields(outputs):
        written.setdefault(node, set()).add(key)
    return written


def _revival(
    builder: StateGraph[Any, Any, Any, Any],
    graph: Pregel[Any, Any, Any, Any],
    channels: dict[str, object],
    coerced: frozenset[str],
    outputs: dict[str, object],
) -> Revival:
    """Which of a graph's declared types cannot read back from its checkpoints, its
    subgraphs' included."""
    allowed = allowed_pairs(graph.checkpointer, getattr(graph, "_serde_allowlist", None))
    revived = revival(channels, coerced, outputs, allowed, node_inputs(builder))
    inner, inner_findings = subgraph_revivals(builder, allowed)
    if inner:
        revived = replace(revived, subgraphs=inner, findings=revived.findings + inner_findings)
    called = called_revivals(builder)
    return replace(revived, called=called) if called else revived


def _stamped_as(
    graph: Pregel[Any, Any, Any, Any], stamp: Stamp, opts: _Options, **attributes: Any
) -> StampedGraph:
    """``graph``, its class swapped for a per-compile subclass holding its stamp and
    options (and ``attributes``), before its own class."""
    # An entrypoint compiled again is a copy of a stamped one: its class is swapped anew.
    plain = next(c for c in type(graph).__mro__ if not issubclass(c, StampedGraph))
    auto_resume = opts.attached.auto_resume
    # Named as the class it replaces: LangGraph serialises a graph's runnables by class
    # path (get_graph().to_json()), and a drop-in must not change what it prints.
    graph.__class__ = type(
        plain.__name__,
        (AutoResumingGraph if auto_resume else StampedGraph, plain),
        {
            "__module__": plain.__module__,
            "__qualname__": plain.__qualname__,
            "neograph_ext_stamp": stamp,
            "neograph_ext_resume": opts.resume,
            "neograph_ext_lock": opts.lock,
            "neograph_ext_release": declared_release(),
            **({"neograph_ext_auto_resume": _plain_resume(opts)} if auto_resume else {}),
            "neograph_ext_verify_saver": opts.attached.checks.saver,
            "neograph_ext_budget": opts.attached.budget,
            "neograph_ext_telemetry": opts.attached.telemetry,
            "_neograph_ext_saved": weakref.WeakSet(),
            "_neograph_ext_described": weakref.WeakKeyDictionary(),
            **attributes,
        },
    )
    return graph  # type: ignore[return-value]


def _plain_resume(opts: _Options) -> ResumePolicy:
    """The policy plain calls plan with: the graph's, or (0.2's ``auto_resume=False``,
    ``Attached.strict_plain``) the graph's made strict, ``run`` keeping the graph's own."""
    return replace(opts.resume, on_change="raise") if opts.attached.strict_plain else opts.resume


def _compile_entrypoint(
    workflow: Pregel[Any, Any, Any, Any],
    checkpointer: Any,
    opts: _Options,
    options: Mapping[str, Any],
) -> StampedGraph:
    """``compile`` for an ``@entrypoint``: a copy of it (the decorated object stays as
    it was) stamped with its tasks' fingerprints (``_entrypoint``).

    Raises:
        GraphError: ``workflow`` is a ``Pregel`` that is no ``@entrypoint``, or is given
            an option that only a graph has.
    """
    func = entrypoint_function(workflow)
    if func is None:
        raise GraphError(
            f"graph {workflow.name!r} is a Pregel that neither a StateGraph nor "
            "@entrypoint built: compile a StateGraph builder or an @entrypoint"
        )
    refused = sorted({*options, *(["renames"] if opts.renames else [])})
    if refused:
        raise GraphError(
            f"entrypoint {workflow.name!r}: {', '.join(refused)} apply to graphs only; give "
            "@entrypoint(...) its own options (store, cache, ...)"
        )
    try:
        stamp, shape = entrypoint_stamp(workflow, opts.output_types, opts.versions)
        # keep_compatible and migrations cover what it saves for its next turn.
        types = {PREVIOUS_CHANNEL: shape.save} if shape.save is not None else {}
        carrying(types, opts.resume.keep_compatible, opts.resume.migrations)
    except ValueError as exc:
        raise GraphError(f"entrypoint {workflow.name!r}: {exc}") from exc
    graph = workflow.copy(update={"checkpointer": checkpointer})
    allowlist = getattr(workflow, "_serde_allowlist", None)
    if allowlist is not None:
        graph._serde_allowlist = allowlist
    allowed = allowed_pairs(graph.checkpointer, allowlist)
    revived = entrypoint_revival(shape.name, types, shape.returns, allowed)
    report(revived, graph.name, strict=opts.resume.on_change == "raise")
    salts = cache_salts(stamp, {})
    fold_task_cache_keys(seen_tasks(func), salts)
    with_checked_calls(graph, func)
    fold_cache_keys(graph, salts)
    config = graph.config or {}
    graph.config = {**config, "metadata": {**metadata_of(config), STAMP_KEY: stamp_ref(stamp)}}
    return _stamped_as(
        graph,
        stamp,
        opts,
        neograph_ext_entrypoint=shape,
        neograph_ext_channel_types=types,
        neograph_ext_revival=revived,
    )
