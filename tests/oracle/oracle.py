"""The differential oracle: resuming a thread release 1 wrote, under release 2, equals a
fresh run of release 2 with the same inputs and answers.

``check(case, saver)`` runs release 1 on a thread until it stops (a node crashes, a
question waits, or the turn finished), resumes it under release 2 with ``run`` (inside
the plan == run harness of the integration suite), runs release 2 afresh on a thread of
its own, and fails unless:

- the final states agree value for value and type for type (``typed``);
- each node ran at most as often as in the fresh run's last turn;
- the resume's first step ran exactly the stale work: the changed nodes of the earliest
  step that holds finished changed work or unfinished work, plus that unfinished work
  (``expected_first``); and ``plan()``, taken just before, said so (kind, re-run, kept);
- no question answered before the deploy was asked again unless the resume re-ran it
  because something upstream of it changed;
- or the resume refused with a ``CheckpointSchemaError`` the plan announced, before any
  node ran.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import BaseModel

import neograph_ext as ne
from tests.graphs.pipelines import Crash, deployed
from tests.integration.agreement import Executions, install
from tests.oracle.spec import Counted, Spec, build, changed_nodes, converted, models

__all__ = ["Case", "check", "typed"]


@dataclass(frozen=True)
class Case:
    """A thread's story: release 1 runs ``turns`` turns and stops; release 2 resumes."""

    old: Spec
    new: Spec
    crash: str | None = None
    """A node that crashes in release 1's last turn."""
    answered: int = 99
    """How many times release 1 answers questions in its last turn before it stops."""
    turns: int = 1
    resume: ne.ResumePolicy | None = None
    by_id: bool = False
    """Answers are keyed by interrupt id (``Command(resume={id: value})``), even one."""
    next_turn: bool = False
    """Release 1's last turn finished; release 2 runs the thread's next turn (with the
    next input) rather than resuming."""


def doc(turn: int) -> str:
    """Each turn's input; of a different length, so that each turn's seeds differ."""
    return "turn" + "!" * turn


def answer(question: Any) -> str:
    return f"ok-{question}"


