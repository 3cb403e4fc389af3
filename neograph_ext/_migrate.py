"""Keeping and migrating stored values: the value-carrying stage after ``_plan``.

Rules:
- A call's ``ResumePolicy(keep_compatible=..., migrations=...)`` is resolved per
  channel into ``Carrying`` (``carrying``), against the channel types ``compile`` keeps.
- Before planning, ``carry_for`` says which changed channels may be carried: those a
  migration covers, and those ``keep_compatible`` covers whose stored value validates
  under the current type. It runs no user code: migrations run only when executing.
- Validation never trusts a revived model instance (the serializer may build one with
  ``model_construct``, unvalidated): its fields are validated again, as plain data.
- Carrying writes exactly one checkpoint through the saver's public API (``_fork``): a
  fork of the base checkpoint (the head, or a rewind's target) under the current stamp,
  holding the converted values at new channel versions. On the head, its pending writes
  are copied too, so its next nodes and pending interrupts stay; the fork records how
  many tasks' writes it holds (``_keep.KEEP_KEY``), so one left without them by a kill
  is planned from its base again. Nothing is deleted or overwritten.
- A migration that raises, or returns what does not validate, is a
  ``CheckpointSchemaError`` naming the migration and the channel; nothing is written.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, NamedTuple, get_args, get_origin

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointMetadata, CheckpointTuple
from langgraph.pregel import Pregel
from pydantic import BaseModel, TypeAdapter, ValidationError

from neograph_ext._errors import CheckpointSchemaError, GraphError
from neograph_ext._fork import Fork, address, aput_fork, forked_checkpoint, put_fork
from neograph_ext._keep import KEEP_KEY, NULL_TASK
from neograph_ext._langgraph import delta_channels
from neograph_ext._plan import Carry, PlanKind, ResumePlan
from neograph_ext._stamp import (
    RUN_KEY,
    STAMP_KEY,
    Stamp,
    encode_run,
    read_marks,
    stamp_ref,
)
from neograph_ext._stamp_store import asave, save

__all__ = [
    "Carrying",
    "acarry",
    "carry",
    "carry_for",
    "carrying",
    "converted",
    "fork",
    "readable",
    "rebuilt_channels",
]

Migration = Callable[[Any], Any]


@dataclass(frozen=True)
class Carrying:
    """The compile options that let stored values stand in for re-running, per channel."""

    types: Mapping[str, object] = field(default_factory=dict)
    """Each state channel's annotated type, as declared."""
    keep: frozenset[str] = frozenset()
    """Channels whose stored value is kept when it validates under the current type."""
    migrations: Mapping[str, tuple[str, Migration]] = field(default_factory=dict)
    """Per channel: the migration's label (``migrations[Profile]``) and function."""


def carrying(
    channel_types: Mapping[str, object],
    keep_compatible: bool | Iterable[type | str] = False,
    migrations: Mapping[type | str, Migration] | None = None,
) -> Carrying:
    """Resolve ``compile``'s options to channels.

    Args:
        channel_types: Each state channel's annotated type.
        keep_compatible: True for every channel, or the types and channel names to cover.
        migrations: Per type or channel name, a function from the stored value to a
            value of the current type.

    Raises:
        ValueError: An option names a channel the state lacks, or a type no channel has.
    """
    if keep_compatible is True:
        keep = frozenset(channel_types)
    elif keep_compatible is False:
        keep = frozenset()
    else:
        keep = frozenset(
            ch for key in keep_compatible for ch in _channels_of(key, channel_types, "keep")
        )
    table: dict[str, tuple[str, Migration]] = {}
    for key, fn in (migrations or {}).items():
        label = f"migrations[{key if isinstance(key, str) else key.__qualname__!s}]"
        for channel in _channels_of(key, channel_types, "migrations"):
            table[channel] = (label, fn)
    return Carrying(dict(channel_types), keep, table)


def _channels_of(key: type | str, channel_types: Mapping[str, object], option: str) -> list[str]:
    if isinstance(key, str):
        if key not in channel_types:
            raise ValueError(
                f"{option} names channel {key!r}, which the state does not have; "
                f"its channels are {sorted(channel_types)}"
            )
        return [key]
    found = [ch for ch, tp in channel_types.items() if _core(tp) is key]
    if not found:
        raise ValueError(
            f"{option} names type {key.__qualname__}, which no state channel is declared as; "
            "name the channel instead"
        )
    return found


