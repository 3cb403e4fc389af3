"""Whether a head's stored values read back as their channels' declared types.

Rules:
- Only the head's stored channel values a resume hands to nodes are checked
  (``head_misread``): a pure walk of values already read, never of the history.
- Judged only where the serializer could have changed a value: the classes it revives
  by path (``_revive.by_path``), and the containers and TypedDicts that hold them.
  Anything else passes.
- A value that reads back as declared (a TypedDict value is a dict; a pydantic state
  schema coerces on read) is never reported.
- A complete head is checked only when a new turn starts from it (``turn_misread``):
  no rewind rebuilds those values, the turn reads them from the checkpoint.
- A value holding no other values is judged by its class alone, once per type and
  class (``class_mismatch``): a thread's thousands of messages are few classes.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, NotRequired, Required, get_args, get_origin

from langgraph.checkpoint.base import CheckpointTuple
from pydantic import BaseModel, ValidationError
from typing_extensions import is_typeddict

from neograph_ext.decision._langgraph import TASKS_CHANNEL
from neograph_ext.decision._revive import (
    Revival,
    by_path,
    holds_refused,
    refused,
    revived_classes,
    same_class,
    type_hints,
)
from neograph_ext.decision._validation import adapter

__all__ = [
    "class_mismatch",
    "head_misread",
    "mismatch",
    "misread",
    "rebuilt_judged",
    "result_misread",
    "revived_as_data",
    "sends_misread",
    "turn_misread",
    "unrevivable_tasks",
]


def misread(checked: Revival, values: Mapping[str, Any]) -> dict[str, str]:
    """Per stored channel value that does not read back as its channel's declared type,
    the reason (``stored value of `draft` does not read back as `Draft`: got `dict```).

    Args:
        checked: The graph's ``Revival``.
        values: The head checkpoint's channel values, as the saver revived them.
    """
    found: dict[str, str] = {}
    for channel, tp in checked.types.items():
        if channel not in values:
            continue
        miss = mismatch(tp, values[channel])
        validated = checked.coerced | checked.validated
        if miss is not None and channel in validated and _validates(tp, values[channel]):
            # Validated into the declared type when a node reads it: by a pydantic state
            # schema, or, for a class the serializer cannot rebuild, ``_validated_reads``.
            miss = None
        if miss is not None:
            expected, got = miss
            found[channel] = (
                f"stored value of `{channel}` does not read back as `{expected}`: got `{got}`"
            )
    return found


def _validates(tp: object, value: object) -> bool:
    found = adapter(tp)
    if found is None:
        return False
    try:
        found.validate_python(value)
    except (ValidationError, TypeError, ValueError, AttributeError):
        return False
    return True


def mismatch(tp: object, value: object) -> tuple[str, str] | None:
    """``(declared, found)`` type names where ``value`` is not of the declared ``tp``,
    judged only where the serializer could have changed it: classes it revives by path,
    and the containers and TypedDicts that hold them. Anything else passes."""
    if not isinstance(value, _HOLDERS) and not dataclasses.is_dataclass(value):
        # Then only its class matters: judged once per type and class (a thread's
        # thousands of messages are few classes).
        try:
            return _leaf(tp, type(value))  # type: ignore[arg-type]
        except TypeError:  # an unhashable annotation
            pass
    return _judged(tp, value)


def class_mismatch(tp: object, value: object) -> tuple[str, str] | None:
    """``(declared, found)`` type names where the class of ``value`` alone is not the
    declared ``tp``, as ``mismatch`` judges it but never looking at the items a value
    holds (a ``dict`` passes for a TypedDict, a ``list`` for ``list[Draft]``): one cached
    lookup per type and class."""
    try:
        return _leaf(tp, type(value))  # type: ignore[arg-type]
    except TypeError:  # an unhashable annotation
        return None


@functools.lru_cache(maxsize=1024)
def _leaf(tp: object, cls: type) -> tuple[str, str] | None:
    """``_judged`` of a value of class ``cls`` that holds no other values; of any value
    judged by its class alone (``class_mismatch``): a mapping passes for a TypedDict."""
    origin = get_origin(tp)
    if origin is Annotated or origin in (Required, NotRequired):
        return _leaf(get_args(tp)[0], cls)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        if any(_leaf(member, cls) is None for member in get_args(tp)):
            return None
        return (" | ".join(_name(m) for m in get_args(tp)), cls.__name__)
    if tp is type(None) or tp is None:
        return None if cls is type(None) else ("None", cls.__name__)
    supertype = getattr(tp, "__supertype__", None)
    if supertype is not None:
        return _leaf(supertype, cls)
    if origin is not None or not isinstance(tp, type):
        return None
    if is_typeddict(tp):
        return None if issubclass(cls, Mapping) else (tp.__name__, cls.__name__)
    if by_path(tp) and not issubclass(cls, tp) and not same_class(cls, tp):
        return (tp.__name__, cls.__name__)
    return None


def _judged(tp: object, value: object) -> tuple[str, str] | None:
    origin = get_origin(tp)
    if origin is Annotated or origin in (Required, NotRequired):
        return mismatch(get_args(tp)[0], value)
    if origin is typing.Union or isinstance(tp, types.UnionType):
        misses = [mismatch(member, value) for member in get_args(tp)]
        if any(miss is None for miss in misses):
            return None
        return (" | ".join(_name(m) for m in get_args(tp)), type(value).__name__)
    if tp is type(None) or tp is None:
        return None if value is None else ("None", type(value).__name__)
    supertype = getattr(tp, "__supertype__", None)
    if supertype is not None:
        return mismatch(supertype, value)
    if origin is not None:
        return _items_mismatch(origin, get_args(tp), value)
    if not isinstance(tp, type):
        return None
    if is_typeddict(tp):
        if not isinstance(value, Mapping):
            return (tp.__name__, type(value).__name__)
        hints = type_hints(tp)
        return _first(mismatch(hints[key], item) for key, item in value.items() if key in hints)
    if not by_path(tp):
        return None
    if not isinstance(value, tp) and not same_class(type(value), tp):
        return (tp.__name__, type(value).__name__)
    if dataclasses.is_dataclass(tp) and not issubclass(tp, BaseModel):
        # Revived by calling the class with its stored fields: nothing validates them.
        hints = type_hints(tp)
        return _first(
            mismatch(hints[f.name], getattr(value, f.name, None))
            for f in dataclasses.fields(tp)
            if f.name in hints
        )
    return None


def _items_mismatch(origin: object, args: tuple[Any, ...], value: object) -> tuple[str, str] | None:
    if not isinstance(origin, type) or not args:
        return None
    if issubclass(origin, Mapping):
        if isinstance(value, Mapping) and len(args) == 2:
            return _each(args[1], value.values())
        return None
    if not isinstance(value, list | tuple | set | frozenset):
        return None
    if issubclass(origin, tuple) and args[-1:] != (...,):
        return _first(mismatch(a, item) for a, item in zip(args, value, strict=False))
    return _each(args[0], value)


def _each(tp: object, items: Iterable[object]) -> tuple[str, str] | None:
    """The first item of ``items`` not of ``tp``; an item holding no other values is
    judged once per class (a list of a thousand messages holds a few classes)."""
    leaves: dict[type, tuple[str, str] | None] = {}
    for item in items:
        cls = type(item)
        if cls in leaves:
            miss = leaves[cls]
        else:
            miss = mismatch(tp, item)
            if not issubclass(cls, _HOLDERS) and not dataclasses.is_dataclass(cls):
                leaves[cls] = miss
        if miss is not None:
            return miss
    return None


_HOLDERS = (Mapping, list, tuple, set, frozenset)
"""Values that hold other values: judged item by item, never by their class alone."""


def _first(misses: Iterator[tuple[str, str] | None]) -> tuple[str, str] | None:
    return next((miss for miss in misses if miss is not None), None)


def _name(tp: object) -> str:
    if tp is type(None):
        return "None"
    return tp.__name__ if isinstance(tp, type) else str(tp)


def result_misread(task: str, tp: object, value: object) -> str | None:
    """Why a task's cached result ``value`` does not read back as ``tp``, the type the
    task declares it returns; None if it does (or nothing is declared)."""
    miss = None if tp is None else mismatch(tp, value)
    if miss is None:
        return None
    expected, got = miss
    return f"cached result of task `{task}` does not read back as `{expected}`: got `{got}`"


def rebuilt_judged(checked: Revival, delta: Iterable[str]) -> frozenset[str]:
    """The channels of ``delta`` (the graph's DeltaChannels) whose values ``misread``
    judges: their ``channel_values`` hold no value, or a snapshot, so they are judged as
    LangGraph rebuilds them (``head_misread``'s ``rebuilt``)."""
    return frozenset(
        ch
        for ch in delta
        if ch in checked.types and any(True for _ in revived_classes(checked.types[ch]))
    )


def head_misread(
    checked: Revival,
    head: CheckpointTuple | None,
    waits: bool,
    rebuilt: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """``misread`` of a head's stored values when a resume hands them to nodes (the head
    ``waits`` on nodes), and of the ``Send`` arguments it queued (under
    ``TASKS_CHANNEL``); nothing for a complete head, from which no node reads.
    ``rebuilt``: the values of the channels of ``rebuilt_judged``, as LangGraph rebuilds
    them; what their ``channel_values`` hold is never what a node is handed."""
    if head is None or not waits or not (checked.types or checked.inputs):
        return {}
    values = head.checkpoint.get("channel_values") or {}
    found = misread(checked, {**values, **rebuilt} if rebuilt else values)
    why = sends_misread(checked.inputs, values.get(TASKS_CHANNEL))
    return found | {TASKS_CHANNEL: why} if why is not None else found


def revived_as_data(value: object) -> bool:
    """Whether a stored value that does not read back came back as plain data: it holds
    no instance of a class the serializer revives by path. One that revived as another
    real class (the old class of a rename, still defined in ``__main__`` or importable)
    is a changed type, which a rewind rebuilds, in a notebook as in a module."""
    stack = [value]
    while stack:
        current = stack.pop()
        if by_path(type(current)):
            return False
        if isinstance(current, Mapping):
            stack.extend(current.values())
        elif isinstance(current, list | tuple | set | frozenset):
            stack.extend(current)
    return True


def sends_misread(inputs: Mapping[str, type], queued: object) -> str | None:
    """Why a queued ``Send``'s argument does not read back as the class its target node
    declares as input, for the first that does not; None if each does."""
    if not inputs or not isinstance(queued, list | tuple):
        return None
    for packet in queued:
        tp = inputs.get(getattr(packet, "node", None))  # type: ignore[arg-type]
        miss = None if tp is None else mismatch(tp, getattr(packet, "arg", None))
        if miss is not None:
            expected, got = miss
            node = packet.node
            return f"a stored Send to `{node}` does not read back as `{expected}`: got `{got}`"
    return None


def turn_misread(checked: Revival, head: CheckpointTuple | None) -> dict[str, str]:
    """``misread`` of the stored values a new turn on a complete ``head`` starts from
    (an entrypoint's ``previous`` among them). No rewind rebuilds them: the turn reads
    them from the checkpoint, where they come back as they do now."""
    if head is None or not checked.types:
        return {}
    return misread(checked, head.checkpoint.get("channel_values") or {})


def unrevivable_tasks(checked: Revival, returns: Mapping[str, object]) -> frozenset[str]:
    """The tasks of an entrypoint whose declared return type holds a class no checkpoint
    revives here (``refused``: a script's own class revives in the script): a cached
    result of theirs always comes back as data."""
    bad = refused(checked.findings)
    return frozenset(task for task, tp in returns.items() if holds_refused(tp, bad))
