"""What neograph-ext relies on that LangGraph does not state as public API.

Rules:
- Everything here was read from LangGraph's source and checked on langgraph 1.2.24
  (checkpoint 4.3.2); what agent builders build is known in ``_langgraph_agents``,
  checked on the other versions of ``CHECKED_ON``. ``tests/unit/test_langgraph_knowledge.py``
  runs each piece against the installed libraries and fails loudly when it changes.
- Each function degrades to "not known" (``None``, an empty result), never to a guess:
  callers then fall back to the coarser public behaviour.
"""

from __future__ import annotations

import binascii
import contextlib
import dis
import hashlib
import inspect
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from langgraph.channels.ephemeral_value import EphemeralValue
from langgraph.channels.last_value import LastValue
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.pregel import Pregel
from langgraph.pregel._write import PASSTHROUGH, ChannelWrite, ChannelWriteTupleEntry
from langgraph.types import CachePolicy, Send
from xxhash import xxh3_128_hexdigest

from neograph_ext.decision._cache_key import CacheSalt

__all__ = [
    "CHECKED_ON",
    "COMPILE_OPTIONS",
    "COUNTERS_KEY",
    "MSGPACK_ALLOWLIST",
    "NULL_TASK",
    "SAFE_MSGPACK_TYPES",
    "STORED_IS_AVAILABLE",
    "TASKS_CHANNEL",
    "TASK_ID_KEY",
    "compile_options",
    "custom_chunk",
    "delta_channels",
    "delta_snapshot",
    "expect_classes",
    "fold_cache_keys",
    "fold_task_cache_keys",
    "hash_task_id",
    "head_tasks",
    "strict_msgpack",
    "task_writers",
    "unsaved_subgraph",
    "watch_updates",
    "writes_path",
]

CHECKED_ON: Mapping[str, str] = {
    "langgraph": "1.2.24",
    "langgraph-prebuilt": "1.1.3",
    "langchain": "1.5.2",
    "deepagents": "0.7.32",
}
"""The versions whose insides this module was read from and tested against."""

NULL_TASK = "00000000-0000-0000-0000-000000000000"
"""LangGraph's task id for writes that belong to no task (a ``Command``'s update)."""

COMPILE_OPTIONS: Mapping[str, str] = {
    "checkpointer": "checkpointer",
    "cache": "cache",
    "store": "store",
    "interrupt_before": "interrupt_before_nodes",
    "interrupt_after": "interrupt_after_nodes",
    "debug": "debug",
    "name": "name",
    "transformers": "stream_transformers",
}
"""Each keyword of ``StateGraph.compile`` -> the attribute of the compiled graph that
keeps it. A keyword missing here is carried by a same-named attribute, if any."""

STORED_IS_AVAILABLE: frozenset[type] = frozenset({LastValue, EphemeralValue})
"""Channel types (exactly these) whose value is available whenever a checkpoint stores
one: LangGraph stores only available values, and these hold nothing else."""

TASKS_CHANNEL = "__pregel_tasks"
"""The channel holding the ``Send``s queued for the next step (push tasks)."""

COUNTERS_KEY = "counters_since_delta_snapshot"
"""Checkpoint metadata: per DeltaChannel, updates and steps since its last snapshot."""

TASK_ID_KEY = "__pregel_task_id"
"""The ``configurable`` key naming the task a graph runs inside: a graph invoked with it
is a subgraph of that task's graph."""

try:
    from langgraph.checkpoint.serde import _msgpack
except ImportError:  # langgraph-checkpoint 3
    _msgpack = None  # type: ignore[assignment]

MSGPACK_ALLOWLIST: bool = _msgpack is not None
"""Whether ``JsonPlusSerializer`` revives a class only when its ``(module, name)`` is
allowed (``allowed_msgpack_modules``, LangGraph's safe types, the pairs ``compile``
collects from the state schema). langgraph-checkpoint 3 has no msgpack allowlist: it
revives every class it can import."""

SAFE_MSGPACK_TYPES: frozenset[tuple[str, ...]] = (
    _msgpack.SAFE_MSGPACK_TYPES if _msgpack is not None else frozenset()
)
"""The ``(module, name)`` pairs every serializer with an allowlist revives."""


