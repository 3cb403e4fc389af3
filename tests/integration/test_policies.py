"""``ResumePolicy`` and ``LockPolicy`` on real graphs: set on ``compile``, given per call,
read by plain calls of an ``auto_resume`` graph; 0.2's keywords plan and run exactly as
the records that replace them. Every case runs sync and async; counters prove what ran."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
import warnings
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import StateGraph
from langgraph.types import Command, interrupt

import neograph_ext as ne
from neograph_ext import LockPolicy, ResumePolicy
from neograph_ext._run import run as real_run
from neograph_ext._run import stream as real_stream
from neograph_ext.decision._policy import Asked, asked
from neograph_ext.drivers._drivers import AsyncDriver, Driver
from neograph_ext.drivers._thread import thread_call
from neograph_ext.flows._flow import thread_plan
from neograph_ext.storage._lock import athread_lock, thread_lock
from tests.graphs.chat import ProfileV2, ProfileV3, chat, say
from tests.graphs.pipelines import Crash, State, linear, model, node, wire

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


@dataclass(frozen=True)
class Drive:
    """The sync or the async API, behind one awaitable surface; the sync API is called in
    a thread, as an async caller must call it: off the event loop."""

    aio: bool

    async def run(self, graph: Any, input: Any, config: RunnableConfig, **kw: Any) -> Any:
        if self.aio:
            return await ne.arun(graph, input, config, **kw)
        return await asyncio.to_thread(ne.run, graph, input, config, **kw)

    async def stream(self, graph: Any, input: Any, config: RunnableConfig, **kw: Any) -> Any:
        if self.aio:
            return [chunk async for chunk in ne.astream(graph, input, config, **kw)]
        return await asyncio.to_thread(lambda: list(ne.stream(graph, input, config, **kw)))

    async def invoke(self, graph: Any, input: Any, config: RunnableConfig) -> Any:
        if self.aio:
            return await graph.ainvoke(input, config)
        return await asyncio.to_thread(graph.invoke, input, config)

    async def plan(self, graph: Any, config: RunnableConfig, **kw: Any) -> ne.ResumePlan:
        if self.aio:
            return await ne.aplan(graph, config, **kw)
        return await asyncio.to_thread(ne.plan, graph, config, **kw)

    async def read(self, graph: Any, config: RunnableConfig, given: Asked) -> ne.ResumePlan:
        """What a call asking ``given`` plans, read as the drivers read it."""
        call = thread_call(graph, config, given)
        if not self.aio:

            def read() -> ne.ResumePlan:
                with Driver(call) as driver:
                    return driver.run(thread_plan(call))

            return await asyncio.to_thread(read)
        async with AsyncDriver(call) as driver:
            return await driver.run(thread_plan(call))


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
    wire(builder, "a", "ask", "b")
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
        ({"attach": [ne.AutoResume()], "resume": ResumePolicy(on_change="raise")}, {}),
        Counter(),  # plainly: d, handed the stale `c`
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

    old_call = thread_call(old, old_config, _given(case, old, case.old[1]))
    new_call = thread_call(new, old_config, _given(case, new, case.new[1]))
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


@pytest.fixture
def lite(tmp_path: Path) -> Iterator[SqliteSaver]:
    """A SQLite saver: its threads are locked (in memory, none is)."""
    with SqliteSaver.from_conn_string(str(tmp_path / "lite.sqlite")) as sqlite_saver:
        yield sqlite_saver


@pytest.fixture
async def alite(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    """Async twin of ``lite``."""
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "alite.sqlite")) as saver:
        yield saver


def _held(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> Any:
    """The thread's lock, held as another process would hold it."""
    thread = config["configurable"]["thread_id"]
    return (
        athread_lock(saver, thread) if isinstance(saver, AsyncSqliteSaver) else _sync(saver, thread)
    )


@asynccontextmanager
async def _sync(saver: BaseCheckpointSaver[Any], thread: str) -> AsyncIterator[None]:
    held = thread_lock(saver, thread)
    await asyncio.to_thread(held.__enter__)
    try:
        yield
    finally:
        await asyncio.to_thread(held.__exit__, None, None, None)


LOCK_CASES = {
    "on_busy": ({"on_busy": "raise"}, {"lock": LockPolicy(on_busy="raise")}, "on_busy='raise'"),
    "lock_timeout": (
        {"lock_timeout": 0.05},
        {"lock": LockPolicy(timeout=0.05)},
        r"after waiting 0\.05 s",
    ),
}


