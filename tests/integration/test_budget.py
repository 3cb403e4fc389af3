"""Cumulative budgets, per saver and drive: spend counted across resumes, rewinds and
crashes is never forgotten; the run stops before the call or superstep that would pass a
cap, and a larger cap continues the thread where it stopped."""

from __future__ import annotations

import logging
import operator
import uuid
from collections import Counter
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph

import neograph_ext as ne
from neograph_ext.storage._ledger_store import RECENT
from tests.drive import Drive
from tests.graphs.budget import CALLS, STEPS, TOKENS, Crash, UsageChat, pipeline


class Fan(TypedDict):
    said: Annotated[list[str], operator.add]


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _spent(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> ne.budget.Spend:
    ledger = ne.budget.ledger(saver, config)
    assert ledger is not None
    return ledger.total


def test_a_cap_is_hit_across_two_resumes(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    budget = ne.budget.Budget(max_model_calls=6)
    config = _thread()
    crashing = ne.compile(pipeline(runs, fail={"review"}), checkpointer=saver, attach=[budget])
    with pytest.raises(Crash):
        drive.run(crashing, {"topic": "t"}, config)
    assert _spent(saver, config).model_calls == 3  # draft 1, review 2: paid, then crashed

    crashing = ne.compile(pipeline(runs, fail={"publish"}), checkpointer=saver, attach=[budget])
    with pytest.raises(Crash):
        drive.run(crashing, None, config)  # resume 1: review 2 more, publish 1
    assert _spent(saver, config).model_calls == 6

    fixed = ne.compile(pipeline(runs), checkpointer=saver, attach=[budget])
    with pytest.raises(ne.budget.BudgetExceededError) as raised:
        drive.run(fixed, None, config)  # resume 2: publish's call would be the 7th
    error = raised.value
    assert (error.cap, error.limit, error.spent.model_calls) == ("max_model_calls", 6, 6)
    assert error.thread_id == config["configurable"]["thread_id"]
    assert "max_model_calls=6" in str(error) and "larger cap" in str(error)
    assert _spent(saver, config) == ne.budget.Spend(supersteps=5, model_calls=6, tokens=6 * TOKENS)
    assert runs == Counter(draft=1, review=2, publish=2)
    # Unbudgeted, the same resume would have finished the thread.
    assert drive.get_state(fixed, config).next == ("publish",)


@pytest.mark.parametrize(
    "budget",
    [ne.budget.Budget(max_model_calls=2), ne.budget.Budget(max_supersteps=1)],
    ids=["call", "step"],
)
def test_a_stop_reaches_the_caller_once_as_the_error_alone(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    budget: ne.budget.Budget,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """LangChain logs a callback's error before re-raising it; the stop is told once."""
    graph = ne.compile(pipeline(Counter()), checkpointer=saver, attach=[budget])
    caplog.set_level(logging.INFO)  # a driver's DEBUG lines echo the stored error
    with pytest.raises(ne.budget.BudgetExceededError):
        drive.run(graph, {"topic": "t"}, _thread())
    assert [r.getMessage() for r in caplog.records if "BudgetExceeded" in r.getMessage()] == []
    assert "BudgetExceededError" not in capfd.readouterr().err


def test_raising_the_cap_continues_where_the_run_stopped(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    config = _thread()
    tight = ne.compile(
        pipeline(runs), checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=2)]
    )
    with pytest.raises(ne.budget.BudgetExceededError):
        drive.run(tight, {"topic": "t"}, config)
    assert runs == Counter(draft=1, review=1)  # review's second call was refused

    wider = ne.compile(
        pipeline(runs), checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=10)]
    )
    result = drive.run(wider, None, config)
    assert result["done"] == "ok"
    assert runs == Counter(draft=1, review=2, publish=1)  # draft kept, review ran again
    assert _spent(saver, config).model_calls == 2 + 3