def expect_classes(pairs: frozenset[tuple[str, str]]) -> None:
    """Spare the log LangGraph's "Deserializing unregistered type" line for ``pairs``, the
    classes a compiled graph declares and reads back: LangGraph warns once per class and
    process that it revives off an allowlist, and keeps the classes it warned of
    (``jsonplus._warned_unregistered_types``); these are marked as warned already. A
    class no graph declares still gets its line."""
    from langgraph.checkpoint.serde import jsonplus

    warned = getattr(jsonplus, "_warned_unregistered_types", None)
    if isinstance(warned, set):
        warned.update(pairs)


def strict_msgpack() -> bool:
    """Whether a serializer built without an allowlist revives only allowed classes
    (``LANGGRAPH_STRICT_MSGPACK``, read when LangGraph is imported); never without
    ``MSGPACK_ALLOWLIST``."""
    return _msgpack is not None and bool(_msgpack.STRICT_MSGPACK_ENABLED)


_PULL = "__pregel_pull"
_PUSH = "__pregel_push"
_BRANCH_TO = "branch:to:"
"""The prefix of the channel each ``StateGraph`` node is triggered by (``CHANNEL_BRANCH_TO``)."""


def compile_options(graph: CompiledStateGraph[Any, Any, Any, Any]) -> dict[str, Any]:
    """The keywords ``StateGraph.compile`` was given to build ``graph``.

    Args:
        graph: A graph compiled from a ``StateGraph``.

    Returns:
        Per keyword of ``StateGraph.compile``, the value ``graph`` holds; keywords the
        graph keeps no attribute for are left out (LangGraph's default applies).
    """
    found: dict[str, Any] = {}
    for option in list(inspect.signature(StateGraph.compile).parameters)[1:]:
        attribute = COMPILE_OPTIONS.get(option, option)
        if hasattr(graph, attribute):
            found[option] = getattr(graph, attribute)
    return found


def fold_cache_keys(graph: Pregel[Any, Any, Any, Any], salts: Mapping[str, CacheSalt]) -> None:
    """Make each cached node's cache key depend on ``salts[node]``: the types its writes
    and its input's values have (``_cache_key``).

    LangGraph keys a node's cached writes by the node's function name and
    ``cache_policy.key_func(input)``; nothing in the key changes when the code that
    produced the writes does. The compiled graph's ``PregelNode.cache_policy`` (where
    ``compile`` put the node's own or the builder's default policy) is replaced by one
    whose key starts with the salt of the input it is given; ``ttl`` and the user's key
    function are kept.

    Args:
        graph: The freshly compiled graph (changed in place).
        salts: Per node name, what its key is salted with.
    """
    for name, node in graph.nodes.items():
        policy = getattr(node, "cache_policy", None)
        if isinstance(policy, CachePolicy) and name in salts:
            # An entrypoint compiled again shares the salted policy: salt the user's key.
            inner = cast(
                "Callable[..., str | bytes]", getattr(policy.key_func, _SALTED, policy.key_func)
            )
            node.cache_policy = replace(policy, key_func=_salted(inner, salts[name].of))


def fold_task_cache_keys(tasks: Mapping[str, object], salts: Mapping[str, CacheSalt]) -> None:
    """``fold_cache_keys`` for an entrypoint's ``@task``s: their ``cache_policy`` lives on
    the task object (``_TaskFunction.cache_policy``), which LangGraph hands each call.

    The task object is the user's, shared by every entrypoint calling it, so its key is
    salted from the user's own key function each time (``_SALTED``), never twice. A
    task's input is its arguments, no state: only the salt's fixed part applies.

    Args:
        tasks: Per task name, the object ``@task`` made (others are skipped).
        salts: Per task name, what its key is salted with.
    """
    for name, task in tasks.items():
        policy = getattr(task, "cache_policy", None)
        if isinstance(policy, CachePolicy) and name in salts and callable(policy.key_func):
            inner = cast(
                "Callable[..., str | bytes]", getattr(policy.key_func, _SALTED, policy.key_func)
            )
            salt = CacheSalt(salts[name].fixed)  # no channels: its fixed part
            salted = replace(policy, key_func=_salted(inner, salt.of))
            task.cache_policy = salted  # type: ignore[attr-defined]


_SALTED = "__neograph_ext_inner__"
"""Attribute of a salted key function: the user's key function it wraps."""


