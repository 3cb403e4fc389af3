"""``compile(attach=...)``: the records that add to what a compiled graph does beside
LangGraph, one of each kind at most.

Rules:
- A kind left out means its absence: plain calls are LangGraph's, writes are not
  round-tripped (the saver is still checked), nothing is counted, nothing is told.
- 0.3's keywords (``auto_resume=``, ``verify_writes=``, ``verify_saver=``, ``budget=``,
  ``telemetry=``) still work for 0.4, with a ``DeprecationWarning`` naming the record;
  given their documented default they say nothing, and given beside the record that
  covers them they are a ``GraphError`` naming both.
- ``auto_resume=False`` given is 0.2's spelling of strict plain calls, and keeps that
  meaning until 0.5 (``Attached.strict_plain``): a user who wrote it to make a server's
  runs refuse a changed thread must not silently get LangGraph's resume instead. Only
  leaving the keyword out (or 0.2's default, ``None``) means plain LangGraph calls.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from neograph_ext.decision._budget import Budget
from neograph_ext.decision._errors import GraphError
from neograph_ext.storage._telemetry import Telemetry

__all__ = ["Attached", "Attachment", "AutoResume", "WriteChecks", "attached"]


@dataclass(kw_only=True, slots=True, frozen=True)
class AutoResume:
    """Attached, every plain root call (``invoke``, ``stream``, ``ainvoke``, ``astream``,
    ``astream_events``; so every run a LangGraph server makes) plans first, under the
    graph's ``resume`` and ``lock`` policies, as ``run`` does: a change is rewound,
    migrated or (with ``ResumePolicy(on_change="raise")``) raises
    ``CheckpointSchemaError`` before any node runs; unchanged, the call is LangGraph's own,
    with the caller's input and keywords (``durability`` included) as given."""


@dataclass(kw_only=True, slots=True, frozen=True)
class WriteChecks:
    """What is checked as checkpoints are written. Left out: ``WriteChecks()``."""

    readback: bool = False
    """For development and CI: every value a node writes to a state key is round-tripped
    through the checkpointer's serializer as it is saved, and a step whose writes would
    not read back as written fails at once with ``WriteReadbackError``, before they are
    saved; a value not of the type its node declares is also judged by the items it
    holds."""

    saver: bool = True
    """Before ``run`` (or a twin, or a plain call with ``AutoResume``) first invokes the
    graph on a saver, read the stamp's stored description back, once per saver class and
    process, and raise ``StampLostError`` if the saver dropped the config metadata the
    stamp rides in. False accepts such a saver: its threads plan as ``unverified``."""


Attachment = AutoResume | WriteChecks | Budget | Telemetry
"""What ``compile(attach=[...])`` takes."""


@dataclass(frozen=True, slots=True)
class Attached:
    """What one ``compile`` was given to attach, each kind resolved."""

    auto_resume: bool = False
    strict_plain: bool = False
    """0.2's ``compile(auto_resume=False)``: plain calls plan with the graph's ``resume``
    policy made strict (``on_change="raise"``), while ``run`` keeps the graph's own."""
    checks: WriteChecks = field(default_factory=WriteChecks)
    budget: Budget | None = None
    telemetry: Telemetry | None = None


_R = TypeVar("_R")

_MOVED: dict[str, object] = {
    "auto_resume": None,  # 0.2's left-out value; False is 0.2's strict spelling
    "verify_writes": False,
    "verify_saver": True,
    "budget": None,
    "telemetry": None,
}
"""0.3's keywords and their documented defaults."""