def typed(value: Any) -> Any:
    """``value`` with the type of every part spelled out: ``1`` and ``"1"`` differ, and
    so do a model and the dict a stored value revived as."""
    if isinstance(value, BaseMessage):
        return (type(value).__name__, value.content, value.id)
    if isinstance(value, BaseModel):
        return (type(value).__qualname__, typed(dict(value.__dict__)))
    if isinstance(value, Mapping):
        return ("dict", sorted((str(k), typed(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return (type(value).__name__, [typed(v) for v in value])
    return (type(value).__name__, value)


@dataclass
class Story:
    """What one thread's run did in its last turn."""

    graph: Any
    config: RunnableConfig
    counted: Counted
    executions: Executions = field(default_factory=Executions)
    asked: list[str] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)
    by_id: bool = False

    def drive(self, first: Any, *, limit: float = math.inf, stop_on_crash: bool = False) -> None:
        """``run`` from ``first``, answering each question, ``limit`` times at most."""
        value = first
        config: RunnableConfig = {**self.config, "callbacks": [self.executions]}
        while True:
            try:
                ne.run(self.graph, value, config)
            except Crash:
                if not stop_on_crash:
                    raise
                return
            pending = self.graph.get_state(self.config).interrupts
            self.asked += [str(p.value) for p in pending]
            if not pending or limit <= 0:
                return
            limit -= 1
            value = self.answer(pending)

    def answer(self, pending: Any) -> Command[Any]:
        self.answered += [str(p.value) for p in pending]
        if len(pending) == 1 and not self.by_id:
            return Command(resume=answer(pending[0].value))
        return Command(resume={p.id: answer(p.value) for p in pending})

    def final(self, turn: int) -> dict[str, Any]:
        """The state's values, the reducers' items of the last turn alone (an earlier
        turn's items are history, made by the code of their time)."""
        values = dict(self.graph.get_state(self.config).values)
        mine = doc(turn)
        if "log" in values:
            values["log"] = [e for e in values["log"] if e.startswith(f"{mine}/")]
        if "results" in values:
            values["results"] = [e for e in values["results"] if e.startswith(f"{len(mine)}/")]
        if "msgs" in values:
            values["msgs"] = [m for m in values["msgs"] if str(m.id).endswith(f"-{mine}")]
        if "picks" in values:
            values["picks"] = [p for p in values["picks"] if p.text.startswith(f"{mine}/")]
        if "notes" in values:
            values["notes"] = [n for n in values["notes"] if n["text"].startswith(f"{mine}/")]
        return values


def _release(spec: Spec, saver: BaseCheckpointSaver[Any], case: Case, thread: str) -> Story:
    deployed(*models(spec).values())
    counted = Counted()
    graph = ne.compile(
        build(spec, counted),
        checkpointer=saver,
        versions=spec.versions() or None,
        renames=dict(spec.renames) or None,
        **({"resume": case.resume} if case.resume else {}),
    )
    return Story(graph, {"configurable": {"thread_id": thread}}, counted, by_id=case.by_id)


def _turns(story: Story, turns: int, *, crash: str | None, limit: float) -> None:
    for turn in range(1, turns):
        story.drive({"doc": doc(turn)})
    story.executions, story.asked, story.answered = Executions(), [], []
    story.counted.runs.clear()
    story.counted.arm(crash)
    story.drive({"doc": doc(turns)}, limit=limit, stop_on_crash=True)
    story.counted.arm(None)


def check(case: Case, saver: BaseCheckpointSaver[Any]) -> str:
    """Run ``case`` on ``saver`` and fail unless the oracle holds; what happened, in a
    word (``rewind``, ``continue``, ``up_to_date``, ``refused``)."""
    thread = str(uuid.uuid4())
    old = _release(case.old, saver, case, thread)
    _turns(old, case.turns, crash=case.crash, limit=case.answered)
    fresh = _release(case.new, InMemorySaver(), case, str(uuid.uuid4()))
    _turns(fresh, case.turns + case.next_turn, crash=None, limit=math.inf)
    new = _release(case.new, saver, case, thread)
    if case.next_turn:
        return _next_turn(case, fresh, new)
    pending = old.graph.get_state(old.config).interrupts
    plan = ne.plan(new.graph, new.config)
    first = new.answer(pending) if pending else None
    with pytest.MonkeyPatch.context() as patch:
        install(patch)
        try:
            new.drive(first, limit=0)
        except ne.CheckpointSchemaError as refused:
            assert plan.blocker, f"refused without a plan saying so: {refused}\n{plan}"
            assert not new.counted.runs, f"refused after running {new.counted.runs}"
            return "refused"
        first_step = _first_step(new.executions)
        if pending_now := _pending(new):  # a question asked over and over fails, not hangs
            new.drive(new.answer(pending_now), limit=len(fresh.asked))
    _compare(case, old, fresh, new, plan, first_step, {str(p.value) for p in pending})
    return str(plan.kind)


def _next_turn(case: Case, fresh: Story, new: Story) -> str:
    """Release 2 runs the next turn of the thread release 1 finished: it equals a fresh
    run's, runs each node as often, and no stored value is read as another class; or it
    refuses, as the plan said, before any node ran."""
    assert not new.graph.get_state(new.config).interrupts, "release 1's last turn unfinished"
    turn = {"doc": doc(case.turns + 1)}
    plan = ne.plan(new.graph, new.config, input=turn)
    with pytest.MonkeyPatch.context() as patch:
        install(patch)
        try:
            new.drive(turn, limit=len(fresh.asked))
        except ne.CheckpointSchemaError as refused:
            assert plan.blocker, f"refused without a plan saying so: {refused}\n{plan}"
            assert not new.counted.runs, f"refused after running {new.counted.runs}"
            return "refused"
    assert plan.blocker is None, f"ran though the plan said it would refuse\n{plan}"
    got, want = new.final(case.turns + 1), fresh.final(case.turns + 1)
    assert typed(got) == typed(want), f"the next turn differs from a fresh run's\n{plan}"
    assert new.counted.runs == fresh.counted.runs, f"{new.counted.runs} != {fresh.counted.runs}"
    assert new.asked == fresh.asked, f"asked {new.asked}, a fresh run {fresh.asked}\n{plan}"
    _not_converted(new, plan)
    return str(plan.kind)


def _not_converted(story: Story, plan: ne.ResumePlan) -> None:
    """No stored item of a union is handed back as another member of it, in any turn."""
    wrong = converted(story.graph.get_state(story.config).values)
    assert not wrong, f"stored items read as another class: {wrong}\n{plan}"


def _pending(story: Story) -> Any:
    return story.graph.get_state(story.config).interrupts


def _first_step(executions: Executions) -> set[str]:
    if not executions.tasks:
        return set()
    first = min(step for step, _ in executions.tasks)
    return {node for step, node in executions.tasks if step == first}


def _compare(
    case: Case,
    old: Story,
    fresh: Story,
    new: Story,
    plan: ne.ResumePlan,
    first_step: set[str],
    waiting: set[str],
) -> None:
    got, want = typed(new.final(case.turns)), typed(fresh.final(case.turns))
    assert got == want, f"resumed state differs from a fresh run\n{plan}"
    _not_converted(new, plan)
    more = {n: c for n, c in new.counted.runs.items() if c > fresh.counted.runs[n]}
    assert not more, f"ran more often than a fresh run: {more} > {fresh.counted.runs}\n{plan}"
    step = {node: s for s, node in old.executions.tasks}
    was = {now: before for before, now in case.new.renames}  # compared in release 1's names
    first_step = {was.get(n, n) for n in first_step}
    unfinished = {case.crash} if case.crash in step else set()
    unfinished |= {q.split("?")[0] for q in waiting}
    stale = changed_nodes(case.old, case.new) & (step.keys() - unfinished)
    changed_at = min((step[n] for n in stale), default=math.inf)
    stopped_at = min((step[n] for n in unfinished), default=math.inf)
    at = min(changed_at, stopped_at)
    expected = {n for n in stale if step[n] == at}
    expected |= unfinished if stopped_at == at else set()
    assert first_step == expected, (
        f"the resume's first step ran {sorted(first_step)}, the stale work is "
        f"{sorted(expected)}\n{plan}"
    )
    if changed_at <= stopped_at and stale:
        kind = "rewind"
    else:
        kind = "continue" if unfinished else "up_to_date"
    # A changed node that never finished re-runs either way: a fork keeps its siblings.
    forks = kind == "continue" and bool(changed_nodes(case.old, case.new) & unfinished)
    assert str(plan.kind) in (kind, "rewind" if forks else kind), (
        f"planned {plan.kind}, expected {kind}\n{plan}"
    )
    if kind == "rewind":
        before = {n for n, s in step.items() if s < at}
        rerun, kept = ({was.get(n, n) for n in names} for names in (plan.rerun, plan.kept))
        assert expected <= rerun and before <= kept, f"plan misnames\n{plan}"
    # ``reanswer``: the answer given to the question waiting is applied, never asked for.
    reanswer = case.resume is not None and case.resume.reanswer
    rerun = changed_nodes(case.old, case.new) | {n for n, s in step.items() if s > at}
    given = {*old.answered, *waiting}
    if reanswer:
        rerun, given = rerun - {q.split("?")[0] for q in waiting}, waiting
    again = [q for q in new.asked if q in given and q.split("?")[0] not in rerun]
    assert not again, f"asked again, though nothing upstream changed: {again}\n{plan}"