def _salted(
    key_func: Callable[..., str | bytes], salt: Callable[[object], str]
) -> Callable[..., bytes]:
    def key(*args: Any, **kwargs: Any) -> bytes:
        inner = key_func(*args, **kwargs)
        # A node's key function is given its input alone; a task's, its arguments.
        given = args[0] if len(args) == 1 and not kwargs else None
        prefix = f"neograph_ext:{salt(given)}:".encode()
        return prefix + (inner.encode() if isinstance(inner, str) else inner)

    setattr(key, _SALTED, key_func)
    return key


def watch_updates(
    graph: Pregel[Any, Any, Any, Any],
    watchers: Mapping[str, Callable[[Sequence[tuple[str, Any]]], None]],
) -> None:
    """Make each named node of ``graph`` show its watcher the state updates LangGraph
    reads from the node's output, as its writer takes them.

    ``StateGraph.compile`` gives every node one ``ChannelWrite`` whose first entry is a
    ``ChannelWriteTupleEntry``: its mapper turns the node's output (a dict, a model, a
    ``Command``, a list of those) into ``(channel, value)`` updates, inside the node's
    task. That mapper is wrapped: no runnable is added, the node's writers keep their
    number, types and names, and a watcher that raises fails the task.

    Args:
        graph: The freshly compiled graph (changed in place).
        watchers: Per node name, called with each non-empty list of updates.
    """
    for name, watch in watchers.items():
        node = graph.nodes.get(name)
        writer = (
            next((w for w in node.writers if isinstance(w, ChannelWrite)), None) if node else None
        )
        if node is None or writer is None or not writer.writes:
            continue
        first = writer.writes[0]
        if not isinstance(first, ChannelWriteTupleEntry) or first.value is not PASSTHROUGH:
            continue
        entries = [first._replace(mapper=_watched(first.mapper, watch)), *writer.writes[1:]]
        # Same sequence type: LangGraph concatenates consecutive writers' entries.
        writer.writes = type(writer.writes)(entries)
        for cached in ("flat_writers", "node"):  # built from ``writers``: build them again
            vars(node).pop(cached, None)


def _watched(
    mapper: Callable[[Any], Sequence[tuple[str, Any]] | None],
    watch: Callable[[Sequence[tuple[str, Any]]], None],
) -> Callable[[Any], Sequence[tuple[str, Any]] | None]:
    def updates(output: Any) -> Sequence[tuple[str, Any]] | None:
        found = mapper(output)
        if found:
            watch(found)
        return found

    return updates


def task_writers(
    parent: Mapping[str, Any],
    child: Mapping[str, Any],
    step: int,
    ran: Sequence[str],
    writes: Sequence[tuple[str, str, Any]],
) -> dict[str, str] | None:
    """Which node each task that produced ``child`` was, by task id.

    A task's id is a hash of its parent checkpoint's id, the step, the node's name and
    its triggers (a pull task: every channel the node subscribes to) or the index of
    its ``Send`` in the parent's queue (a push task). ``versions_seen[node]`` names the
    triggers that held a value: a ``StateGraph`` node a join triggered never saw its own
    ``branch:to:`` channel written, so the ids with it are derived too.

    Args:
        parent: The raw checkpoint the step started from.
        child: The raw checkpoint the step produced.
        step: ``parent``'s step.
        ran: The nodes that ran in the step.
        writes: ``parent``'s pending writes: ``(task id, channel, value)``.

    Returns:
        Task id -> node name for every task id among ``writes``, or None when one of
        them matches no node (another LangGraph version, or a graph since changed).
    """
    seen: Mapping[str, Mapping[str, Any]] = child.get("versions_seen", {})
    pulled = [
        (name, triggers)
        for name in ran
        for triggers in (set(seen.get(name, {})), {*seen.get(name, {}), _BRANCH_TO + name})
    ]
    known = _task_ids(parent, step, pulled)
    tasks = {task for task, _, _ in writes}
    return known if known is not None and tasks <= set(known) else None


def head_tasks(
    head: Mapping[str, Any], step: int, triggers: Mapping[str, Sequence[str]]
) -> dict[str, str] | None:
    """Task id -> node name of each task the head checkpoint runs next: a pull task of
    each node of ``triggers`` (the nodes due, with every channel each subscribes to) and
    a push task per ``Send`` queued; None when the head's id is not LangGraph's.

    Args:
        head: The raw checkpoint.
        step: Its step.
        triggers: Per node due by its triggers, the channels that trigger it.
    """
    return _task_ids(head, step, [(name, set(names)) for name, names in triggers.items()])