async def _lock_spellings(drive: Drive, saver: BaseCheckpointSaver[Any], name: str) -> None:
    old_kw, new_kw, message = LOCK_CASES[name]
    for call in (old_kw, new_kw):
        config = _thread()
        await _crashed(drive, saver, config)
        runs: Counter[str] = Counter()
        graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
        async with _held(saver, config):
            with pytest.raises(ne.ThreadBusyError, match=message):
                await _outcome_or_raise(drive, graph, config, call)
        assert runs == Counter()
        await drive.run(graph, None, config)  # free again: the rewind runs
        assert runs == Counter("cd")


async def _outcome_or_raise(drive: Drive, graph: Any, config: RunnableConfig, call: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return await drive.run(graph, None, config, **call)


@pytest.mark.parametrize("name", list(LOCK_CASES))
async def test_both_lock_spellings_wait_alike(lite: SqliteSaver, name: str) -> None:
    await _lock_spellings(SYNC, lite, name)


@pytest.mark.parametrize("name", list(LOCK_CASES))
async def test_both_lock_spellings_wait_alike_async(alite: AsyncSqliteSaver, name: str) -> None:
    await _lock_spellings(ASYNC, alite, name)


@pytest.mark.parametrize("drive", [SYNC, ASYNC], ids=["sync", "async"])
async def test_the_graph_policy_governs_run_and_a_call_policy_replaces_it(
    drive: Drive, lite: SqliteSaver, alite: AsyncSqliteSaver, runs: Counter[str]
) -> None:
    saver: BaseCheckpointSaver[Any] = alite if drive.aio else lite
    config = _thread()
    await _crashed(drive, saver, config)
    strict = ResumePolicy(on_change="raise")
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, resume=strict)
    with pytest.raises(ne.CheckpointSchemaError, match="Invalidated nodes: c"):
        await drive.run(graph, None, config)
    assert runs == Counter()
    assert (await drive.run(graph, None, config, resume=ResumePolicy()))["log"] == list("abcd")
    assert runs == Counter("cd")


@pytest.mark.parametrize("drive", [SYNC, ASYNC], ids=["sync", "async"])
async def test_a_call_policy_replaces_the_graph_policy_whole(
    drive: Drive, lite: SqliteSaver, alite: AsyncSqliteSaver, runs: Counter[str]
) -> None:
    saver: BaseCheckpointSaver[Any] = alite if drive.aio else lite
    config = _thread()
    await _turns(drive, saver, config)
    keep = ResumePolicy(keep_compatible=True)
    graph = ne.compile(chat(runs, ProfileV2), checkpointer=saver, resume=keep)
    assert (await drive.plan(graph, config)).kind is ne.PlanKind.MIGRATE
    alone = await drive.plan(graph, config, resume=ResumePolicy(reanswer=True))
    assert alone.kind is ne.PlanKind.REWIND and alone.blocker is not None  # keep not applied
    with pytest.raises(ne.CheckpointSchemaError, match="keep_compatible"):
        await drive.run(graph, None, config, resume=ResumePolicy(reanswer=True))
    derived = dataclasses.replace(keep, reanswer=True)
    await drive.run(graph, None, config, resume=derived)
    assert runs == Counter()  # kept, not re-run
    assert (await drive.plan(graph, config)).kind is ne.PlanKind.UP_TO_DATE


@pytest.mark.parametrize("drive", [SYNC, ASYNC], ids=["sync", "async"])
async def test_a_call_lock_policy_replaces_the_graph_one(
    drive: Drive, lite: SqliteSaver, alite: AsyncSqliteSaver
) -> None:
    saver: BaseCheckpointSaver[Any] = alite if drive.aio else lite
    config = _thread()
    await _crashed(drive, saver, config)
    graph = ne.compile(
        linear(Counter(), {"c": V2}), checkpointer=saver, lock=LockPolicy(on_busy="raise")
    )
    async with _held(saver, config):
        with pytest.raises(ne.ThreadBusyError, match="on_busy='raise'"):
            await drive.run(graph, None, config)
        with pytest.raises(ne.ThreadBusyError, match=r"after waiting 0\.05 s"):
            await drive.run(graph, None, config, lock=LockPolicy(timeout=0.05))