def _core(tp: object) -> object:
    """The type a channel holds: without ``Annotated`` metadata and ``| None``."""
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (typing.Union, types.UnionType):
        members = [m for m in get_args(tp) if m is not type(None)]
        if len(members) == 1:
            return members[0]
    return tp


def rebuilt_channels(options: Carrying, delta: Iterable[str]) -> frozenset[str]:
    """The channels ``options`` may carry that are ``DeltaChannel``s (``delta``): between
    snapshots their ``channel_values`` hold no value, so they are read as LangGraph
    rebuilds them (``get_state(...).values``)."""
    return frozenset(delta) & (options.keep | options.migrations.keys())


def readable(
    stored: Mapping[str, Any], rebuilt: Mapping[str, Any], channels: frozenset[str]
) -> dict[str, Any]:
    """A checkpoint's values to carry: its ``channel_values``, with each of ``channels``
    (``rebuilt_channels``) as LangGraph rebuilds it (``rebuilt``)."""
    return {**stored, **{ch: rebuilt[ch] for ch in channels if ch in rebuilt}}


def carry_for(options: Carrying, candidates: frozenset[str], values: Mapping[str, Any]) -> Carry:
    """Which changed channels may be carried, given the values stored at the head.

    Args:
        options: The graph's ``Carrying``.
        candidates: Changed channels whose stored values are live (``ResumePlan.candidates``).
        values: The head checkpoint's values (``readable``).
    """
    present = frozenset(ch for ch in candidates if ch in values)
    migrated = frozenset(ch for ch in present if ch in options.migrations)
    compatible = frozenset(
        ch
        for ch in present & options.keep - migrated
        if _fits(options.types.get(ch, Any), values[ch]) is not None
    )
    return Carry(migrated, compatible)


def converted(options: Carrying, plan: ResumePlan, values: Mapping[str, Any]) -> dict[str, Any]:
    """The carried channels' values converted to the current types.

    Args:
        options: The graph's ``Carrying``.
        plan: A plan with ``migrated`` channels.
        values: The stored values.

    Raises:
        CheckpointSchemaError: A migration raised or returned a value that does not
            validate, or a kept value no longer validates.
    """
    out: dict[str, Any] = {}
    for channel in sorted(plan.migrated):
        tp = options.types.get(channel, Any)
        if channel in options.migrations:
            label, fn = options.migrations[channel]
            try:
                result = fn(values[channel])
            except Exception as exc:
                raise CheckpointSchemaError(
                    f"thread {plan.thread_id!r}: {label} raised on channel `{channel}` "
                    f"({type(exc).__name__}: {exc}); nothing was written. Fix the migration, "
                    "or drop it to re-run the node that wrote the channel",
                    plan,
                ) from exc
            fitted = _fits(tp, result)
            if fitted is None:
                raise CheckpointSchemaError(
                    f"thread {plan.thread_id!r}: {label} returned a value for channel "
                    f"`{channel}` that does not validate as the channel's current type; "
                    "nothing was written. Fix the migration, or drop it to re-run the node "
                    "that wrote the channel",
                    plan,
                )
            out[channel] = fitted[0]
        else:
            fitted = _fits(tp, values[channel])
            if fitted is None:
                raise CheckpointSchemaError(
                    f"thread {plan.thread_id!r}: the stored value of channel `{channel}` "
                    "no longer validates as its current type; nothing was written. "
                    "Run again to plan afresh",
                    plan,
                )
            out[channel] = fitted[0]
    return out


def _fits(tp: object, value: object) -> tuple[Any] | None:
    """``(value validated as tp,)``, or None when it does not validate."""
    try:
        return (TypeAdapter[Any](tp).validate_python(_plain(value)),)  # type: ignore[arg-type]
    except (ValidationError, AttributeError, TypeError, ValueError):
        return None


def _plain(value: object) -> object:
    """Revived model instances as plain data, so that their fields are validated again."""
    if isinstance(value, BaseModel):
        data = {**value.__dict__, **(value.__pydantic_extra__ or {})}
        return {key: _plain(item) for key, item in data.items()}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_plain(item) for item in value)
    return value


