"""Writing the fork that carries kept and migrated values: the carrying stage after ``_plan``.

Rules:
- What may be carried, and the conversion of the values, are decided in ``_carrying``;
  this module reads the values, has them converted and writes the fork.
- Carrying writes exactly one checkpoint through the saver's public API (``_fork``): a
  fork of the base checkpoint (the head, or a rewind's target) under the current stamp,
  holding the converted values at new channel versions. On the head, its pending writes
  are copied too, so its next nodes and pending interrupts stay; the fork records how
  many tasks' writes it holds (``_keep.KEEP_KEY``), so one left without them by a kill
  is planned from its base again. Nothing is deleted or overwritten.
- A migration that raises, or returns what does not validate, writes nothing.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointMetadata, CheckpointTuple
from langgraph.pregel import Pregel

from neograph_ext.decision._carrying import Carrying, converted, readable, rebuilt_channels
from neograph_ext.decision._claim import CLAIM
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._errors import GraphError
from neograph_ext.decision._langgraph import NULL_TASK, delta_channels
from neograph_ext.decision._operations import Flow, ReadTasks, ReadTuple, ReadValues, Store
from neograph_ext.decision._stamp import (
    RUN_KEY,
    STAMP_KEY,
    Stamp,
    encode_run,
    read_marks,
    stamp_ref,
)
from neograph_ext.drivers._thread import ThreadCall, at_checkpoint
from neograph_ext.flows._fork import Fork, address, forked_checkpoint, put_fork
from neograph_ext.flows._keep import KEEP_KEY
from neograph_ext.flows._keep_calls import refiled_calls
from neograph_ext.storage._stamp_order import aregister, register
from neograph_ext.storage._stamp_store import asave, save

__all__ = ["Rebuilt", "carry", "fork"]


def fork(
    saver: BaseCheckpointSaver[Any],
    base: CheckpointTuple,
    values: Mapping[str, Any],
    stamp: Stamp,
    decision: str,
    *,
    keep_writes: bool,
    took_from: str | None = None,
    turn_input: str | None = None,
) -> Fork:
    """The checkpoint that carries ``values`` on from ``base``; writes nothing.

    Args:
        saver: Knows how the thread's channel versions grow.
        base: The checkpoint to fork.
        values: The converted values, per channel.
        stamp: The current stamp.
        decision: The run mark's decision (``migrate`` or ``accept``).
        keep_writes: Copy the base's pending writes (its finished tasks, interrupts).
        took_from: The stamp id of the code the fork takes the thread over from, if any.
        turn_input: The digest of the input the base's turn started with, where no run
            mark of the base records it (a turn plain LangGraph started).
    """
    checkpoint = forked_checkpoint(base)
    metadata: dict[str, Any] = dict(base.metadata or {})
    versions: dict[str, Any] = {}
    # Above every version of the checkpoint, as LangGraph's own loop does: a channel's
    # versions on other branches then never collide with the new one.
    latest = max(checkpoint["channel_versions"].values(), default=None)
    for channel, value in values.items():
        version = saver.get_next_version(latest, None)
        checkpoint["channel_values"][channel] = value
        checkpoint["channel_versions"][channel] = version
        versions[channel] = version
    stored = read_marks(metadata)[1].input or turn_input
    metadata.update(
        {
            "source": "fork",
            "parents": {},
            STAMP_KEY: stamp_ref(stamp),
            RUN_KEY: encode_run(stamp, decision, stored, took_from=took_from),
        }
    )
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in base.pending_writes or () if keep_writes else ():
        if task_id != CLAIM:  # the base's owner's: the fork is its writer's (``_claim``)
            grouped.setdefault(task_id, []).append((channel, value))
    # What the fork owes: a fork holding fewer tasks' writes was left by a killed
    # process, and is planned from its base again (``_keep.incomplete``). The writes of
    # no task go first, so a fork holding every task's writes holds all of them.
    metadata[KEEP_KEY] = len(grouped.keys() - {NULL_TASK})
    writes = sorted(grouped.items(), key=lambda item: item[0] != NULL_TASK)
    return Fork(
        address(base),
        checkpoint,
        typing.cast("CheckpointMetadata", metadata),
        versions,
        tuple((task, tuple(found)) for task, found in writes),
    )


def _base_config(plan: ResumePlan, config: RunnableConfig) -> RunnableConfig:
    """The checkpoint to carry from: a rewind's target, or else the head."""
    return at_checkpoint(
        config, plan.checkpoint_id if plan.kind is PlanKind.REWIND else plan.head_id
    )


