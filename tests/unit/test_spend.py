"""The counting callback's bookkeeping (``_spend._Tally``), fed the events LangChain
sends, without a graph or a saver: which runs are supersteps, whose calls are whose."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from neograph_ext.budget import Budget, BudgetExceededError, Ledger, Spend
from neograph_ext.storage._spend import _Tally


def _task(tally: _Tally, node: str, step: int) -> UUID:
    run = uuid4()
    tally.run_started(run, tally.root, {"langgraph_node": node, "langgraph_step": step})
    return run


def _answered(tokens: int) -> LLMResult:
    usage = {"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens}
    message = AIMessage("ok", usage_metadata=usage)  # type: ignore[arg-type]
    return LLMResult(generations=[[ChatGeneration(message=message)]])


def _started(budget: Budget, stored: Ledger | None = None, new_turn: bool = True) -> _Tally:
    tally = _Tally(budget, "t1", new_turn)
    tally.started(uuid4(), stored)
    return tally


def test_parallel_tasks_of_one_step_are_one_superstep() -> None:
    tally = _started(Budget())
    _task(tally, "a", 1)
    _task(tally, "b", 1)
    _task(tally, "c", 2)
    assert tally.ledger.total.supersteps == 2


def test_runs_below_a_task_are_no_superstep_and_their_calls_are_the_tasks() -> None:
    tally = _started(Budget())
    task = _task(tally, "agent", 1)
    inner = uuid4()  # a subgraph's task: its metadata names a node, its parent is not root
    tally.run_started(inner, task, {"langgraph_node": "inner", "langgraph_step": 7})
    tool = uuid4()
    tally.run_started(tool, inner, None)
    call = uuid4()
    tally.call_started(call, tool)
    assert tally.call_ended(call, _answered(12))
    assert tally.ledger.total == Spend(1, 1, 12)
    assert tally.ledger.nodes == {"agent": Spend(0, 1, 12)}


def test_the_refused_call_is_not_counted_and_the_error_names_the_way_out() -> None:
    tally = _started(Budget(max_model_calls=1))
    task = _task(tally, "model", 1)
    tally.call_started(uuid4(), task)
    with pytest.raises(BudgetExceededError) as raised:
        tally.call_started(uuid4(), task)
    assert raised.value.spent.model_calls == 1 and tally.ledger.total.model_calls == 1
    assert "Budget(max_model_calls=...)" in str(raised.value)


def test_the_refused_superstep_is_not_counted() -> None:
    tally = _started(Budget(max_supersteps=1))
    _task(tally, "a", 1)
    with pytest.raises(BudgetExceededError):
        _task(tally, "b", 2)
    with pytest.raises(BudgetExceededError):  # its sibling task is refused too
        _task(tally, "c", 2)
    assert tally.ledger.total.supersteps == 1


def test_a_resume_continues_the_stored_turn_and_an_input_starts_one() -> None:
    stored = Ledger().new_turn().step_started()
    assert _started(Budget(), stored, new_turn=False).ledger.turns == (Spend(1, 0, 0),)
    assert _started(Budget(), stored, new_turn=True).ledger.turns == (Spend(1, 0, 0), Spend())


def test_a_call_that_reports_no_usage_counts_as_a_call_only() -> None:
    tally = _started(Budget())
    call = uuid4()
    tally.call_started(call, _task(tally, "model", 1))
    silent = LLMResult(generations=[[ChatGeneration(message=AIMessage("ok"))]])
    assert not tally.call_ended(call, silent)
    assert tally.ledger.total == Spend(1, 1, 0)
