"""Which stored values may stand in for re-running their nodes, and converting them.

Rules:
- A call's ``ResumePolicy(keep_compatible=..., migrations=...)`` is resolved per
  channel into ``Carrying`` (``carrying``), against the channel types ``compile`` keeps.
- Before planning, ``carry_for`` says which changed channels may be carried: those a
  migration covers, and those ``keep_compatible`` covers whose stored value validates
  under the current type. It runs no user code: migrations run only when executing
  (``converted``, called by ``_migrate``).
- Validation never trusts a revived model instance (the serializer may build one with
  ``model_construct``, unvalidated): its fields are validated again, as plain data, by
  the current version of its own class (the declared class of its module and name, as
  the serializer matched it), never by another member of a union they would fit too.
- A migration that raises, or returns what does not validate, is a
  ``CheckpointSchemaError`` naming the migration and the channel.
- Pure: no I/O; this module reads values already read and writes nothing.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, RootModel, ValidationError

from neograph_ext.decision._errors import CheckpointSchemaError
from neograph_ext.decision._plan import Carry, ResumePlan
from neograph_ext.decision._revive import revived_classes
from neograph_ext.decision._typeforms import QUALIFIERS
from neograph_ext.decision._validation import adapter

__all__ = [
    "Carrying",
    "Migration",
    "carry_for",
    "carrying",
    "converted",
    "invalid",
    "readable",
    "rebuilt_channels",
]

Migration = Callable[[Any], Any]
"""A function from a stored value to a value of the current type."""


@dataclass(frozen=True)
class Carrying:
    """The compile options that let stored values stand in for re-running, per channel."""

    types: Mapping[str, object] = field(default_factory=dict)
    """Each state channel's annotated type, as declared, without its ``TypedDict``
    qualifier (``NotRequired[X]`` is ``X``)."""
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
    return Carrying({ch: _unqualified(tp) for ch, tp in channel_types.items()}, keep, table)


def _unqualified(tp: object) -> object:
    """``tp`` without ``NotRequired`` / ``Required`` / ``ReadOnly``: they say how a
    ``TypedDict`` key is declared (every LangChain agent state declares its keys so),
    and pydantic validates no value against them."""
    while get_origin(tp) in QUALIFIERS:
        tp = get_args(tp)[0]
    return tp


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
    """The type a channel holds: without qualifiers, ``Annotated`` metadata and ``| None``."""
    tp = _unqualified(tp)
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
            # A JSON schema declares no type to validate by: the migration's word is taken.
            fitted = (result,) if isinstance(tp, Mapping) else _fits(tp, result)
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


def invalid(tp: object, value: object) -> str | None:
    """Why a stored ``value`` does not validate as ``tp`` (its first error, where), or
    None when it does, or when nothing judges it (a JSON schema, a type pydantic cannot
    validate)."""
    found = None if isinstance(tp, Mapping) else adapter(tp)
    if found is None:  # a type pydantic has no schema for: nothing to judge by
        return None
    try:
        found.validate_python(_revalidated(value, _own_classes(tp)))
    except ValidationError as exc:
        first, *rest = exc.errors()
        where = ".".join(map(str, first["loc"]))
        more = f" (and {len(rest)} more)" if rest else ""
        return f"{where}: {first['msg']}{more}" if where else f"{first['msg']}{more}"
    except (AttributeError, TypeError, ValueError) as exc:
        return str(exc)
    return None


def _fits(tp: object, value: object) -> tuple[Any] | None:
    """``(value validated as tp,)``, or None when it does not validate, or ``tp`` is a
    JSON schema (a structured response declared as one), which no value is checked by."""
    found = None if isinstance(tp, Mapping) else adapter(tp)
    if found is None:
        return None
    try:
        return (found.validate_python(_revalidated(value, _own_classes(tp))),)
    except (ValidationError, AttributeError, TypeError, ValueError):
        return None


_Classes = Mapping[tuple[str, str], type[BaseModel]]
"""The pydantic models a declared type holds, by the ``(module, __name__)`` the
serializer stores an instance under and revives it by."""


def _own_classes(tp: object) -> _Classes:
    return {
        (cls.__module__, cls.__name__): cls
        for cls in revived_classes(tp)
        if issubclass(cls, BaseModel)
    }


def _revalidated(value: object, classes: _Classes) -> object:
    """A stored value to validate: each revived model instance validated again, from its
    fields as plain data, as the current version of its own class (the declared class of
    its module and name, as the serializer matched it, else its own), never as another
    member of a union that its fields would fit too.

    Raises:
        ValidationError: A model's fields do not validate as its current class.
    """
    if isinstance(value, BaseModel):
        cls = classes.get((type(value).__module__, type(value).__name__), type(value))
        if isinstance(value, RootModel):
            return cls.model_validate(_revalidated(value.root, classes))
        data = {**value.__dict__, **(value.__pydantic_extra__ or {})}
        return cls.model_validate({key: _revalidated(item, classes) for key, item in data.items()})
    if isinstance(value, dict):
        return {key: _revalidated(item, classes) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_revalidated(item, classes) for item in value)
    return value
