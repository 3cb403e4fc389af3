"""``compile``: LangGraph's ``StateGraph.compile`` plus a stamp, and the graph class
that carries it.

Rules:
- The compiled object is the one LangGraph built, its class swapped for a per-compile
  subclass of ``StampedGraph`` (or, with ``auto_resume=True``, of
  ``AutoResumingGraph``) holding the stamp and the policies. Nothing is copied, so
  whatever LangGraph sets on a compiled graph (today or in a later version) stays.
- Every option is checked here, before anything runs: unknown nodes, channels or
  types, and (strict) values that cannot read back from a checkpoint.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel

from neograph_ext._auto_resume import AutoResumingGraph
from neograph_ext._budget import Budget
from neograph_ext._call_match import with_checked_calls
from neograph_ext._carrying import carrying
from neograph_ext._entrypoint import entrypoint_function, entrypoint_stamp, seen_tasks
from neograph_ext._errors import GraphError
from neograph_ext._graph import StampedGraph, cache_salts, metadata_of
from neograph_ext._introspect import build_stamp, channel_types
from neograph_ext._langgraph import compile_options, fold_cache_keys, fold_task_cache_keys
from neograph_ext._langgraph_calls import PREVIOUS_CHANNEL
from neograph_ext._policy import LockPolicy, ResumePolicy, asked, resolve
from neograph_ext._revive import (
    allowed_pairs,
    cleared,
    declared,
    entrypoint_revival,
    node_inputs,
    report,
    revival,
)
from neograph_ext._stamp import STAMP_KEY, Stamp, stamp_ref
from neograph_ext._stamp_order import declared_release
from neograph_ext._subgraph_misread import subgraph_revivals
from neograph_ext._telemetry import Telemetry
from neograph_ext._verify_writes import verifying
from neograph_ext._written_types import watching

__all__ = ["compile"]

_KEEP: Any = object()
"""``compile``'s default checkpointer: none for a builder, its own for a compiled graph."""