def test_a_rewind_does_not_reset_spend(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    budget = ne.budget.Budget(max_model_calls=6)
    config = _thread()
    drive.run(
        ne.compile(pipeline(runs), checkpointer=saver, attach=[budget]), {"topic": "t"}, config
    )
    assert _spent(saver, config) == ne.budget.Spend(STEPS, CALLS, CALLS * TOKENS)

    deployed = ne.compile(
        pipeline(runs), checkpointer=saver, versions={"review": "v2"}, attach=[budget]
    )
    plan = drive.plan(deployed, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.rerun == {"review", "publish"}
    assert plan.estimated_cost == ne.budget.Spend(supersteps=2, model_calls=3, tokens=3 * TOKENS)
    assert "estimated cost of the re-run: 2 superstep(s), 3 model call(s)" in str(plan)

    with pytest.raises(ne.budget.BudgetExceededError):
        drive.run(deployed, None, config)  # review's 2 calls fit, publish's would be the 7th
    assert runs == Counter(draft=1, review=2, publish=2)
    assert _spent(saver, config).model_calls == 6
    # The rewind restored the state of step 1, not the spend: a fresh thread fits.
    fresh = _thread()
    assert drive.run(deployed, {"topic": "t"}, fresh)["done"] == "ok"
    assert _spent(saver, fresh).model_calls == CALLS


def test_per_turn_caps_each_turn_across_its_resumes(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    per_turn = ne.budget.Budget(max_model_calls=CALLS, per="turn")
    config = _thread()
    graph = ne.compile(pipeline(runs), checkpointer=saver, attach=[per_turn])
    for topic in ("a", "b"):
        assert drive.run(graph, {"topic": topic}, config)["done"] == "ok"
    crashing = ne.compile(pipeline(runs, fail={"review"}), checkpointer=saver, attach=[per_turn])
    with pytest.raises(Crash):
        drive.run(crashing, {"topic": "c"}, config)  # turn 3: 3 calls paid
    with pytest.raises(ne.budget.BudgetExceededError) as raised:
        drive.run(graph, None, config)  # its resume: review's 2 calls would make 5
    assert raised.value.spent.model_calls == CALLS
    assert "in its current turn" in str(raised.value)
    ledger = ne.budget.ledger(saver, config)
    assert ledger is not None
    assert [turn.model_calls for turn in ledger.turns] == [CALLS, CALLS, CALLS]
    assert ledger.total.model_calls == 3 * CALLS

    thread_cap = ne.compile(
        pipeline(runs), checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=CALLS)]
    )
    other = _thread()
    drive.run(thread_cap, {"topic": "a"}, other)
    with pytest.raises(ne.budget.BudgetExceededError):
        drive.run(thread_cap, {"topic": "b"}, other)  # per thread, turn 2 has nothing left


def test_supersteps_are_counted_for_the_thread_not_from_each_resume(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    budget = ne.budget.Budget(max_supersteps=STEPS + 1)
    config = _thread()
    crashing = ne.compile(pipeline(runs, fail={"publish"}), checkpointer=saver, attach=[budget])
    with pytest.raises(Crash):
        drive.run(crashing, {"topic": "t"}, config)
    graph = ne.compile(pipeline(runs), checkpointer=saver, attach=[budget])
    assert drive.run(graph, None, config)["done"] == "ok"  # the 4th superstep
    with pytest.raises(ne.budget.BudgetExceededError) as raised:
        drive.run(graph, {"topic": "again"}, config)
    assert raised.value.cap == "max_supersteps"
    assert runs == Counter(draft=1, review=1, publish=2)  # draft never started


def test_strict_mode_raises_its_own_error_before_any_spend(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    budget = ne.budget.Budget(max_model_calls=CALLS)
    config = _thread()
    drive.run(
        ne.compile(pipeline(runs), checkpointer=saver, attach=[budget]), {"topic": "t"}, config
    )
    strict = ne.compile(
        pipeline(runs),
        checkpointer=saver,
        versions={"draft": "v2"},
        resume=ne.ResumePolicy(on_change="raise"),
        attach=[budget],
    )
    with pytest.raises(ne.CheckpointSchemaError):
        drive.run(strict, None, config)  # the thread is also out of budget: strict wins
    assert runs == Counter(draft=1, review=1, publish=1)
    assert _spent(saver, config) == ne.budget.Spend(STEPS, CALLS, CALLS * TOKENS)


def test_without_a_budget_nothing_is_counted_or_stored(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    config = _thread()
    graph = ne.compile(pipeline(runs), checkpointer=saver)
    assert drive.run(graph, {"topic": "t"}, config)["done"] == "ok"
    assert ne.budget.ledger(saver, config) is None
    deployed = ne.compile(pipeline(runs), checkpointer=saver, versions={"review": "v2"})
    assert drive.plan(deployed, config).estimated_cost is None


def test_plain_calls_are_counted_too(
    drive: Drive, saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    config = _thread()
    graph = ne.compile(
        pipeline(runs), checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=5)]
    )
    drive.invoke(graph, {"topic": "t"}, config, durability="sync")
    with pytest.raises(ne.budget.BudgetExceededError):
        drive.invoke(graph, {"topic": "u"}, config, durability="sync")
    assert _spent(saver, config).model_calls == 5


# One way: a sync run cannot run an async node.
@pytest.mark.parametrize("drive", ["async"], indirect=True)
def test_calls_of_async_nodes_and_parallel_tasks_are_counted(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    model = UsageChat()

    async def ask(state: Fan) -> Fan:
        await model.ainvoke("a")
        await model.ainvoke("b")
        return {"said": ["ask"]}

    def tell(state: Fan) -> Fan:
        model.invoke("c")
        return {"said": ["tell"]}

    builder = StateGraph(Fan)
    builder.add_node("ask", ask)
    builder.add_node("tell", tell)
    builder.add_edge(START, "ask")
    builder.add_edge(START, "tell")  # one superstep, two parallel tasks
    builder.add_edge("ask", END)
    builder.add_edge("tell", END)
    graph = ne.compile(builder, checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=4)])
    config = _thread()
    drive.run(graph, {"said": []}, config)
    ledger = ne.budget.ledger(saver, config)
    assert ledger is not None
    assert ledger.total == ne.budget.Spend(supersteps=1, model_calls=3, tokens=3 * TOKENS)
    assert ledger.nodes["ask"].model_calls == 2 and ledger.nodes["tell"].model_calls == 1
    with pytest.raises(ne.budget.BudgetExceededError):
        drive.run(graph, {"said": ["again"]}, config)  # of 3 more calls, 1 fits
    assert _spent(saver, config).model_calls == 4


def test_a_thread_of_more_invocations_than_the_ledger_reads_keeps_every_count(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    model = UsageChat()

    def say(state: Fan) -> Fan:
        model.invoke("hi")
        return {"said": ["hi"]}

    builder = StateGraph(Fan)
    builder.add_node("say", say)
    builder.add_edge(START, "say")
    graph = ne.compile(
        builder, checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=RECENT + 3)]
    )
    config = _thread()
    for turn in range(RECENT + 3):
        drive.run(graph, {"said": [str(turn)]}, config)
    ledger = ne.budget.ledger(saver, config)
    assert ledger is not None
    assert ledger.total == ne.budget.Spend(RECENT + 3, RECENT + 3, (RECENT + 3) * TOKENS)
    assert len(ledger.turns) == RECENT + 3
    with pytest.raises(ne.budget.BudgetExceededError):
        drive.run(graph, {"said": ["one more"]}, config)


def test_a_budget_adds_nothing_to_the_graphs_checkpoints(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    plain, counted = _thread(), _thread()
    drive.run(ne.compile(pipeline(Counter()), checkpointer=saver), {"topic": "t"}, plain)
    budgeted = ne.compile(pipeline(Counter()), checkpointer=saver, attach=[ne.budget.Budget()])
    drive.run(budgeted, {"topic": "t"}, counted)

    def metadata(config: RunnableConfig) -> dict[int, dict[str, Any]]:
        root = {"configurable": {**config["configurable"], "checkpoint_ns": ""}}
        return {tup.metadata["step"]: dict(tup.metadata) for tup in saver.list(root)}

    assert metadata(plain) == metadata(counted)
    assert [s.values for s in drive.get_state_history(budgeted, counted)] == [
        s.values for s in drive.get_state_history(budgeted, plain)
    ]


# One way: the subject is sync code inside an async node, on the loop of an async saver.
@pytest.mark.parametrize("drive", ["async"], indirect=True)
def test_a_sync_model_call_inside_an_async_node_is_counted(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    model = UsageChat()

    async def ask(state: Fan) -> Fan:
        model.invoke("blocking")  # on the event loop's thread, as some nodes do
        return {"said": ["ask"]}

    builder = StateGraph(Fan)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = ne.compile(builder, checkpointer=saver, attach=[ne.budget.Budget(max_model_calls=1)])
    config = _thread()
    drive.run(graph, {"said": []}, config)
    assert _spent(saver, config) == ne.budget.Spend(supersteps=1, model_calls=1, tokens=TOKENS)
    with pytest.raises(ne.budget.BudgetExceededError):
        drive.run(graph, {"said": ["again"]}, config)


def test_the_ledger_is_deleted_with_its_thread(
    drive: Drive, saver: BaseCheckpointSaver[Any]
) -> None:
    config = _thread()
    graph = ne.compile(pipeline(Counter()), checkpointer=saver, attach=[ne.budget.Budget()])
    drive.run(graph, {"topic": "t"}, config)
    assert ne.budget.ledger(saver, config) is not None
    saver.delete_thread(config["configurable"]["thread_id"])
    assert ne.budget.ledger(saver, config) is None
