"""What resuming a fleet after a deploy will cost: ``DeployCost.of`` (pure).

For every thread the current code would rewind, the node runs the rewind repeats (the
plan's tasks that are not kept), and, where the thread's budget ledger recorded what
each of those nodes spent on its last execution, the spend again: summed per node and
per code version (the stamp that last wrote the thread).

Rules:
- Pure: a fold of ``(plan, written_by, ledger)``, no I/O, one pass (it may be handed a
  stream); the reads are ``check_threads``' and ``budget.ledger``'s.
- A thread's estimate is known only when its ledger recorded every node it repeats; a
  thread without a ledger, or whose ledger misses one of them (the node never finished
  a run under a budget), counts in ``unrecorded`` and adds its runs but no spend. So the
  spend is a sum over the recorded threads alone, never a guess.
- A rewind's supersteps are one per distinct step it repeats, as ``_budget.estimated``
  counts them for ``plan``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from neograph_ext.decision._budget import Ledger, Spend, estimated
from neograph_ext.decision._decision import PlanKind, ResumePlan

__all__ = ["CostLine", "DeployCost", "repeated"]


@dataclass(frozen=True)
class CostLine:
    """What one node, or the threads of one code version, would spend again."""

    threads: int = 0
    """Threads that would rewind (for a node: those repeating it)."""
    runs: int = 0
    """Node runs repeated."""
    unrecorded: int = 0
    """Of ``threads``, those whose ledger does not say what the runs cost."""
    spend: Spend = field(default_factory=Spend)
    """The estimated spend of the recorded threads' runs (a node's: its model calls and
    tokens; supersteps are a thread's, counted in the totals and per code version)."""

    def plus(self, runs: int, spend: Spend | None) -> CostLine:
        """This line with one more thread's ``runs``; ``spend`` None: unrecorded."""
        return CostLine(
            self.threads + 1,
            self.runs + runs,
            self.unrecorded + (spend is None),
            self.spend + (spend or Spend()),
        )


@dataclass(frozen=True)
class DeployCost:
    """The cost of resuming a fleet under the current code, as its ledgers recorded it."""

    total: CostLine = CostLine()
    """Every thread that would rewind."""
    nodes: Mapping[str, CostLine] = field(default_factory=dict)
    """Per node repeated (its ``spend``: what its recorded runs cost again)."""
    stamps: Mapping[str | None, CostLine] = field(default_factory=dict)
    """Per stamp that last wrote the threads (None: no readable stamp)."""

    @classmethod
    def of(cls, threads: Iterable[tuple[ResumePlan, str | None, Ledger | None]]) -> DeployCost:
        """The cost of the threads given as ``(plan, written_by, ledger)``: a thread's
        plan, the stamp that last wrote it (``ThreadCheck.written_by``), and its budget
        ledger (``budget.ledger``; None when none was recorded). Plans other than
        ``rewind`` cost nothing.
        """
        cost = cls()
        for plan, written_by, ledger in threads:
            cost = cost.plus(plan, written_by, ledger)
        return cost

    def plus(self, plan: ResumePlan, written_by: str | None, ledger: Ledger | None) -> DeployCost:
        """This cost with one more thread's (as ``of`` takes them): a fold that streams."""
        runs = repeated(plan)
        if not runs:
            return self
        recorded = ledger is not None and all(node in ledger.nodes for node, _ in runs)
        spend = estimated(ledger, runs) if recorded and ledger is not None else None
        stamps = dict(self.stamps)
        stamps[written_by] = stamps.get(written_by, CostLine()).plus(len(runs), spend)
        nodes = dict(self.nodes)
        for node in sorted({node for node, _ in runs}):
            count = sum(1 for name, _ in runs if name == node)
            again = None if spend is None or ledger is None else ledger.nodes[node]
            node_spend = None if again is None else Spend(0, *_calls(again, count))
            nodes[node] = nodes.get(node, CostLine()).plus(count, node_spend)
        return DeployCost(self.total.plus(len(runs), spend), dict(sorted(nodes.items())), stamps)


def repeated(plan: ResumePlan) -> list[tuple[str, int]]:
    """The node runs resuming ``plan``'s thread repeats, as ``(node, step)``: the tasks a
    rewind does not keep (without a per-step account, each re-run node once)."""
    if plan.kind is not PlanKind.REWIND or plan.blocker:
        return []
    if plan.steps:
        return [(task.node, task.step) for task in plan.steps if not task.kept]
    return [(node, index) for index, node in enumerate(sorted(plan.rerun))]


def _calls(spend: Spend, times: int) -> tuple[int, int]:
    return spend.model_calls * times, spend.tokens * times
