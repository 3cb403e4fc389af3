"""The operations a flow yields (``_flow``, ``_keep``, ``_migrate``, ...) and a driver
performs (``_drivers``).

Each is a record of one basic read, write or invocation, and says what is sent back: the
flows stay I/O-free, and what takes several writes (keeping tasks, carrying values) is a
flow of these. A new operation is a record here and one row of ``_drivers.ROWS``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

from neograph_ext.decision._decision import ResumePlan
from neograph_ext.decision._stamp import Stamp

__all__ = [
    "Flow",
    "Idle",
    "Invoke",
    "ListThread",
    "LoadDescriptions",
    "Op",
    "Put",
    "PutWrites",
    "ReadInnerHeads",
    "ReadLineage",
    "ReadStampOrder",
    "ReadSubgraphValues",
    "ReadTasks",
    "ReadTuple",
    "ReadValues",
    "Store",
    "TakeLock",
    "Tell",
]

_T = TypeVar("_T")


class ReadTuple(NamedTuple):
    """Read one checkpoint (``get_tuple``): sends back a ``CheckpointTuple`` or None."""

    config: RunnableConfig


class ReadLineage(NamedTuple):
    """Read ``head_id``'s lineage light, through the saver's own tables
    (``_storage.lineage_of``): sends back the records, oldest first; None when no reader
    knows the saver or the reader leaves the thread out (then list it: ``ListThread``)."""

    config: RunnableConfig
    head_id: str
    next_nodes: frozenset[str]
    described: Mapping[str, Stamp]
    """Stamp descriptions at hand, given to the records at once."""


class ListThread(NamedTuple):
    """List every root-namespace checkpoint of the thread: sends back a list."""

    config: RunnableConfig
    namespace: str = ""
    """A subgraph's namespace to list instead (``_inside``)."""


class LoadDescriptions(NamedTuple):
    """Look stamp descriptions up in the stamp store: sends back those found, by id."""

    wanted: frozenset[str]


class ReadValues(NamedTuple):
    """A checkpoint's values as LangGraph rebuilds them (``get_state``): sends them back."""

    config: RunnableConfig


class ReadSubgraphValues(NamedTuple):
    """The values the unfinished subgraphs of ``nodes`` a checkpoint waits on hold in
    their own checkpoints (``get_state(subgraphs=True)``,
    ``_subgraph_misread.subgraph_values``): sends back a mapping per node."""

    config: RunnableConfig
    nodes: frozenset[str]


class ReadInnerHeads(NamedTuple):
    """Where the unfinished subgraphs of ``nodes`` a checkpoint waits on stand, at any
    depth (``get_state(subgraphs=True)``, ``_history.inner_heads``): sends back a tuple
    of ``InnerHead``."""

    config: RunnableConfig
    nodes: frozenset[str]


class ReadStampOrder(NamedTuple):
    """Read the order in which the database first stored each stamp
    (``_stamp_order.order``): sends back the stamp ids, oldest first."""

    owner: str
    """The stamp id of the code that wrote the thread last: the order a process kept
    is read again only when it lacks this stamp."""
    declared: tuple[str, str] | None = None
    """The running code's stamp id and the release it declares (``NEOGRAPH_EXT_RELEASE``
    at compile), ranked with that release whatever the database kept for the stamp."""


class ReadTasks(NamedTuple):
    """A checkpoint's tasks as LangGraph names them (``get_state(...).tasks``): sends
    them back."""

    config: RunnableConfig


class TakeLock(NamedTuple):
    """Take the thread's lock, held until the flow ends."""


class Store(NamedTuple):
    """A read or write of the package's own records (a stamp's description and place in
    the order of stamps, a budget ledger): the sync driver calls ``run(*args)``, the async
    one awaits ``arun(*args)``; sends back what they return."""

    run: Callable[..., Any]
    arun: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...]


class Put(NamedTuple):
    """Store one checkpoint (the saver's ``put``): sends back its config."""

    config: RunnableConfig
    """Names its parent."""
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    versions: dict[str, Any]


class PutWrites(NamedTuple):
    """Store one task's pending writes on a checkpoint (the saver's ``put_writes``)."""

    config: RunnableConfig
    writes: Sequence[tuple[str, Any]]
    task_id: str
    path: Sequence[Any] | None = None
    """The task's path, for a saver that sorts writes by it (``_langgraph.writes_path``);
    None: filed under none."""


class Invoke(NamedTuple):
    """Invoke (or stream) the graph: sends back what ``invoke`` returned."""

    input: Any
    config: RunnableConfig
    mark: str
    """The run mark its checkpoints carry (``_stamp.encode_run``)."""
    kwargs: Mapping[str, Any]


class Idle(NamedTuple):
    """Nothing to invoke: a stream replays the thread as it stands and ends the flow;
    ``run`` tells the decision outside any graph run and goes on to read the result."""

    config: RunnableConfig
    """The checkpoint whose state is streamed."""
    kwargs: Mapping[str, Any]


class Tell(NamedTuple):
    """Tell traces and metrics the call's decision (``Telemetry`` attached), before
    the invocation it is told inside (``_telemetry``)."""

    plan: ResumePlan


Op = (
    ReadTuple
    | ReadLineage
    | ListThread
    | LoadDescriptions
    | ReadValues
    | ReadStampOrder
    | ReadSubgraphValues
    | ReadInnerHeads
    | ReadTasks
    | TakeLock
    | Store
    | Put
    | PutWrites
    | Invoke
    | Idle
    | Tell
)
Flow = Generator[Op, Any, _T]