async def _unknown_channel(drive: Drive, saver: BaseCheckpointSaver[Any]) -> None:
    config = _thread()
    await _crashed(drive, saver, config)
    runs: Counter[str] = Counter()
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    before = (await drive.plan(graph, config)).head_id
    wrong = ResumePolicy(keep_compatible=["nope"])
    with pytest.raises(ValueError, match="keep names channel 'nope'"):
        await drive.run(graph, None, config, resume=wrong)
    with pytest.raises(ValueError, match="migrations names type Analysis"):
        await drive.plan(graph, config, resume=ResumePolicy(migrations={V1: _to_v3}))
    assert runs == Counter() and (await drive.plan(graph, config)).head_id == before


async def test_a_call_policy_naming_an_unknown_channel_fails_before_anything_runs(
    saver: BaseCheckpointSaver[Any],
) -> None:
    await _unknown_channel(SYNC, saver)


async def test_a_call_policy_naming_an_unknown_channel_fails_before_anything_runs_async(
    async_saver: BaseCheckpointSaver[Any],
) -> None:
    await _unknown_channel(ASYNC, async_saver)


async def test_a_0_2_keyword_with_its_record_is_refused_before_anything_runs(
    saver: BaseCheckpointSaver[Any], runs: Counter[str]
) -> None:
    config = _thread()
    await _crashed(SYNC, saver, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ne.GraphError, match=r"reanswer=True\) and run\(\.\.\., resume="):
            ne.run(graph, None, config, reanswer=True, resume=ResumePolicy())
        with pytest.raises(ne.GraphError, match=r"on_busy='raise'\) and astream\(\.\.\., lock="):
            [c async for c in ne.astream(graph, None, config, on_busy="raise", lock=LockPolicy())]
        with pytest.raises(ne.GraphError, match=r"replay_turns=True\) and plan\(\.\.\., resume="):
            ne.plan(graph, config, replay_turns=True, resume=ResumePolicy())
        with pytest.raises(ne.GraphError, match=r"keep_compatible=True\) and compile"):
            ne.compile(linear(runs), keep_compatible=True, resume=ResumePolicy())
    with pytest.raises(TypeError, match=r"plan\(\) got an unexpected keyword argument 'reanswer'"):
        ne.plan(graph, config, reanswer=True)
    assert runs == Counter()


def test_each_0_2_keyword_warns_at_its_caller(saver: BaseCheckpointSaver[Any]) -> None:
    config = _thread()
    here = __file__
    with pytest.warns(DeprecationWarning) as caught:
        graph = ne.compile(linear(Counter()), checkpointer=saver, keep_compatible=True)
        real_run(graph, {"log": []}, config, on_busy="raise", durability="sync")
        list(real_stream(graph, {"log": []}, config, reanswer=True))
        ne.plan(graph, config, replay_turns=True)
    assert [(w.filename, str(w.message).split(" is deprecated")[0]) for w in caught] == [
        (here, "compile(..., keep_compatible=True)"),
        (here, "run(..., on_busy='raise')"),
        (here, "stream(..., reanswer=True)"),
        (here, "plan(..., replay_turns=True)"),
    ]


def test_the_new_spellings_warn_nothing(saver: BaseCheckpointSaver[Any]) -> None:
    config = _thread()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        graph = ne.compile(
            linear(Counter()),
            checkpointer=saver,
            resume=ResumePolicy(keep_compatible=True),
            lock=LockPolicy(),
            attach=[ne.AutoResume()],
        )
        ne.run(graph, {"log": []}, config, resume=ResumePolicy(), lock=LockPolicy())
        ne.plan(graph, config, resume=ResumePolicy(replay_turns=True))
        graph.invoke(None, config)


async def _served(drive: Drive, graph: Any, input: Any, config: RunnableConfig) -> Any:
    """A call as LangGraph Server makes it: the graph's own ``invoke`` or ``stream``."""
    if drive.aio:
        return [c async for c in graph.astream(input, config, stream_mode="values")][-1]
    streamed = await asyncio.to_thread(
        lambda: list(graph.stream(input, config, stream_mode="values"))
    )
    return streamed[-1]


@pytest.mark.parametrize("drive", [SYNC, ASYNC], ids=["sync", "async"])
async def test_a_plain_call_applies_the_graph_reanswer(
    drive: Drive, lite: SqliteSaver, alite: AsyncSqliteSaver
) -> None:
    saver: BaseCheckpointSaver[Any] = alite if drive.aio else lite
    outcomes = []
    for resume in (ResumePolicy(), ResumePolicy(reanswer=True)):
        config = _thread()
        await _paused(drive, saver, config)
        runs: Counter[str] = Counter()
        graph = ne.compile(
            _asking(runs, V2), checkpointer=saver, resume=resume, attach=[ne.AutoResume()]
        )
        await drive.invoke(graph, Command(resume="yes"), config)
        outcomes.append(runs)
    assert outcomes == [Counter({"a": 1, "ask": 1}), Counter({"a": 1, "ask": 2, "b": 1})]