def _task_ids(
    parent: Mapping[str, Any], step: int, pulled: Sequence[tuple[str, set[str]]]
) -> dict[str, str] | None:
    """The ids of the tasks of ``parent``'s next step: pull tasks of ``pulled`` (a node
    and its triggers), and the queued ``Send``s."""
    try:
        namespace = binascii.unhexlify(str(parent["id"]).replace("-", ""))
    except (binascii.Error, ValueError):
        return None
    hash_id = _xxhash_id if int(parent.get("v", 1)) > 1 else _uuid5_id
    known: dict[str, str] = {}
    for name, triggers in pulled:
        known[hash_id(namespace, name, str(step + 1), name, _PULL, *sorted(triggers))] = name
    queued = parent.get("channel_values", {}).get(TASKS_CHANNEL) or ()
    for index, send in enumerate(queued):
        if isinstance(send, Send):
            known[hash_id(namespace, send.node, str(step + 1), send.node, _PUSH, str(index))] = (
                send.node
            )
    return known


def hash_task_id(version: int, namespace: bytes, *parts: str) -> str:
    """A task id as LangGraph derives it from a checkpoint of format ``version``
    (``_xxhash_str`` from format 2 on, ``_uuid5_str`` before), ``namespace`` being the
    checkpoint id's bytes."""
    return (_xxhash_id if version > 1 else _uuid5_id)(namespace, *parts)


def _xxhash_id(namespace: bytes, *parts: str) -> str:
    text = xxh3_128_hexdigest(namespace + "".join(parts).encode())
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"


def _uuid5_id(namespace: bytes, *parts: str) -> str:
    sha = hashlib.sha1(namespace, usedforsecurity=False)
    sha.update("".join(parts).encode())
    text = sha.hexdigest()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"


_KINDS: weakref.WeakKeyDictionary[
    Pregel[Any, Any, Any, Any], tuple[object, object, dict[str, Any], bool]
] = weakref.WeakKeyDictionary()
"""Per compiled graph: the channel and node mappings read, its DeltaChannels and
``unsaved_subgraph``; asked on every resume, fixed once it is compiled. Its benefit shows
in bench figure 2a: without it, a no-change resume of a finished thread costs 1.66x of
``get_state`` (walking the graph's nodes for subgraphs), with it about 1.1x."""


def _kinds(graph: Pregel[Any, Any, Any, Any]) -> tuple[dict[str, Any], bool]:
    cached = _KINDS.get(graph)
    if cached is not None and cached[0] is graph.channels and cached[1] is graph.nodes:
        return cached[2], cached[3]
    found = (_delta_channels(graph), _unsaved_subgraph(graph))
    _KINDS[graph] = (graph.channels, graph.nodes, *found)
    return found


def delta_channels(graph: Pregel[Any, Any, Any, Any]) -> dict[str, Any]:
    """The graph's ``DeltaChannel`` channels by name (``_delta_channels``), cached."""
    return _kinds(graph)[0]


def unsaved_subgraph(graph: Pregel[Any, Any, Any, Any]) -> bool:
    """``_unsaved_subgraph``, cached."""
    return _kinds(graph)[1]


def _delta_channels(graph: Pregel[Any, Any, Any, Any]) -> dict[str, Any]:
    """The graph's ``DeltaChannel`` channels by name; none before langgraph 1.2.

    A ``DeltaChannel`` (beta) stores no value in ``channel_values`` except a
    ``_DeltaSnapshot`` every ``snapshot_frequency`` updates; a checkpoint's value is
    rebuilt from the nearest snapshot on its parent chain plus the pending writes of
    every ancestor from its parent up (``get_delta_channel_history``), so a checkpoint
    written as a child of a base with pending writes replays them.
    """
    try:
        from langgraph.channels.delta import DeltaChannel
    except ImportError:  # langgraph < 1.2
        return {}
    return {name: ch for name, ch in graph.channels.items() if isinstance(ch, DeltaChannel)}


def delta_snapshot(value: object) -> object:
    """What LangGraph stores in ``channel_values`` for a DeltaChannel snapshot: the
    ancestor walk of every later checkpoint stops there (``create_checkpoint``)."""
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    return _DeltaSnapshot(value)


