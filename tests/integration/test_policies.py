"""``ResumePolicy`` and ``LockPolicy`` on real graphs: set on ``compile``, given per call,
read by plain calls of an ``auto_resume`` graph; 0.2's keywords plan and run exactly as
the records that replace them. Every case runs sync and async; counters prove what ran."""

from __future__ import annotations

import uuid
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

import neograph_ext as ne
from neograph_ext import ResumePolicy
from neograph_ext._policy import Asked, asked
from neograph_ext._read import _aread, _call, _read
from tests.integration.chat import ProfileV2, ProfileV3, chat, say
from tests.integration.pipelines import Crash, State, linear, model, node

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


@dataclass(frozen=True)
class Drive:
    """The sync or the async API, behind one awaitable surface."""

    aio: bool

    async def run(self, graph: Any, input: Any, config: RunnableConfig, **kw: Any) -> Any:
        if self.aio:
            return await ne.arun(graph, input, config, **kw)
        return ne.run(graph, input, config, **kw)

    async def stream(self, graph: Any, input: Any, config: RunnableConfig, **kw: Any) -> Any:
        if self.aio:
            return [chunk async for chunk in ne.astream(graph, input, config, **kw)]
        return list(ne.stream(graph, input, config, **kw))

    async def invoke(self, graph: Any, input: Any, config: RunnableConfig) -> Any:
        return await graph.ainvoke(input, config) if self.aio else graph.invoke(input, config)

    async def plan(self, graph: Any, config: RunnableConfig, **kw: Any) -> ne.ResumePlan:
        return await ne.aplan(graph, config, **kw) if self.aio else ne.plan(graph, config, **kw)

    async def read(self, graph: Any, config: RunnableConfig, given: Asked) -> ne.ResumePlan:
        """What a call asking ``given`` plans, read as the drivers read it."""
        call = _call(graph, config, given)
        return (await _aread(call, full=True))[0] if self.aio else _read(call, full=True)[0]


SYNC, ASYNC = Drive(False), Drive(True)


def _asking(runs: Counter[str], returns: object) -> StateGraph[Any, Any, Any, Any]:
    """``a -> ask -> b``; ``a`` declares ``returns``, ``ask`` waits on an ``interrupt()``."""

    def ask(state: State) -> dict[str, Any]:
        runs["ask"] += 1
        return {"log": [f"ask:{interrupt('ok?')}"]}

    builder = StateGraph(State)
    builder.add_node("a", node("a", runs, returns=returns))
    builder.add_node("ask", ask)
    builder.add_node("b", node("b", runs))
    builder.add_edge(START, "a")
    builder.add_edge("a", "ask")
    builder.add_edge("ask", "b")
    builder.add_edge("b", END)
    return builder


