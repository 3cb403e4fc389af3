"""Cumulative budgets: the caps (``Budget``), what was spent (``Spend``) and the thread's
ledger (``Ledger``), as pure arithmetic.

Rules:
- No I/O here: ``_ledger_store`` reads and writes ledgers, ``_spend`` counts spend as a
  graph runs; both only call the functions below.
- A ledger only grows. Ledgers read back from storage are merged by taking the larger of
  every count (``merged``), so no order of writes, rewinds or forks lowers one.
- A cap is checked before the spend it limits: a superstep or a model call that would
  take the count past its cap does not start. Tokens are known only after a call, so a
  call starts while the tokens spent are below the cap, and that last call may pass it.
- A turn is a run started with an input (not a resume, not a rewind of the same turn);
  ``per="turn"`` caps what the current turn spent, across its resumes and rewinds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Literal

from neograph_ext.decision._records import LEDGER_FORMAT, read_ledger_document

__all__ = [
    "Budget",
    "Exceeded",
    "Ledger",
    "Spend",
    "decode_ledger",
    "encode_ledger",
    "estimated",
    "merged",
]


@dataclass(frozen=True)
class Budget:
    """What a thread may spend, in total (``per="thread"``) or per turn (``per="turn"``),
    counted across every resume, rewind, crash and kill.

    Set on the graph: ``compile(builder, checkpointer=..., attach=[Budget(...)])``. A cap
    left ``None`` is not limited. When a cap would be passed, the run stops with
    ``BudgetExceededError`` before the superstep or model call that would pass it; the
    thread is left as a crash leaves it, so compiling with a larger cap and calling
    ``run`` again continues.
    """

    max_supersteps: int | None = None
    """Supersteps of the graph (not of its subgraphs); unlike ``recursion_limit``, which
    counts from each resume, these are counted for the thread (or turn) as a whole."""
    max_model_calls: int | None = None
    """Chat-model calls made anywhere inside the graph: nodes, subgraphs, tools."""
    max_tokens: int | None = None
    """Tokens those calls reported (``usage_metadata["total_tokens"]``)."""
    per: Literal["thread", "turn"] = "thread"
    """``thread``: every turn of the thread counts; ``turn``: only the current turn."""

    def __post_init__(self) -> None:
        for cap in ("max_supersteps", "max_model_calls", "max_tokens"):
            value = getattr(self, cap)
            if value is not None and (type(value) is not int or value < 0):
                raise ValueError(f"Budget({cap}={value!r}): a cap is a whole number >= 0")
        if self.per not in ("thread", "turn"):
            raise ValueError(f'Budget(per={self.per!r}): per is "thread" or "turn"')


@dataclass(frozen=True)
class Spend:
    """Counts of what was spent."""

    supersteps: int = 0
    """Supersteps started."""
    model_calls: int = 0
    """Chat-model calls started."""
    tokens: int = 0
    """Tokens the finished calls reported."""

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            self.supersteps + other.supersteps,
            self.model_calls + other.model_calls,
            self.tokens + other.tokens,
        )

    def most(self, other: Spend) -> Spend:
        """The larger of each count."""
        return Spend(
            max(self.supersteps, other.supersteps),
            max(self.model_calls, other.model_calls),
            max(self.tokens, other.tokens),
        )

    def __str__(self) -> str:
        return (
            f"{self.supersteps} superstep(s), {self.model_calls} model call(s), "
            f"{self.tokens} token(s)"
        )


_STEP = Spend(supersteps=1)
_CALL = Spend(model_calls=1)


@dataclass(frozen=True)
class Exceeded:
    """A cap the next superstep or model call would pass."""

    cap: str
    """The ``Budget`` field: ``max_supersteps``, ``max_model_calls`` or ``max_tokens``."""
    limit: int
    """Its value."""
    spent: Spend
    """What the thread (or turn) has spent."""
    per: Literal["thread", "turn"]
    """What ``spent`` covers."""


@dataclass(frozen=True)
class Ledger:
    """What a thread spent: in total, per turn, and per node on its last execution."""

    total: Spend = Spend()
    """Everything the thread spent."""
    turns: tuple[Spend, ...] = ()
    """Per turn, oldest first; the last is the current turn."""
    nodes: Mapping[str, Spend] = field(default_factory=dict)
    """Per node of the graph, what its last execution spent (model calls and tokens
    inside it, its subgraphs and tools included): what a rewind re-running it costs."""

    @property
    def turn(self) -> Spend:
        """What the current turn spent."""
        return self.turns[-1] if self.turns else Spend()

    def new_turn(self) -> Ledger:
        """The ledger as a new turn starts."""
        return Ledger(self.total, (*self.turns, Spend()), self.nodes)

    def step_started(self) -> Ledger:
        """The ledger once a superstep started."""
        return self._spend(_STEP, None)

    def node_started(self, node: str) -> Ledger:
        """The ledger once an execution of ``node`` started: its last spend restarts."""
        return Ledger(self.total, self.turns, {**self.nodes, node: Spend()})

    def call_started(self, node: str | None) -> Ledger:
        """The ledger once a model call started inside ``node`` (None: outside any)."""
        return self._spend(_CALL, node)

    def call_ended(self, node: str | None, tokens: int) -> Ledger:
        """The ledger once a model call inside ``node`` reported ``tokens``."""
        return self._spend(Spend(tokens=max(tokens, 0)), node)

    def exceeded(self, budget: Budget, spending: Literal["step", "call"]) -> Exceeded | None:
        """The cap that starting one more superstep (``step``) or model call (``call``)
        would pass, if any."""
        spent = self.turn if budget.per == "turn" else self.total
        if spending == "step":
            checks = [("max_supersteps", budget.max_supersteps, spent.supersteps + 1)]
        else:
            checks = [
                ("max_model_calls", budget.max_model_calls, spent.model_calls + 1),
                ("max_tokens", budget.max_tokens, spent.tokens + 1),
            ]
        for cap, limit, after in checks:
            if limit is not None and after > limit:
                return Exceeded(cap, limit, spent, budget.per)
        return None

    def _spend(self, spend: Spend, node: str | None) -> Ledger:
        turns = self.turns or (Spend(),)
        nodes = dict(self.nodes)
        if node is not None:
            nodes[node] = nodes.get(node, Spend()) + spend
        return Ledger(self.total + spend, (*turns[:-1], turns[-1] + spend), nodes)


def merged(ledgers: Iterable[Ledger]) -> Ledger:
    """One ledger from several stored ones, oldest first: the larger of every count, so
    a ledger written by a run that started from an older copy lowers nothing; each
    node's last spend from the newest ledger that has it."""
    total, turns, nodes = Spend(), list[Spend](), dict[str, Spend]()
    for ledger in ledgers:
        total = total.most(ledger.total)
        for index, spend in enumerate(ledger.turns):
            if index < len(turns):
                turns[index] = turns[index].most(spend)
            else:
                turns.append(spend)
        nodes.update(ledger.nodes)
    return Ledger(total, tuple(turns), nodes)


