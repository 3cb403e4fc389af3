"""The options records: what a resume does about changes, and how it waits for a thread.

Rules:
- Options are frozen records in LangGraph's own idiom (``RetryPolicy``, ``CachePolicy``:
  keyword-only, slotted, a docstring per field), checked when they are built, so a bad
  value fails where it was written.
- ``compile(resume=..., lock=...)`` sets a graph's; ``run``, its twins and ``plan`` take
  a call's, which replaces the graph's record whole: a record reads the same wherever it
  is used, and a field the caller left out never means "whatever the graph said".
- 0.2's keywords still work for 0.3: each is one field of one record (``_MOVED``), set
  on the graph's record, with a ``DeprecationWarning`` naming the replacement (given its
  documented default, a keyword is as if left out: it says nothing); a 0.2
  keyword given with the record that covers it is a ``GraphError`` naming both.
- ``resolve`` is the one place that turns what a call was given into the two records it
  runs with; nothing else reads a 0.2 keyword.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

from neograph_ext.decision._errors import GraphError

__all__ = [
    "Asked",
    "LockPolicy",
    "OnBusy",
    "OnChange",
    "OnUnverified",
    "ResumePolicy",
    "asked",
    "resolve",
]

OnChange = Literal["rewind", "raise"]
OnUnverified = Literal["resume", "raise"]
OnBusy = Literal["wait", "raise"]

_NO_MIGRATIONS: Mapping[type | str, Callable[[Any], Any]] = MappingProxyType({})


@dataclass(kw_only=True, slots=True, frozen=True)
class ResumePolicy:
    """What a resume does when the thread's checkpoints were written by other code.

    Set on a graph with ``compile(builder, resume=ResumePolicy(...))``; a call's own
    (``run(..., resume=...)``, ``plan(..., resume=...)``) replaces the graph's whole. To
    change one field of a graph's policy for one call, derive it:
    ``dataclasses.replace(policy, reanswer=True)``.

    Immutable and hashable (``migrations`` is held as a read-only mapping and left out of
    the hash), so one policy can be shared by every call and graph.
    """

    on_change: OnChange = "rewind"
    """``"rewind"``: a change is rewound (the thread forks just before the earliest
    affected node, which re-runs with everything after it) or, when ``keep_compatible``
    or ``migrations`` cover it, carried without re-running. ``"raise"`` (strict mode,
    for CI): ``CheckpointSchemaError`` instead, before any node runs and before anything
    is written."""

    on_unverified: OnUnverified = "resume"
    """For a thread whose checkpoints cannot be verified (written without a stamp: by
    plain LangGraph, or through a saver that drops it): ``"resume"`` it as LangGraph
    would (logged once per thread and process), or ``"raise"``
    ``CheckpointSchemaError`` before any node runs, as ``neograph-ext check
    --strict-unverified`` fails it."""

    keep_compatible: bool | Iterable[type | str] = False
    """True, or the types and channel names it covers (held as a ``frozenset``): when
    such a channel's type changed and its live stored value still validates under the
    new type, the value is kept (converted) instead of re-running its node."""

    migrations: Mapping[type | str, Callable[[Any], Any]] = field(
        default_factory=lambda: _NO_MIGRATIONS, hash=False
    )
    """Per type or channel name, a function from the stored value (a model instance or
    a plain dict) to a value of the new type, applied to the live stored value instead of
    re-running its node. Runs only when a resume executes, never while planning."""

    replay_turns: bool = False
    """For a changed value of an earlier turn that is still live and neither kept nor
    migrated: rewind into that turn, re-run from the changed node, then feed every later
    turn its stored input again, in order, stopping at the first interrupt. False raises
    ``CheckpointSchemaError`` naming the ways out: a rewind alone would drop the later
    turns."""

    reanswer: bool = False
    """When the thread waits on a question (an ``interrupt()`` or an ``interrupt_before``
    breakpoint) and something upstream of it changed, the rewind asks it again and
    returns the new question, setting the answer given now aside (logged). True applies
    the answer to the new question instead: for questions that do not show upstream
    content."""

    take_over: bool = False
    """For a thread newer code owns (its workers wrote it last, and this code is older:
    the database stored this code's stamp first, or that code took the thread over from
    it), the resume leaves it alone: the plan is ``superseded``, and ``run`` raises
    ``ThreadSupersededError`` before anything runs, so that old and new workers of a
    rolling deploy never undo each other's work. True takes the thread over instead (a
    rollback, or switching a branch back in development): the resume proceeds as if
    that code were older, logged as a warning, and from then on that code must take
    the thread over in turn."""

    def __post_init__(self) -> None:
        _one_of("ResumePolicy", "on_change", self.on_change, ("rewind", "raise"))
        _one_of("ResumePolicy", "on_unverified", self.on_unverified, ("resume", "raise"))
        object.__setattr__(self, "keep_compatible", _kept(self.keep_compatible))
        object.__setattr__(self, "migrations", _migrations(self.migrations))


@dataclass(kw_only=True, slots=True, frozen=True)
class LockPolicy:
    """How a call waits for a thread that another process is running.

    Whenever there is work to do, the thread is planned again and executed under its
    lock (SQLite files and PostgreSQL; other savers take none), so concurrent callers
    never run a node twice. Set on a graph with ``compile(builder, lock=LockPolicy(...))``;
    a call's own (``run(..., lock=...)``) replaces the graph's whole.
    """

    on_busy: OnBusy = "wait"
    """``"wait"`` for the other process, up to ``timeout`` seconds, or ``"raise"``
    ``ThreadBusyError`` at once."""

    timeout: float = 300.0
    """Seconds to wait for the thread's lock (``on_busy="wait"``) before raising
    ``ThreadBusyError``."""

    def __post_init__(self) -> None:
        _one_of("LockPolicy", "on_busy", self.on_busy, ("wait", "raise"))
        timeout: object = self.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
            raise ValueError(  # ``not >= 0`` also refuses NaN
                "the lock timeout (LockPolicy.timeout, 0.2's lock_timeout) must be a number "
                f"of seconds >= 0, not {timeout!r}"
            )


def _one_of(record: str, name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        choices = " or ".join(repr(choice) for choice in allowed)
        raise ValueError(f"{record}: {name} must be {choices}, not {value!r}")


def _kept(value: object) -> bool | frozenset[type | str]:
    """``keep_compatible`` as held: a bool, or a non-empty frozenset of types and names."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(
            "ResumePolicy: keep_compatible takes True or a collection of types and channel "
            f"names, not {value!r} (for one channel: keep_compatible={{{value!r}}})"
        )
    kept = frozenset(value)
    wrong = [key for key in kept if not isinstance(key, type | str)]
    if wrong:
        raise ValueError(
            f"ResumePolicy: keep_compatible names types and channel names, not {wrong[0]!r}"
        )
    return kept or False


