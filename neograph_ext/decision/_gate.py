"""The CI gate's verdicts: what each fixture's plan means for a deploy, and the report.

Rules:
- Pure: a plan (or the error planning or ``run`` would raise) in, a frozen verdict out;
  nothing is read here.
- A thread fails the gate when ``run`` would rewind it, refuse it (a change it cannot
  rewind safely), raise (strict mode, unverified checkpoints under
  ``on_unverified="raise"``), or when planning itself fails. ``allow`` names the
  outcomes a team accepts: only ``rewind`` can be allowed; errors never are.
- The report is one text: per thread its outcome, what would re-run and why.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from neograph_ext.decision._budget import Ledger
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._errors import GraphError, NeographExtError

__all__ = ["ALLOWABLE", "GateReport", "Outcome", "ThreadVerdict", "allowed", "verdict"]


class Outcome(StrEnum):
    """What ``run`` would do with a fixture's thread under the current code."""

    RESUMES = "resumes"
    """Nothing to redo: it continues, is up to date, carries values or is unverified."""
    REWIND = "rewind"
    """It forks from an earlier checkpoint and re-runs nodes."""
    REFUSE = "refuse"
    """It raises in every mode: the change cannot be rewound safely (``blocker``)."""
    RAISE = "raise"
    """It raises under the graph's policy (strict mode, ``on_unverified="raise"``)."""
    ERROR = "error"
    """Planning itself fails (an unreadable checkpoint)."""


ALLOWABLE = frozenset({Outcome.REWIND})
"""The outcomes ``allow`` may name."""

_NO_VALUES = (
    "this fixture holds no values, so keep_compatible and migrations could not keep "
    "them: export the thread with --with-values to judge them"
)


@dataclass(frozen=True)
class ThreadVerdict:
    """One fixture's thread, judged."""

    thread_id: str
    """The thread."""
    source: str
    """The fixture file."""
    outcome: Outcome
    """What ``run`` would do."""
    passed: bool
    """Whether the gate accepts it (``allow`` included)."""
    plan: ResumePlan | None = None
    """The plan; None when planning failed."""
    error: str | None = None
    """What ``run`` or planning would raise, first line."""
    notes: tuple[str, ...] = ()
    """What the gate adds: a judgement the fixture lacked the values for."""
    written_by: str | None = None
    """The stamp that last wrote the thread (``ThreadCheck.written_by``)."""
    ledger: Ledger | None = None
    """Its budget ledger, as exported (``ThreadFixture.ledger``)."""

    def describe(self) -> str:
        """The thread's lines of the report: outcome, then what re-runs and why."""
        mark = "ok  " if self.passed else "FAIL"
        head = f"{mark} thread {self.thread_id!r} ({self.source}): {self.outcome}"
        if self.plan is not None and self.plan.kind is PlanKind.REWIND:
            head += f" from step {self.plan.step}, checkpoint {self.plan.checkpoint_id}"
        elif self.plan is not None:
            head += f" ({self.plan.kind})"
        lines = [head]
        if self.plan is not None:
            lines += [f"     {line}" for line in str(self.plan).splitlines()[1:]]
            if self.outcome is Outcome.RESUMES and self.plan.next_nodes:
                lines.append(f"     runs next: {', '.join(sorted(self.plan.next_nodes))}")
        if self.error is not None:
            lines.append(f"     raises: {self.error}")
        lines += [f"     note: {note}" for note in self.notes]
        return "\n".join(lines)


@dataclass(frozen=True)
class GateReport:
    """Every fixture judged against the current code (``neograph_ext.testing``)."""

    verdicts: tuple[ThreadVerdict, ...]
    """One per fixture, in file order."""
    allowed: frozenset[Outcome] = frozenset()
    """The outcomes accepted (``allow``)."""

    @property
    def ok(self) -> bool:
        """Whether every thread passed."""
        return all(v.passed for v in self.verdicts)

    @property
    def failing(self) -> tuple[ThreadVerdict, ...]:
        """The threads that did not pass."""
        return tuple(v for v in self.verdicts if not v.passed)

    def __str__(self) -> str:
        failing = len(self.failing)
        allowing = f" (allowed: {', '.join(sorted(self.allowed))})" if self.allowed else ""
        summary = (
            f"{len(self.verdicts)} thread fixture(s) planned against this code: "
            + (f"{failing} would not resume cleanly" if failing else "all resume cleanly")
            + allowing
        )
        return "\n".join([summary, *(v.describe() for v in self.verdicts)])


def allowed(allow: str | Collection[str]) -> frozenset[Outcome]:
    """``allow`` as outcomes.

    Raises:
        GraphError: It names an outcome that cannot be allowed.
    """
    names = (allow,) if isinstance(allow, str) else tuple(allow)
    wrong = [name for name in names if name not in {o.value for o in ALLOWABLE}]
    if wrong:
        raise GraphError(
            f"allow takes {', '.join(sorted(ALLOWABLE))}, not {', '.join(map(repr, wrong))}: "
            "a thread that would refuse or raise always fails the gate"
        )
    return frozenset(Outcome(name) for name in names)


def verdict(
    thread_id: str,
    source: str,
    plan: ResumePlan | None,
    error: NeographExtError | None,
    allow: frozenset[Outcome],
    *,
    values_missing: bool = False,
) -> ThreadVerdict:
    """The verdict on one fixture's thread.

    Args:
        thread_id: The thread.
        source: The fixture file.
        plan: The plan; None when planning raised ``error``.
        error: What ``run`` would raise with ``plan``, or what planning raised.
        allow: The outcomes accepted (``allowed``).
        values_missing: The fixture holds no values and the policy would carry some
            (``keep_compatible``, ``migrations``): a rewind may be one it would avoid.
    """
    if plan is None:
        outcome = Outcome.ERROR
    elif plan.blocker:
        outcome = Outcome.REFUSE
    elif error is not None:
        outcome = Outcome.RAISE
    elif plan.kind is PlanKind.REWIND:
        outcome = Outcome.REWIND
    else:
        outcome = Outcome.RESUMES
    first = (str(error).strip().splitlines() or [type(error).__name__])[0] if error else None
    rewinds = plan is not None and plan.kind is PlanKind.REWIND
    notes = (_NO_VALUES,) if values_missing and rewinds else ()
    passed = outcome is Outcome.RESUMES or outcome in allow
    return ThreadVerdict(thread_id, source, outcome, passed, plan, first, notes)