def carry(
    call: ThreadCall,
    config: RunnableConfig,
    plan: ResumePlan,
    options: Carrying,
    decision: str = "migrate",
) -> Flow[RunnableConfig]:
    """Write the fork that carries ``plan.migrated`` (none, for ``accept``).

    Args:
        call: The thread's graph (whose ``get_state`` names the fork's tasks), saver and
            current stamp.
        config: Names the thread.
        plan: The decision: ``migrate``, a rewind with ``migrated``, or any plan whose
            head is to be stamped as current (``accept``).
        options: The graph's ``Carrying``.
        decision: The run mark's decision.

    Returns:
        The config of the checkpoint written.

    Raises:
        CheckpointSchemaError: A migration failed; nothing was written.
    """
    graph, saver, stamp = call.graph, call.saver, call.stamp
    base = _found((yield ReadTuple(_base_config(plan, config))), plan)
    sources: dict[str, CheckpointTuple | None] = {}
    for cp in _sources(plan):
        sources[cp] = yield ReadTuple(at_checkpoint(config, cp))
    channels = rebuilt_channels(options, delta_channels(graph))
    rebuilt: dict[str, Mapping[str, Any]] = {}
    for cp in [base.checkpoint["id"], *sources] if channels else ():
        rebuilt[cp] = yield ReadValues(at_checkpoint(config, cp))
    values = _values(options, plan, base, sources, Rebuilt(channels, rebuilt))
    new = fork(
        saver,
        base,
        values,
        stamp,
        decision,
        keep_writes=plan.kind is not PlanKind.REWIND,
        took_from=plan.taken_from,
        turn_input=plan.turn_input,
    )
    new = _with_calls(graph, base, new)
    # Read before anything is written: if the state cannot be read, nothing is.
    old = (yield ReadTasks(new.parent)) if new.writes else ()
    yield Store(save, asave, (saver, stamp))  # the fork names the stamp: it must be found
    yield Store(register, aregister, (saver, stamp))
    return (yield from put_fork(graph, saver, new, old))


def _with_calls(graph: Pregel[Any, Any, Any, Any], base: CheckpointTuple, new: Fork) -> Fork:
    """For an entrypoint, the fork with its copies of the turn's cached results filed
    under their ids on it (``_keep_calls.refiled_calls``); else as it is."""
    shape = getattr(graph, "neograph_ext_entrypoint", None)
    return new if shape is None else refiled_calls(base, new, shape)


def _sources(plan: ResumePlan) -> list[str]:
    """The checkpoints holding values an earlier deploy carried on past a rewind's target."""
    return sorted({checkpoint_id for _, checkpoint_id in plan.carried_from})


class Rebuilt(NamedTuple):
    """The DeltaChannels to read as LangGraph rebuilds them, and per checkpoint id its
    rebuilt values (``get_state(...).values``)."""

    channels: frozenset[str]
    values: Mapping[str, Mapping[str, Any]]

    def of(self, checkpoint: CheckpointTuple) -> dict[str, Any]:
        """``checkpoint``'s values to carry (``readable``)."""
        found = self.values.get(checkpoint.checkpoint["id"], {})
        return readable(checkpoint.checkpoint["channel_values"], found, self.channels)


def _values(
    options: Carrying,
    plan: ResumePlan,
    base: CheckpointTuple,
    sources: Mapping[str, CheckpointTuple | None],
    rebuilt: Rebuilt,
) -> dict[str, Any]:
    """The values the fork of ``base`` carries: those an earlier deploy carried on (read
    from ``sources``) in place of the base's older ones, then the plan's conversions."""
    stored = rebuilt.of(base)
    restored: dict[str, Any] = {}
    for channel, checkpoint_id in plan.carried_from:
        source = _found(sources.get(checkpoint_id), plan)
        value = rebuilt.of(source).get(channel)
        if value is not None:
            restored[channel] = stored[channel] = value
    return {**restored, **converted(options, plan, stored)}


def _found(base: CheckpointTuple | None, plan: ResumePlan) -> CheckpointTuple:
    if base is None:
        raise GraphError(
            f"thread {plan.thread_id!r}: the checkpoint to carry values from is gone; "
            "run again to plan afresh"
        )
    return base