def _migrations(value: object) -> Mapping[type | str, Callable[[Any], Any]]:
    """``migrations`` as held: a read-only copy, checked key by key."""
    if value is None:
        return _NO_MIGRATIONS
    if not isinstance(value, Mapping):
        raise ValueError(
            "ResumePolicy: migrations takes a mapping of types or channel names to "
            f"functions, not {value!r}"
        )
    for key, fn in value.items():
        if not isinstance(key, type | str):
            raise ValueError(f"ResumePolicy: migrations names a type or channel, not {key!r}")
        if not callable(fn):
            raise ValueError(
                f"ResumePolicy: migrations[{key!r}] must be a function from the stored value "
                f"to the new one, not {fn!r}"
            )
    return MappingProxyType(dict(value)) if value else _NO_MIGRATIONS


class _Moved(NamedTuple):
    """Where a 0.2 keyword went: one field of one record, and how its value reads there."""

    record: Literal["resume", "lock"]
    field: str
    default: object
    """The keyword's documented default in 0.2: given, it is as if left out, silently."""
    value: Callable[[Any], Any] = lambda given: given


_MOVED: Mapping[str, Mapping[str, _Moved]] = {
    "compile": {
        "keep_compatible": _Moved("resume", "keep_compatible", False),
        "migrations": _Moved("resume", "migrations", None),
    },
    "run": {
        "auto_resume": _Moved(
            "resume", "on_change", True, lambda rewinds: "rewind" if rewinds else "raise"
        ),
        "reanswer": _Moved("resume", "reanswer", False),
        "replay_turns": _Moved("resume", "replay_turns", False),
        "strict_unverified": _Moved(
            "resume", "on_unverified", False, lambda strict: "raise" if strict else "resume"
        ),
        "on_busy": _Moved("lock", "on_busy", "wait"),
        "lock_timeout": _Moved("lock", "timeout", 300.0),
    },
    "plan": {"replay_turns": _Moved("resume", "replay_turns", False)},
}
"""Per public function (by family: ``arun``, ``stream``, ``astream`` are ``run``'s), the
0.2 keywords it still takes."""

_FAMILY = {
    "compile": "compile",
    "run": "run",
    "arun": "run",
    "stream": "run",
    "astream": "run",
    "plan": "plan",
    "aplan": "plan",
}


@dataclass(frozen=True, slots=True)
class Asked:
    """What one call of a public function was given, before the graph's policies apply."""

    function: str = "run"
    """The public function called, as messages name it (``run``, ``astream``, ...)."""
    resume: ResumePolicy | None = None
    """The call's own ``resume=`` record; None: the graph's."""
    lock: LockPolicy | None = None
    """The call's own ``lock=`` record; None: the graph's."""
    keywords: tuple[tuple[str, Any], ...] = ()
    """The 0.2 keywords given, in the order given."""