def attached(
    attach: Iterable[Attachment], kwargs: dict[str, Any]
) -> tuple[Attached, dict[str, Any]]:
    """What ``compile`` was given to attach, and its other keywords, 0.3's taken out (one
    ``DeprecationWarning`` for those not given their default).

    Raises:
        GraphError: ``attach`` holds something else than these records, or a kind twice,
            or a 0.3 keyword is given beside the record that covers it.
    """
    records = _records(attach, "attach=[...]")
    old = [
        (name, kwargs[name])
        for name, default in _MOVED.items()
        if name in kwargs and not _is_default(kwargs[name], default)
    ]
    strict_plain = kwargs.get("auto_resume") is False
    if old:
        moved, shown = _moved(old)
        both = sorted(kind.__name__ for kind in moved if kind in records)
        if both:
            raise GraphError(
                f"compile(..., {', '.join(name for name, _ in old)}=...) and compile(..., "
                f"attach=[{', '.join(both)}(...)]) both set it: drop the keyword"
            )
        given = ", ".join(f"{name}={_plain(value)}" for name, value in old)
        warnings.warn(
            f"compile(..., {given}) is deprecated: pass attach=[{shown}]"
            + (_STRICT_PLAIN if strict_plain else ""),
            DeprecationWarning,
            stacklevel=3,
        )
        records.update(moved)
    rest = {name: value for name, value in kwargs.items() if name not in _MOVED}
    return Attached(
        auto_resume=AutoResume in records,
        strict_plain=strict_plain,
        checks=_of(records, WriteChecks) or WriteChecks(),
        budget=_of(records, Budget),
        telemetry=_of(records, Telemetry),
    ), rest


def _of(records: dict[type, Attachment], kind: type[_R]) -> _R | None:
    record = records.get(kind)
    return record if isinstance(record, kind) else None


def _records(attach: Iterable[Attachment], given: str) -> dict[type, Attachment]:
    if not isinstance(attach, Iterable) or isinstance(attach, str):
        raise GraphError(f"compile(..., attach=...) takes a list of records, as [{attach!r}]")
    records: dict[type, Attachment] = {}
    for record in attach:
        kind = type(record)
        if kind not in (AutoResume, WriteChecks, Budget, Telemetry):
            raise GraphError(
                f"compile(..., {given}) takes neograph_ext.AutoResume(), WriteChecks(...), "
                f"budget.Budget(...) and Telemetry(...) records, not {record!r}"
            )
        if kind in records:
            raise GraphError(f"compile(..., attach=[...]) holds two {kind.__name__} records")
        records[kind] = record
    return records


def _moved(old: list[tuple[str, Any]]) -> tuple[dict[type, Attachment], str]:
    """The records 0.3's keywords stand for, and how a message shows them."""
    moved: list[Attachment] = []
    checks: dict[str, bool] = {}
    for name, value in old:
        if name == "auto_resume" and (value or value is False):
            moved.append(AutoResume())  # False too: 0.2's strict plain calls
        elif name in ("budget", "telemetry"):
            moved.append(value)
        elif name in ("verify_writes", "verify_saver"):
            checks["readback" if name == "verify_writes" else "saver"] = bool(value)
    if checks:
        moved.append(WriteChecks(**checks))
    records = _records(moved, ", ".join(f"{name}=..." for name, _ in old))
    shown = [
        f"WriteChecks({', '.join(f'{k}={v}' for k, v in checks.items())})"
        if isinstance(record, WriteChecks)
        else f"{type(record).__name__}({'' if isinstance(record, AutoResume) else '...'})"
        for record in records.values()
    ]
    return records, ", ".join(shown)


_STRICT_PLAIN = (
    ", resume=ResumePolicy(on_change='raise') (which makes run() strict too). "
    "auto_resume=False keeps its 0.2 meaning until 0.5: plain calls (invoke, stream, a "
    "LangGraph server's runs) plan first and raise CheckpointSchemaError on a changed "
    "thread, while run() keeps the graph's resume policy; leave auto_resume out for "
    "LangGraph's own plain calls"
)
"""What the warning for ``auto_resume=False`` adds after the record it names."""


def _is_default(value: object, default: object) -> bool:
    """Whether a 0.3 keyword's value is its documented default (``1`` is no ``True``)."""
    return value is default or (type(value) is bool and value == default)


def _plain(value: object) -> str:
    return repr(value) if value is None or isinstance(value, bool | int | float | str) else "..."