@pytest.mark.parametrize("drive", [SYNC, ASYNC], ids=["sync", "async"])
async def test_a_plain_call_waits_as_the_graph_lock_says(
    drive: Drive, lite: SqliteSaver, alite: AsyncSqliteSaver
) -> None:
    saver: BaseCheckpointSaver[Any] = alite if drive.aio else lite
    for lock, message in (
        (LockPolicy(on_busy="raise"), "on_busy='raise'"),
        (LockPolicy(timeout=0.05), r"after waiting 0\.05 s"),
    ):
        config = _thread()
        await _crashed(drive, saver, config)
        runs: Counter[str] = Counter()
        graph = ne.compile(
            linear(runs, {"c": V2}), checkpointer=saver, lock=lock, attach=[ne.AutoResume()]
        )
        async with _held(saver, config):
            with pytest.raises(ne.ThreadBusyError, match=message):
                await drive.invoke(graph, None, config)
            with pytest.raises(ne.ThreadBusyError, match=message):
                await _served(drive, graph, None, config)
        assert runs == Counter()
        assert (await drive.invoke(graph, None, config))["log"] == list("abcd")
        assert runs == Counter("cd")


@pytest.mark.parametrize("drive", [SYNC, ASYNC], ids=["sync", "async"])
async def test_a_plain_call_replays_keeps_and_migrates_as_the_graph_says(
    drive: Drive, lite: SqliteSaver, alite: AsyncSqliteSaver
) -> None:
    saver: BaseCheckpointSaver[Any] = alite if drive.aio else lite
    for profile, resume, ran in (
        (ProfileV3, ResumePolicy(replay_turns=True), Counter({"extract": 1, "reply": 2})),
        (ProfileV2, ResumePolicy(keep_compatible=True), Counter()),
        (ProfileV3, ResumePolicy(migrations={"profile": _to_v3}), Counter()),
    ):
        config = _thread()
        await _turns(drive, saver, config)
        runs: Counter[str] = Counter()
        graph = ne.compile(
            chat(runs, profile), checkpointer=saver, resume=resume, attach=[ne.AutoResume()]
        )
        said = [m.content for m in (await _served(drive, graph, None, config))["messages"]]
        assert said == ["hi", "re: hi", "again", "re: again"]
        assert runs == ran
        assert (await drive.plan(graph, config)).kind is ne.PlanKind.UP_TO_DATE
        # Without the policy, the same plain call refuses: the value is an earlier turn's.
        config = _thread()
        await _turns(drive, saver, config)
        plain = ne.compile(chat(Counter(), profile), checkpointer=saver, attach=[ne.AutoResume()])
        with pytest.raises(ne.CheckpointSchemaError, match="earlier turn"):
            await _served(drive, plain, None, config)


@pytest.mark.parametrize("drive", [SYNC, ASYNC], ids=["sync", "async"])
async def test_a_plain_call_raises_as_the_graph_strict_policy_says(
    drive: Drive, lite: SqliteSaver, alite: AsyncSqliteSaver, runs: Counter[str]
) -> None:
    saver: BaseCheckpointSaver[Any] = alite if drive.aio else lite
    unverified, changed = _thread(), _thread()
    await _plain(drive, saver, unverified)
    await _crashed(drive, saver, changed)
    strict = ResumePolicy(on_change="raise", on_unverified="raise")
    graph = ne.compile(
        linear(runs, {"c": V2}), checkpointer=saver, resume=strict, attach=[ne.AutoResume()]
    )
    with pytest.raises(ne.CheckpointSchemaError, match="cannot be verified"):
        await drive.invoke(graph, None, unverified)
    with pytest.raises(ne.CheckpointSchemaError, match="Invalidated nodes: c"):
        await _served(drive, graph, None, changed)
    assert runs == Counter()
    lenient = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, attach=[ne.AutoResume()])
    assert (await drive.invoke(lenient, None, unverified))["log"] == list("abcd")
    assert runs == Counter("d")  # resumed as LangGraph would