def asked(
    function: str,
    resume: ResumePolicy | None,
    lock: LockPolicy | None,
    kwargs: Mapping[str, Any],
    *,
    stacklevel: int = 3,
) -> tuple[Asked, dict[str, Any]]:
    """Split a public call's keywords into what ``resolve`` reads and the rest (what the
    function passes on, e.g. to ``graph.invoke``), warning once for its 0.2 keywords.

    Args:
        function: The public function, as messages name it.
        resume: The call's ``resume=``.
        lock: The call's ``lock=``.
        kwargs: Its other keywords.
        stacklevel: Of the warning: by default, the caller of the function that calls
            this one.

    Raises:
        GraphError: ``resume`` or ``lock`` is not a record of its kind.
    """
    _typed(function, "resume", resume, ResumePolicy)
    _typed(function, "lock", lock, LockPolicy)
    moved = _MOVED[_FAMILY[function]]
    keywords = tuple(
        (name, value)
        for name, value in kwargs.items()
        if name in moved and not _is_default(value, moved[name].default)
    )
    rest = {name: value for name, value in kwargs.items() if name not in moved}
    if keywords:
        warnings.warn(_deprecation(function, keywords), DeprecationWarning, stacklevel=stacklevel)
    return Asked(function, resume, lock, keywords), rest


def resolve(call: Asked, resume: ResumePolicy, lock: LockPolicy) -> tuple[ResumePolicy, LockPolicy]:
    """The two records a call runs with.

    The call's own record where it gave one; else the graph's (``resume``, ``lock``),
    with each 0.2 keyword given set on the field it moved to (``_MOVED``), so a 0.2 call
    behaves as it did: ``run(..., reanswer=True)`` on a graph compiled with
    ``keep_compatible=True`` keeps compatible values and applies the answer.

    Raises:
        GraphError: A 0.2 keyword was given with the record that covers it.
        ValueError: A 0.2 keyword's value is not one its field takes.
    """
    moved = _MOVED[_FAMILY[call.function]]
    changes: dict[str, dict[str, Any]] = {"resume": {}, "lock": {}}
    for name, value in call.keywords:
        where = moved[name]
        given = call.resume if where.record == "resume" else call.lock
        if given is not None:
            raise GraphError(_mixed(call.function, name, value, where, given))
        changes[where.record][where.field] = where.value(value)
    if call.resume is None and changes["resume"]:
        resume = replace(resume, **changes["resume"])
    if call.lock is None and changes["lock"]:
        lock = replace(lock, **changes["lock"])
    return call.resume or resume, call.lock or lock


def _is_default(value: object, default: object) -> bool:
    """Whether a 0.2 keyword's value is its documented default (``1`` is no ``True``)."""
    return isinstance(value, bool) is isinstance(default, bool) and value == default


def _typed(function: str, name: str, value: object, kind: type) -> None:
    if value is not None and not isinstance(value, kind):
        raise GraphError(
            f"{function}(..., {name}=...) takes a neograph_ext.{kind.__name__} or None, not "
            f"{type(value).__name__} (for example {name}={kind.__name__}())"
        )


def _deprecation(function: str, keywords: tuple[tuple[str, Any], ...]) -> str:
    """'run(..., on_busy='raise') is deprecated: pass lock=LockPolicy(on_busy='raise')'."""
    moved = _MOVED[_FAMILY[function]]
    old = ", ".join(f"{name}={_shown(value)}" for name, value in keywords)
    records: dict[str, list[str]] = {"resume": [], "lock": []}
    for name, value in keywords:
        where = moved[name]
        records[where.record].append(f"{where.field}={_shown(where.value(value))}")
    new = [
        f"{record}={kind.__name__}({', '.join(records[record])})"
        for record, kind in (("resume", ResumePolicy), ("lock", LockPolicy))
        if records[record]
    ]
    return f"{function}(..., {old}) is deprecated: pass {', '.join(new)}"


def _mixed(function: str, name: str, value: Any, where: _Moved, given: object) -> str:
    kind = type(given).__name__
    shown = f"{where.field}={_shown(where.value(value))}"
    fix = f"{where.record}={kind}({shown}, ...)"
    return (
        f"{function}(..., {name}={_shown(value)}) and {function}(..., "
        f"{where.record}={kind}(...)) both set {kind}.{where.field}: drop {name} and pass "
        f"{fix}"
    )


def _shown(value: object) -> str:
    """A value as a message shows it: literally when short and plain, else ``...``."""
    if value is None or isinstance(value, bool | int | float | str):
        return repr(value)
    return "..."