def fork(
    saver: BaseCheckpointSaver[Any],
    base: CheckpointTuple,
    values: Mapping[str, Any],
    stamp: Stamp,
    decision: str,
    *,
    keep_writes: bool,
) -> Fork:
    """The checkpoint that carries ``values`` on from ``base``; writes nothing.

    Args:
        saver: Knows how the thread's channel versions grow.
        base: The checkpoint to fork.
        values: The converted values, per channel.
        stamp: The current stamp.
        decision: The run mark's decision (``migrate`` or ``accept``).
        keep_writes: Copy the base's pending writes (its finished tasks, interrupts).
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
    stored = read_marks(metadata)[1].input
    metadata.update(
        {
            "source": "fork",
            "parents": {},
            STAMP_KEY: stamp_ref(stamp),
            RUN_KEY: encode_run(stamp, decision, stored),
        }
    )
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in base.pending_writes or () if keep_writes else ():
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
    configurable = dict(config.get("configurable") or {})
    base = plan.checkpoint_id if plan.kind is PlanKind.REWIND else plan.head_id
    configurable["checkpoint_id"] = base
    return {"configurable": configurable}


def carry(
    graph: Pregel[Any, Any, Any, Any],
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    plan: ResumePlan,
    options: Carrying,
    stamp: Stamp,
    decision: str = "migrate",
) -> RunnableConfig:
    """Write the fork that carries ``plan.migrated`` (none, for ``accept``).

    Args:
        graph: The graph, whose ``get_state`` names the fork's tasks.
        saver: The thread's saver.
        config: Names the thread.
        plan: The decision: ``migrate``, a rewind with ``migrated``, or any plan whose
            head is to be stamped as current (``accept``).
        options: The graph's ``Carrying``.
        stamp: The current stamp.
        decision: The run mark's decision.

    Returns:
        The config of the checkpoint written.

    Raises:
        CheckpointSchemaError: A migration failed; nothing was written.
    """
    base = _found(saver.get_tuple(_base_config(plan, config)), plan)
    sources = {cp: saver.get_tuple(_at(config, cp)) for cp in _sources(plan)}
    channels = rebuilt_channels(options, delta_channels(graph))
    rebuilt = {
        cp: graph.get_state(_at(config, cp)).values
        for cp in ([base.checkpoint["id"], *sources] if channels else ())
    }
    values = _values(options, plan, base, sources, Rebuilt(channels, rebuilt))
    new = fork(saver, base, values, stamp, decision, keep_writes=plan.kind is not PlanKind.REWIND)
    # Read before anything is written: if the state cannot be read, nothing is.
    old = graph.get_state(new.parent).tasks if new.writes else ()
    save(saver, stamp)  # the fork names the stamp: its description must be found
    return put_fork(graph, saver, new, old)


async def acarry(
    graph: Pregel[Any, Any, Any, Any],
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    plan: ResumePlan,
    options: Carrying,
    stamp: Stamp,
    decision: str = "migrate",
) -> RunnableConfig:
    """Async twin of ``carry``."""
    base = _found(await saver.aget_tuple(_base_config(plan, config)), plan)
    sources = {cp: await saver.aget_tuple(_at(config, cp)) for cp in _sources(plan)}
    channels = rebuilt_channels(options, delta_channels(graph))
    rebuilt = {
        cp: (await graph.aget_state(_at(config, cp))).values
        for cp in ([base.checkpoint["id"], *sources] if channels else ())
    }
    values = _values(options, plan, base, sources, Rebuilt(channels, rebuilt))
    new = fork(saver, base, values, stamp, decision, keep_writes=plan.kind is not PlanKind.REWIND)
    old = (await graph.aget_state(new.parent)).tasks if new.writes else ()
    await asave(saver, stamp)
    return await aput_fork(graph, saver, new, old)


def _sources(plan: ResumePlan) -> list[str]:
    """The checkpoints holding values an earlier deploy carried on past a rewind's target."""
    return sorted({checkpoint_id for _, checkpoint_id in plan.carried_from})


def _at(config: RunnableConfig, checkpoint_id: str) -> RunnableConfig:
    configurable = dict(config.get("configurable") or {})
    configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


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