def compile(
    builder: StateGraph[Any, Any, Any, Any]
    | CompiledStateGraph[Any, Any, Any, Any]
    | Pregel[Any, Any, Any, Any],
    *,
    checkpointer: Any = _KEEP,
    output_types: Mapping[str, object] | None = None,
    versions: Mapping[str, str] | None = None,
    renames: Mapping[str, str] | None = None,
    auto_resume: bool = False,
    resume: ResumePolicy | None = None,
    lock: LockPolicy | None = None,
    verify_writes: bool = False,
    verify_saver: bool = True,
    budget: Budget | None = None,
    telemetry: Telemetry | None = None,
    **compile_kwargs: Any,
) -> StampedGraph:
    """Compile a StateGraph whose checkpoints carry the fingerprints of its types.

    Args:
        builder: Any LangGraph ``StateGraph``, or a graph already compiled from one
            (``builder.compile(...)``, a prebuilt agent such as ``create_react_agent``):
            it is compiled again from its builder with the options it was compiled with,
            and the keywords given here win. Or an ``@entrypoint`` of the Functional API:
            a copy of it is stamped (each ``@task`` it can see, its return and save
            types; docs/functional.md), the decorated object left as it was.
        checkpointer: Passed to ``StateGraph.compile``; ``run`` needs one. ``None``
            suits a subgraph added as a node of a parent graph, and a graph whose
            server injects one. Left out: none, or a compiled graph's own.
        output_types: Per node (for an entrypoint: per task name, or the entrypoint's
            name), the type its results have; overrides the return annotation.
        versions: Per node (for an entrypoint: per task name, or the entrypoint's
            name), an opaque string to bump after a prompt or logic change that leaves
            the types alone.
        renames: Old node name -> new name, for nodes that were only renamed: their
            stored results are kept instead of counting as a topology change.
        auto_resume: ``False`` (default): plain calls behave as LangGraph's, stamped
            only; resume through ``run``. ``True``: every plain root call (``invoke``,
            ``stream``, ``ainvoke``, ``astream``, ``astream_events``; so every run a
            LangGraph server makes) plans first, under the graph's ``resume`` and
            ``lock`` policies, as ``run`` does: a change is rewound, migrated or (with
            ``ResumePolicy(on_change="raise")``) raises ``CheckpointSchemaError``
            before any node runs; unchanged, the call is LangGraph's own, with the
            caller's input and keywords (``durability`` included) as given.
        resume: What a resume does about changes (``ResumePolicy``): for ``run``, its
            twins and ``plan`` when they give none, and for plain calls with
            ``auto_resume=True``. Default: ``ResumePolicy()``.
        lock: How a resume waits for a thread another process runs (``LockPolicy``):
            for ``run`` and its twins when they give none, and for plain calls with
            ``auto_resume=True``. Default: ``LockPolicy()``.
        verify_writes: For development and CI: every value a node writes to a state key
            is round-tripped through the checkpointer's serializer as it is saved, and a
            step whose writes would not read back as written fails at once with
            ``WriteReadbackError``, before they are saved; a value not of the type
            its node declares is also judged by the items it holds.
        verify_saver: True (default): before ``run`` (or a twin, or an ``auto_resume``
            call) first invokes the graph on a saver, it reads the stamp's stored
            description back, once per saver class and process, and raises
            ``StampLostError`` if the saver dropped the config metadata the stamp rides
            in. False accepts such a saver: its threads plan as ``unverified``.
        budget: What each thread may spend (``Budget``: supersteps, chat-model calls,
            tokens; per thread or per turn), counted across resumes, rewinds, crashes
            and kills in a ledger stored with the thread; the next superstep or model
            call that would pass a cap raises ``BudgetExceededError`` instead of
            starting. Left out: nothing is counted.
        telemetry: ``Telemetry()``: every planned call (``run`` and its twins, plain
            calls with ``auto_resume``) dispatches the LangChain custom event
            ``neograph_ext.plan`` inside the graph's root run, tags and adds metadata to
            that run naming the decision, and (with ``opentelemetry-api`` installed)
            emits an OpenTelemetry log event and adds to counters. Default None: none of
            that, so event streams and traces are LangGraph's own.
        **compile_kwargs: Every other keyword of ``StateGraph.compile``. 0.2's
            ``keep_compatible=`` and ``migrations=`` (now ``ResumePolicy`` fields) still
            work, with a ``DeprecationWarning`` unless given their default.

    Returns:
        LangGraph's compiled graph (a ``CompiledStateGraph``); all of its API works
        as usual, and what neograph-ext adds to any metadata is at most 256 bytes.
        Nodes with a ``cache_policy`` get cache keys that include their fingerprint,
        so a result cached by other code is never served. A node that writes a value
        of another type than it declares for that key is logged as a warning, once per
        node and process (its stamped fingerprint describes the declared type).

    Raises:
        ValueError: ``output_types``, ``versions`` or ``renames`` names an unknown node,
            or the resume policy's ``keep_compatible`` or ``migrations`` an unknown
            channel or type.
        GraphError: ``builder`` is a ``Pregel`` neither a ``StateGraph`` nor
            ``@entrypoint`` built, or an entrypoint is given an option only graphs have
            (``renames``, ``StateGraph.compile``'s keywords; its ``keep_compatible`` and
            ``migrations`` cover what it saves for its next turn) or ``output_types`` /
            ``versions`` naming a task it does not call;
            or, with ``ResumePolicy(on_change="raise")``, a declared type's values cannot
            read back from a checkpoint as themselves (otherwise that is logged as a
            warning); or a 0.2 keyword is given with the policy that covers it; or
            ``budget`` is not a ``Budget``; or ``NEOGRAPH_EXT_RELEASE`` is set to no
            release (docs/deploys.md).
    """
    if budget is not None and not isinstance(budget, Budget):
        raise GraphError(
            f"compile(budget={budget!r}): pass a neograph_ext.Budget(max_supersteps=..., "
            "max_model_calls=..., max_tokens=...), or leave budget out"
        )
    given, compile_kwargs = asked("compile", resume, lock, compile_kwargs)
    resume, lock = resolve(given, ResumePolicy(), LockPolicy())
    options: dict[str, Any] = {}
    config: RunnableConfig = {}
    if isinstance(builder, CompiledStateGraph):
        # A copy made by with_config() keeps its config (recursion_limit, tags, ...).
        options, config = compile_options(builder), builder.config or {}
        builder = builder.builder
    elif isinstance(builder, Pregel):
        return _compile_entrypoint(
            builder,
            checkpointer=builder.checkpointer if checkpointer is _KEEP else checkpointer,
            output_types=output_types,
            versions=versions,
            renames=renames,
            auto_resume=auto_resume,
            resume=resume,
            lock=lock,
            verify_saver=verify_saver,
            options=compile_kwargs,
            budget=budget,
            telemetry=telemetry,
        )
    if checkpointer is not _KEEP:
        options["checkpointer"] = checkpointer
    options.update(compile_kwargs)
    stamp = build_stamp(builder, output_types, versions, renames)
    types = channel_types(builder)
    carrying(types, resume.keep_compatible, resume.migrations)  # names checked at compile
    graph = builder.compile(**options)
    channels, coerced, outputs = declared(builder, output_types)
    channels = cleared(channels, stamp.clears or ())
    allowed = allowed_pairs(graph.checkpointer, getattr(graph, "_serde_allowlist", None))
    revived = revival(channels, coerced, outputs, allowed, node_inputs(builder))
    inner, inner_findings = subgraph_revivals(builder, allowed)
    if inner:
        revived = replace(revived, subgraphs=inner, findings=revived.findings + inner_findings)
    report(revived, graph.name, strict=resume.on_change == "raise")
    watching(graph, outputs, coerced, deep=verify_writes)
    if verify_writes:
        verifying(graph, frozenset(channels))
    fold_cache_keys(graph, cache_salts(stamp))
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
        graph,
        stamp,
        resume,
        lock,
        auto_resume=auto_resume,
        verify_saver=verify_saver,
        neograph_ext_channel_types=types,
        neograph_ext_revival=revived,
        neograph_ext_budget=budget,
        neograph_ext_telemetry=telemetry,
    )