def writes_path(put_writes: Callable[..., Any], path: Sequence[Any]) -> dict[str, str]:
    """The keywords that file writes under a task's path: ``{"task_path": ...}`` for a
    saver whose ``put_writes`` (or ``aput_writes``) takes one, else none.

    A saver sorts a checkpoint's writes by ``(task_path, task_id, idx)``, the order the
    loop applies a superstep's tasks in, and writes saved without a path sort first: a
    DeltaChannel rebuilt from them would hold a kept task's write before those of the
    tasks that ran before it (``writes_sort_key``). Written as LangGraph's loop does
    (``task_path_str``, ``put_writes_accepts_task_path``).
    """
    if inspect.signature(put_writes).parameters.get("task_path") is None:
        return {}
    return {"task_path": _task_path(tuple(path))}


def _task_path(part: object) -> str:
    if isinstance(part, tuple | list):
        return f"~{', '.join(_task_path(x) for x in part)}"
    return f"{part:010d}" if isinstance(part, int) else str(part)


def _unsaved_subgraph(graph: Pregel[Any, Any, Any, Any]) -> bool:
    """Whether a node of ``graph``, at any depth, runs a graph compiled with
    ``checkpointer=False``, found as LangGraph finds subgraphs (``find_subgraph_pregel``:
    the node's runnable, its steps, and the nonlocals of its function).

    LangGraph 1.2.24 passes the root's ``durability`` to every subgraph, and such a
    subgraph fails under ``"sync"`` (``AttributeError: '...PregelLoop' object has no
    attribute '_put_checkpoint_fut'``), so ``run`` may default to ``"sync"`` only
    without one.
    """
    from langchain_core.runnables import RunnableLambda, RunnableSequence
    from langgraph._internal._runnable import RunnableCallable, RunnableSeq

    seen: set[int] = set()
    candidates: list[object] = [node.bound for node in graph.nodes.values()]
    while candidates:
        found = candidates.pop()
        if id(found) in seen:
            continue
        seen.add(id(found))
        if isinstance(found, Pregel):
            if found.checkpointer is False:
                return True
            if found is not graph:
                candidates.extend(node.bound for node in found.nodes.values())
        elif isinstance(found, RunnableSequence | RunnableSeq):
            candidates.extend(found.steps)
        elif isinstance(found, RunnableLambda):
            candidates.extend(found.deps)
        elif isinstance(found, RunnableCallable):
            func = found.func if found.func is not None else found.afunc
            if func is not None:
                candidates.extend(getattr(nl, "__self__", nl) for nl in _reached(func))
    return False


def custom_chunk(
    graph: Pregel[Any, Any, Any, Any], kwargs: Mapping[str, Any], data: object
) -> tuple[Any, ...]:
    """The chunk ``graph.stream(..., **kwargs)`` yields for ``data`` written to the
    ``custom`` stream by the root graph (``Pregel._output``): none unless its stream
    modes include ``custom``."""
    mode = kwargs.get("stream_mode") or graph.stream_mode
    if "custom" not in ([mode] if isinstance(mode, str) else mode):
        return ()
    if kwargs.get("version") == "v2":
        return ({"type": "custom", "ns": (), "data": data},)
    subgraphs = bool(kwargs.get("subgraphs"))
    if isinstance(mode, list):
        return (((), "custom", data) if subgraphs else ("custom", data),)
    return (((), data) if subgraphs else data,)


def _reached(func: Callable[..., Any]) -> list[object]:
    """What ``func`` reaches outside its own scope: its captured values, the globals it
    names and each value along an attribute path it loads, read from its code object as
    LangGraph 1.2's ``get_function_nonlocals`` reads them. langchain-core's (which
    LangGraph 1.1 uses) reads the source file, a blocking call on an event loop."""
    func = getattr(func, "__func__", func)
    wrapped = getattr(func, "__wrapped__", None)
    func = getattr(wrapped, "__func__", wrapped) if callable(wrapped) else func
    if not isinstance(func, types.FunctionType):
        return []
    cells: dict[str, object] = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
        with contextlib.suppress(ValueError):  # an empty cell: a def not bound yet
            cells[name] = cell.cell_contents
    found: list[object] = list(cells.values())
    codes = [func.__code__]
    for code in codes:
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        value: object = None
        for instruction in dis.get_instructions(code):
            if instruction.opname == "LOAD_GLOBAL":
                value = func.__globals__.get(instruction.argval)
            elif instruction.opname == "LOAD_DEREF":
                value = cells.get(instruction.argval)
            elif instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                value = getattr(value, instruction.argval, None)
            else:
                value = None  # any other instruction ends the path: `a, b.c` is not `a.c`
            if value is not None:
                found.append(value)
    return found
