"""The operations a resume flow yields (``_flow``) and a driver performs (``_drivers``).

Each is a record of what to read, write or invoke, and says what is sent back: the
flows stay I/O-free, and the two drivers perform each one, differing by ``await`` alone.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from langchain_core.runnables import RunnableConfig

from neograph_ext._carrying import Carrying
from neograph_ext._decision import ResumePlan
from neograph_ext._stamp import Stamp

__all__ = [
    "CarryValues",
    "ClaimStep",
    "Flow",
    "Idle",
    "Invoke",
    "KeepTasks",
    "ListThread",
    "LoadDescriptions",
    "Op",
    "ReadLineage",
    "ReadStampOrder",
    "ReadSubgraphValues",
    "ReadTuple",
    "ReadValues",
    "StoreDescription",
    "TakeLock",
    "Tell",
]

_T = TypeVar("_T")


class ReadTuple(NamedTuple):
    """Read one checkpoint (``get_tuple``): sends back a ``CheckpointTuple`` or None."""

    config: RunnableConfig


class ReadLineage(NamedTuple):
    """List the thread and reduce it to ``head_id``'s lineage (``_history.lineage``):
    sends back the records, oldest first."""

    config: RunnableConfig
    head_id: str
    next_nodes: frozenset[str]
    described: Mapping[str, Stamp]
    """Stamp descriptions at hand, given to the records at once."""


class ListThread(NamedTuple):
    """List every root-namespace checkpoint of the thread: sends back a list."""

    config: RunnableConfig


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


class ReadStampOrder(NamedTuple):
    """Read the order in which the database first stored each stamp
    (``_stamp_order.order``): sends back the stamp ids, oldest first."""

    owner: str
    """The stamp id of the code that wrote the thread last: the order a process kept
    is read again only when it lacks this stamp."""


class TakeLock(NamedTuple):
    """Take the thread's lock, held until the flow ends."""


class StoreDescription(NamedTuple):
    """Store the stamp's description and check the saver keeps stamps, before the first
    invocation writes checkpoints naming it."""


class CarryValues(NamedTuple):
    """Write the fork that carries ``plan``'s values (``_migrate.carry``): sends back
    the written checkpoint's config."""

    plan: ResumePlan
    config: RunnableConfig
    carrying: Carrying
    decision: str = "migrate"


class KeepTasks(NamedTuple):
    """Fork ``target``, keeping the finished tasks of ``nodes`` (``_keep.keep``)."""

    target: RunnableConfig
    nodes: frozenset[str]
    mark: str
    upto: int | None = None
    """For an entrypoint: only calls before this position are kept."""


class ClaimStep(NamedTuple):
    """Store a claim on the waiting checkpoint ``config`` names (``_claim``)."""

    config: RunnableConfig
    writes: Sequence[tuple[str, Any]]


class Invoke(NamedTuple):
    """Invoke (or stream) the graph: sends back what ``invoke`` returned."""

    input: Any
    config: RunnableConfig
    mark: str
    """The run mark its checkpoints carry (``_stamp.encode_run``)."""
    kwargs: Mapping[str, Any]


class Idle(NamedTuple):
    """Nothing to invoke: the thread's result (``run``) or replay (``stream``)."""

    config: RunnableConfig
    """The checkpoint whose state is returned or streamed."""
    stored: tuple[Any] | None
    """The result rebuilt from the head (``_head_state.stored_result``), when it can be."""
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
    | TakeLock
    | StoreDescription
    | CarryValues
    | KeepTasks
    | ClaimStep
    | Invoke
    | Idle
    | Tell
)
Flow = Generator[Op, Any, _T]