def _stamped_as(
    graph: Pregel[Any, Any, Any, Any],
    stamp: Stamp,
    resume: ResumePolicy,
    lock: LockPolicy,
    *,
    auto_resume: bool,
    verify_saver: bool,
    **attributes: Any,
) -> StampedGraph:
    """``graph``, its class swapped for a per-compile subclass holding its stamp and
    policies (and ``attributes``), before its own class."""
    # An entrypoint compiled again is a copy of a stamped one: its class is swapped anew.
    plain = next(c for c in type(graph).__mro__ if not issubclass(c, StampedGraph))
    # Named as the class it replaces: LangGraph serialises a graph's runnables by class
    # path (get_graph().to_json()), and a drop-in must not change what it prints.
    graph.__class__ = type(
        plain.__name__,
        (AutoResumingGraph if auto_resume else StampedGraph, plain),
        {
            "__module__": plain.__module__,
            "__qualname__": plain.__qualname__,
            "neograph_ext_stamp": stamp,
            "neograph_ext_resume": resume,
            "neograph_ext_lock": lock,
            "neograph_ext_release": declared_release(),
            **({"neograph_ext_auto_resume": resume} if auto_resume else {}),
            "neograph_ext_verify_saver": verify_saver,
            "_neograph_ext_saved": weakref.WeakSet(),
            "_neograph_ext_described": weakref.WeakKeyDictionary(),
            **attributes,
        },
    )
    return graph  # type: ignore[return-value]


def _compile_entrypoint(
    workflow: Pregel[Any, Any, Any, Any],
    *,
    checkpointer: Any,
    output_types: Mapping[str, object] | None,
    versions: Mapping[str, str] | None,
    renames: Mapping[str, str] | None,
    auto_resume: bool,
    resume: ResumePolicy,
    lock: LockPolicy,
    verify_saver: bool,
    options: Mapping[str, Any],
    budget: Budget | None,
    telemetry: Telemetry | None,
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
    refused = sorted({*options, *(["renames"] if renames else [])})
    if refused:
        raise GraphError(
            f"entrypoint {workflow.name!r}: {', '.join(refused)} apply to graphs only; give "
            "@entrypoint(...) its own options (store, cache, ...)"
        )
    try:
        stamp, shape = entrypoint_stamp(workflow, output_types, versions)
        # keep_compatible and migrations cover what it saves for its next turn.
        types = {PREVIOUS_CHANNEL: shape.save} if shape.save is not None else {}
        carrying(types, resume.keep_compatible, resume.migrations)
    except ValueError as exc:
        raise GraphError(f"entrypoint {workflow.name!r}: {exc}") from exc
    graph = workflow.copy(update={"checkpointer": checkpointer})
    allowlist = getattr(workflow, "_serde_allowlist", None)
    if allowlist is not None:
        graph._serde_allowlist = allowlist
    allowed = allowed_pairs(graph.checkpointer, allowlist)
    revived = entrypoint_revival(shape.name, types, shape.returns, allowed)
    report(revived, graph.name, strict=resume.on_change == "raise")
    salts = cache_salts(stamp)
    fold_task_cache_keys(_seen_tasks_of(workflow), salts)
    with_checked_calls(graph, func)
    fold_cache_keys(graph, salts)
    config = graph.config or {}
    graph.config = {**config, "metadata": {**metadata_of(config), STAMP_KEY: stamp_ref(stamp)}}
    return _stamped_as(
        graph,
        stamp,
        resume,
        lock,
        auto_resume=auto_resume,
        verify_saver=verify_saver,
        neograph_ext_entrypoint=shape,
        neograph_ext_channel_types=types,
        neograph_ext_revival=revived,
        neograph_ext_budget=budget,
        neograph_ext_telemetry=telemetry,
    )


def _seen_tasks_of(workflow: Pregel[Any, Any, Any, Any]) -> dict[str, object]:
    func = entrypoint_function(workflow)
    return seen_tasks(func) if func is not None else {}