def estimated(ledger: Ledger, steps: Iterable[tuple[str, int]]) -> Spend:
    """What running ``steps`` again costs, as far as the ledger recorded: the last spend
    of each ``(node, step)``'s node, and one superstep per distinct step.

    Args:
        ledger: The thread's ledger.
        steps: The tasks that run again, as ``(node, step)``.
    """
    cost, seen = Spend(), set[int]()
    for node, step in steps:
        cost = cost + ledger.nodes.get(node, Spend())
        if step not in seen:
            seen.add(step)
            cost = cost + _STEP
    return cost


def encode_ledger(ledger: Ledger) -> str:
    """The ledger as compact JSON: counts as ``[supersteps, calls, tokens]``."""
    return json.dumps(
        {
            "v": LEDGER_FORMAT,
            "t": _counts(ledger.total),
            "u": [_counts(spend) for spend in ledger.turns],
            "n": {node: _counts(spend)[1:] for node, spend in sorted(ledger.nodes.items())},
        },
        separators=(",", ":"),
    )


def decode_ledger(raw: object) -> Ledger | None:
    """A stored ledger (``encode_ledger``); None when it is not one this version wrote
    (``_records.LedgerDocument``)."""
    document = read_ledger_document(raw)
    if document is None:
        return None
    return Ledger(
        Spend(*document.t),
        tuple(Spend(*counts) for counts in document.u),
        {node: Spend(0, *counts) for node, counts in document.n.items()},
    )


def _counts(spend: Spend) -> list[int]:
    return [getattr(spend, name.name) for name in fields(Spend)]