async def _crashed(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    """Crashed in ``d`` under V1."""
    graph = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        await drive.invoke(graph, {"log": []}, config)


async def _plain(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    """Crashed in ``d``, written by plain LangGraph: nothing can be verified."""
    graph = linear(Counter(), crash="d").compile(checkpointer=saver)
    with pytest.raises(Crash):
        await drive.invoke(graph, {"log": []}, config)


async def _paused(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    """Waiting on ``ask``'s question, under V1."""
    await drive.run(ne.compile(_asking(Counter(), V1), checkpointer=saver), {"log": []}, config)


async def _turns(drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> None:
    """Two finished chat turns; ``profile`` (turn 1's) is still live."""
    graph = ne.compile(chat(Counter()), checkpointer=saver)
    await drive.run(graph, say("hi"), config)
    await drive.run(graph, say("again"), config)


def _to_v3(old: Any) -> Any:
    who = old["who"] if isinstance(old, dict) else old.who
    return ProfileV3(full_name=who)


Setup = Callable[[Drive, BaseCheckpointSaver[Any], RunnableConfig], Awaitable[None]]
Build = Callable[[Counter[str]], StateGraph[Any, Any, Any, Any]]


@dataclass(frozen=True)
class Case:
    """One 0.2 keyword: a thread where it matters, and the call in both spellings."""

    setup: Setup
    build: Build
    input: Any
    old: tuple[dict[str, Any], dict[str, Any]]
    """``compile`` keywords and call keywords, spelled as in 0.2."""
    new: tuple[dict[str, Any], dict[str, Any]]
    """The same, spelled with the records."""
    ran: Counter[str]
    """What both spellings execute: never what the call would without the option."""
    kind: ne.PlanKind
    replayed: int = 0
    """How many later turns the plan replays."""
    entry: str = "run"
    """``run`` (``ne.run`` / ``arun``), ``stream`` (twins), ``invoke`` (a plain call of
    the graph), or ``plan``."""


CASES = {
    "run auto_resume=False": Case(
        _crashed,
        lambda runs: linear(runs, {"c": V2}),
        None,
        ({}, {"auto_resume": False}),
        ({}, {"resume": ResumePolicy(on_change="raise")}),
        Counter(),  # plainly: c and d
        ne.PlanKind.REWIND,
    ),
    "run reanswer": Case(
        _paused,
        lambda runs: _asking(runs, V2),
        Command(resume="yes"),
        ({}, {"reanswer": True}),
        ({}, {"resume": ResumePolicy(reanswer=True)}),
        Counter({"a": 1, "ask": 2, "b": 1}),  # plainly: asked again, b waits
        ne.PlanKind.REWIND,
    ),
    "stream replay_turns": Case(
        _turns,
        lambda runs: chat(runs, ProfileV3),
        None,
        ({}, {"replay_turns": True}),
        ({}, {"resume": ResumePolicy(replay_turns=True)}),
        Counter({"extract": 1, "reply": 2}),  # plainly: raises, nothing runs
        ne.PlanKind.REWIND,
        1,
        "stream",
    ),
    "run strict_unverified": Case(
        _plain,
        lambda runs: linear(runs),
        None,
        ({}, {"strict_unverified": True}),
        ({}, {"resume": ResumePolicy(on_unverified="raise")}),
        Counter(),  # plainly: d
        ne.PlanKind.UNVERIFIED,
    ),
    "plan replay_turns": Case(
        _turns,
        lambda runs: chat(runs, ProfileV3),
        None,
        ({}, {"replay_turns": True}),
        ({}, {"resume": ResumePolicy(replay_turns=True)}),
        Counter(),
        ne.PlanKind.REWIND,
        1,  # plainly: none, and a blocker
        "plan",
    ),
    "compile keep_compatible": Case(
        _turns,
        lambda runs: chat(runs, ProfileV2),
        None,
        ({"keep_compatible": True}, {}),
        ({"resume": ResumePolicy(keep_compatible=True)}, {}),
        Counter(),
        ne.PlanKind.MIGRATE,  # plainly: a rewind that raises (an earlier turn's value)
    ),
    "compile migrations": Case(
        _turns,
        lambda runs: chat(runs, ProfileV3),
        say("third"),
        ({"migrations": {ProfileV3: _to_v3}}, {}),
        ({"resume": ResumePolicy(migrations={ProfileV3: _to_v3})}, {}),
        Counter({"reply": 1}),  # plainly: raises, nothing runs
        ne.PlanKind.MIGRATE,
    ),
    "compile auto_resume=False": Case(
        _crashed,
        lambda runs: linear(runs, {"c": V2}),
        None,
        ({"auto_resume": False}, {}),
        ({"auto_resume": True, "resume": ResumePolicy(on_change="raise")}, {}),
        Counter(),  # plainly: d
        ne.PlanKind.REWIND,
        0,
        "invoke",
    ),
}


def _quietly(build: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return build()


def _given(case: Case, graph: Any, call: dict[str, Any]) -> Asked:
    """What the case's call asks for, as the public function it names reads it."""
    if case.entry == "invoke":
        return Asked("stream", graph.neograph_ext_auto_resume)
    function = "plan" if case.entry == "plan" else "run"
    lock = call.get("lock")
    rest = {k: v for k, v in call.items() if k not in ("resume", "lock")}
    return _quietly(lambda: asked(function, call.get("resume"), lock, rest)[0])


async def _outcome(drive: Drive, case: Case, graph: Any, config: RunnableConfig, call: Any) -> Any:
    """What the case's call returned (its node-visible part), or the error it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if case.entry == "plan":
                return (await drive.plan(graph, config, **call)).kind
            if case.entry == "invoke":
                result = await drive.invoke(graph, case.input, config)
            elif case.entry == "stream":
                return len(await drive.stream(graph, case.input, config, **call))
            else:
                result = await drive.run(graph, case.input, config, **call)
    except ne.NeographExtError as exc:
        return type(exc).__name__
    return sorted(result), result.get("log")


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


async def _both_spellings(drive: Drive, saver: BaseCheckpointSaver[Any], name: str) -> None:
    case = CASES[name]
    old_config, new_config = _thread(), _thread()
    await case.setup(drive, saver, old_config)
    await case.setup(drive, saver, new_config)
    old_runs: Counter[str] = Counter()
    new_runs: Counter[str] = Counter()
    old = _quietly(lambda: ne.compile(case.build(old_runs), checkpointer=saver, **case.old[0]))
    new = ne.compile(case.build(new_runs), checkpointer=saver, **case.new[0])

    old_call = _call(old, old_config, _given(case, old, case.old[1]))
    new_call = _call(new, old_config, _given(case, new, case.new[1]))
    assert (old_call.resume, old_call.lock) == (new_call.resume, new_call.lock)
    planned = await drive.read(old, old_config, _given(case, old, case.old[1]))
    assert planned == await drive.read(new, old_config, _given(case, new, case.new[1]))
    assert planned.kind is case.kind and len(planned.replayed) == case.replayed

    old_outcome = await _outcome(drive, case, old, old_config, case.old[1])
    new_outcome = await _outcome(drive, case, new, new_config, case.new[1])
    assert old_outcome == new_outcome
    assert old_runs == new_runs == case.ran


@pytest.mark.parametrize("name", list(CASES))
async def test_both_spellings_plan_and_run_identically(
    saver: BaseCheckpointSaver[Any], name: str
) -> None:
    await _both_spellings(SYNC, saver, name)


@pytest.mark.parametrize("name", list(CASES))
async def test_both_spellings_plan_and_run_identically_async(
    async_saver: BaseCheckpointSaver[Any], name: str
) -> None:
    await _both_spellings(ASYNC, async_saver, name)
