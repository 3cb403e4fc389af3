"""The write paths of 0.2, each as a setup and a call that a worker process makes.

A path is what one call of neograph-ext writes when a deploy lands on a thread:

- ``keep``: a rewind that keeps the finished work of the changed node's sibling (a
  fork, the kept writes on it, then the re-run);
- ``accept``: ``accept`` on a crashed head (a fork holding the head's pending writes),
  then ``run``; ``accept_asked``: the same on a head waiting on a question (the fork
  holds its interrupt), then the answer;
- ``migrate``: a changed channel whose stored value a migration converts (a fork
  carrying it), then the rest of the run;
- ``replay``: a changed value of turn 0 of a four-turn chat, ``replay_turns=True``;
- ``reask``: an answer sent to a question whose upstream content changed: the
  question is asked again (the answer is set aside);
- ``adopt``: a new turn on a chat plain LangGraph wrote (its items stay in the list);
- ``claim``: a thread that crashed after a parallel sibling finished, resumed by a
  deploy that changed a later node: it forks the head under its own stamp first,
  keeping the sibling's writes, then resumes the fork;
- ``claim_asked``: a node asking two questions in turn, left waiting on the first by
  the old code, answered by a deploy that changed that node: it claims the step (the
  second question is asked without a checkpoint), then each answer resumes it where
  it is;
- ``append``: a changed item type of a list every turn appended to, the earlier
  turns replayed (``replay_turns=True``);
- ``convert``: a DeltaChannel log whose entries a migration converted, then a changed
  last node: the rewind converts the earlier entries again (a fork carrying them).
- ``freplay``: an ``@entrypoint``'s replay of turns (``functional_paths``).
- ``inside``: a change inside a subgraph that crashed part-way: the subgraph's own
  checkpoint before the changed node is forked, then the parent resumes through it;
  ``inside_asked``: the same for a subgraph waiting on a question, answered (the answer
  is set aside, the question asked again) and answered again.

``setup`` runs in the test process, unkilled; ``call`` runs in a worker, which may be
killed at any write (``worker --kill-before``) and is then started again, unchanged.
Every node appends its name to the log first, so the log says what ran.
"""

from __future__ import annotations

import contextlib
import operator
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

import neograph_ext as ne
from tests.graphs.chat import extracting_once
from tests.graphs.delta import extend
from tests.graphs.entries import EntryV1, EntryV2, add_lang, entries
from tests.reliability import functional_paths as fp
from tests.reliability import worker

TURNS = 4
"""Turns of the chat replayed by ``replay``."""


def final(graph: Any, config: RunnableConfig) -> dict[str, Any]:
    """The thread's state as a call leaves it: values, next nodes, pending questions."""
    return _final(graph.get_state(config))


async def afinal(graph: Any, config: RunnableConfig) -> dict[str, Any]:
    """Async twin of ``final``."""
    return _final(await graph.aget_state(config))


def _final(state: Any) -> dict[str, Any]:
    values = state.values
    return {
        "values": dict(values) if isinstance(values, Mapping) else values,
        "next": sorted(state.next),
        "asks": [i.value for i in state.interrupts],
    }


# --- keep, accept, migrate: the six-node graph of the reliability suite -------------


class StateV2(TypedDict, total=False):
    """The reliability graph's state after a deploy: channel ``c`` holds bytes."""

    log: Annotated[list[str], operator.add]
    seed: str
    a: str
    b: str
    c: bytes
    d: str
    e: str
    f: str


def _six(saver: BaseCheckpointSaver[Any], log: Path, code: str | None = None, **kw: Any) -> Any:
    parsed = worker.parse_code(code)
    return worker.compiled(saver, worker.build(log, parsed, **kw), parsed)


def crashed_in(
    saver: BaseCheckpointSaver[Any],
    log: Path,
    config: RunnableConfig,
    node: str,
    siblings: frozenset[str] = frozenset(),
) -> None:
    """The thread after a run that failed in ``node``, once its parallel ``siblings``
    had their writes stored (else they may be lost with it, or not)."""

    def stored() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            head = saver.get_tuple(config)
            if siblings <= {channel for _, channel, _ in head.pending_writes or ()}:
                return
            time.sleep(0.005)
        raise AssertionError(f"the writes of {siblings} were never stored")

    try:
        ne.run(_six(saver, log, crash_at=node, crash_when=stored), dict(worker.INPUT), config)
    except RuntimeError:
        return
    raise AssertionError(f"the run did not fail in {node}")


def _keep_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    ne.run(_six(saver, log), dict(worker.INPUT), config)


def retyped(saver: BaseCheckpointSaver[Any], log: Path) -> Any:
    """The deployed code of ``keep``: channel ``c`` holds bytes (``StateV2``); ``d``,
    ``c``'s parallel sibling, is unchanged, and its finished work is kept."""
    parsed = worker.parse_code(None)
    return worker.compiled(saver, worker.build(log, parsed, state=StateV2), parsed)


def _keep_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = retyped(saver, log)
    ne.run(graph, dict(worker.INPUT), config)
    return final(graph, config)


async def _akeep_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = retyped(saver, log)
    await ne.arun(graph, dict(worker.INPUT), config)
    return await afinal(graph, config)


def _accept_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    crashed_in(saver, log, config, "c", frozenset("d"))


def _accept_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    # d's type changed: without the accepted head, d would run again.
    graph = _six(saver, log, "d=float")
    ne.accept(graph, config)
    ne.run(graph, dict(worker.INPUT), config)
    return final(graph, config)


def _migrate_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    crashed_in(saver, log, config, "e")


def _migrating(saver: BaseCheckpointSaver[Any], log: Path) -> Any:
    parsed = worker.parse_code(None)
    return ne.compile(
        worker.build(log, parsed, state=StateV2),
        checkpointer=saver,
        output_types={n: worker.TYPES[t] for n, t in parsed.items()},
        resume=ne.ResumePolicy(migrations={"c": lambda old: str(old).encode()}),
    )


def _migrate_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _migrating(saver, log)
    ne.run(graph, dict(worker.INPUT), config)
    return final(graph, config)


# --- replay: a chat whose first turn's value changed ---------------------------------


class Chat(TypedDict, total=False):
    said: Annotated[list[str], operator.add]
    profile: str


def _chat(saver: BaseCheckpointSaver[Any], log: Path, version: str = "v1") -> Any:
    def extract(state: Chat) -> dict[str, Any]:
        worker.record(log, "extract")
        return {"profile": f"profile-{version}"}

    def reply(state: Chat) -> dict[str, Any]:
        worker.record(log, "reply")
        return {"said": [f"re: {state['said'][-1]} ({state['profile']})"]}

    builder = extracting_once(Chat, extract, reply)
    return ne.compile(builder, checkpointer=saver, versions={"extract": version})


def _replay_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    graph = _chat(saver, log)
    for turn in range(TURNS):
        ne.run(graph, {"said": [f"q{turn}"]}, config)


def _replay_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _chat(saver, log, "v2")
    ne.run(graph, None, config, resume=ne.ResumePolicy(replay_turns=True))
    return final(graph, config)


async def _areplay_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _chat(saver, log, "v2")
    await ne.arun(graph, None, config, resume=ne.ResumePolicy(replay_turns=True))
    return await afinal(graph, config)


# --- reask: an approval whose draft changed ------------------------------------------


class Approval(TypedDict, total=False):
    topic: str
    draft: str
    answer: str
    sent: str


def _approval(saver: BaseCheckpointSaver[Any], log: Path, version: str = "v1") -> Any:
    def draft(state: Approval) -> dict[str, Any]:
        worker.record(log, "draft")
        return {"draft": f"draft-{version} of {state['topic']}"}

    def ask(state: Approval) -> dict[str, Any]:
        worker.record(log, "ask")
        return {"answer": interrupt(f"send {state['draft']}?")}

    def send(state: Approval) -> dict[str, Any]:
        worker.record(log, "send")
        return {"sent": f"{state['draft']}: {state['answer']}"}

    builder = StateGraph(Approval).add_sequence([draft, ask, send])
    builder.add_edge(START, "draft")
    return ne.compile(builder, checkpointer=saver, versions={"draft": version})


def _reask_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    ne.run(_approval(saver, log), {"topic": "release"}, config)


def _reask_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _approval(saver, log, "v2")
    ne.run(graph, Command(resume="yes"), config)
    return final(graph, config)


async def _areask_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _approval(saver, log, "v2")
    await ne.arun(graph, Command(resume="yes"), config)
    return await afinal(graph, config)


def _accept_asked_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    # The question stays pending on the accepted head, and is answered there.
    graph = _approval(saver, log, "v2")
    ne.accept(graph, config)
    ne.run(graph, Command(resume="yes"), config)
    return final(graph, config)


# --- claim: a crashed head the old code wrote, resumed by the new code --------------


def _claimed(saver: BaseCheckpointSaver[Any], log: Path) -> Any:
    """The deployed code of ``claim``: only ``f``, downstream of the crash, changed."""
    return _six(saver, log, "f=int")


def _claim_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    crashed_in(saver, log, config, "c", frozenset({"d"}))


def _claim_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _claimed(saver, log)
    ne.run(graph, None, config)
    return final(graph, config)


async def _aclaim_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _claimed(saver, log)
    await ne.arun(graph, None, config)
    return await afinal(graph, config)


# --- claim_asked: a node asking twice the old code left waiting, the new code answers --


class Asked(TypedDict, total=False):
    topic: str
    answers: str
    out: str


def asking(saver: BaseCheckpointSaver[Any], log: Path, version: str = "v1") -> Any:
    """``ask -> finish``: ``ask`` asks two questions in turn; the releases differ in
    ``ask`` (its ``version``), which has not finished when the deploy lands."""

    def ask(state: Asked) -> dict[str, Any]:
        worker.record(log, "ask")
        first, second = interrupt("first?"), interrupt("second?")
        return {"answers": f"{first} {second} ({version})"}

    def finish(state: Asked) -> dict[str, Any]:
        worker.record(log, "finish")
        return {"out": f"done: {state['answers']}"}

    builder = StateGraph(Asked).add_sequence([ask, finish])
    builder.add_edge(START, "ask")
    return ne.compile(builder, checkpointer=saver, versions={"ask": version})


def _asking_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    ne.run(asking(saver, log), {"topic": "release"}, config)


def _claim_asked_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    # One answer a request, as a client gives them; a retry answers the question the
    # thread waits on, then resumes the thread (a step whose last answer was stored
    # before the kill is finished; a finished thread is left as it is).
    graph = asking(saver, log, "v2")
    answers = {"first?": "yes", "second?": "no"}
    while asked := [i.value for i in graph.get_state(config).interrupts]:
        ne.run(graph, Command(resume=answers[asked[0]]), config)
    ne.run(graph, None, config)
    return final(graph, config)


async def _aclaim_asked_call(
    saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig
) -> Any:
    graph = asking(saver, log, "v2")
    answers = {"first?": "yes", "second?": "no"}
    while asked := [i.value for i in (await graph.aget_state(config)).interrupts]:
        await ne.arun(graph, Command(resume=answers[asked[0]]), config)
    await ne.arun(graph, None, config)
    return await afinal(graph, config)


# --- adopt: a chat plain LangGraph wrote, a new turn under run() -------------------


def _plain_chat(saver: BaseCheckpointSaver[Any], log: Path) -> Any:
    """The chat of ``replay``, compiled by LangGraph alone: its checkpoints carry no stamp."""
    return _chat(saver, log).builder.compile(checkpointer=saver)


def _adopt_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    graph = _plain_chat(saver, log)
    for turn in range(2):
        graph.invoke({"said": [f"q{turn}"]}, config)


def _adopt_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    # The items plain LangGraph appended stay in ``said``: the run adopts them.
    graph = _chat(saver, log)
    ne.run(graph, {"said": ["q2"]}, config)
    return final(graph, config)


# --- append: an item type of an accumulating list changed, earlier turns replayed ----


class NotesV1(TypedDict, total=False):
    text: str
    items: Annotated[list[int], operator.add]


class NotesV2(TypedDict, total=False):
    """After the deploy: the list holds strings; every turn's item is still in it."""

    text: str
    items: Annotated[list[str], operator.add]


def _notes(saver: BaseCheckpointSaver[Any], log: Path, state: type = NotesV1) -> Any:
    def take(values: Any) -> dict[str, Any]:
        worker.record(log, "take")
        n = len(values.get("items", []))
        return {"items": [n if state is NotesV1 else f"item {n}"]}

    builder = StateGraph(state)
    builder.add_node("take", take)
    builder.add_edge(START, "take")
    policy = ne.ResumePolicy(replay_turns=True)
    return ne.compile(builder, checkpointer=saver, resume=policy)


def _append_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    graph = _notes(saver, log)
    for turn in range(3):
        ne.run(graph, {"text": f"t{turn}"}, config)


def _append_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _notes(saver, log, NotesV2)
    ne.run(graph, None, config)
    return final(graph, config)


# --- convert: a migrated DeltaChannel log, then a rewind before its last writer --------


def _entries(saver: BaseCheckpointSaver[Any], log: Path, entry: Any, **kw: Any) -> Any:
    kind = DeltaChannel(extend, snapshot_frequency=1000)
    built = entries(entry, kind, Counter(), lambda name: worker.record(log, name))
    migrating = ne.ResumePolicy(migrations={"log": add_lang})
    return ne.compile(built, checkpointer=saver, resume=migrating, **kw)


def _convert_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    ne.run(_entries(saver, log, EntryV1), {}, config)
    ne.run(_entries(saver, log, EntryV2), None, config)


def _converting(saver: BaseCheckpointSaver[Any], log: Path) -> Any:
    return _entries(saver, log, EntryV2, versions={"d": "2"})


def _convert_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _converting(saver, log)
    ne.run(graph, None, config)
    return final(graph, config)


# --- inside, inside_asked: a change inside a subgraph whose task is pending ----------


class Inner(TypedDict, total=False):
    topic: str
    prep: str
    draft: str
    review: str
    out: str


def _inner(saver: BaseCheckpointSaver[Any], log: Path, version: str, mode: str) -> Any:
    """``research -> worker -> end``; ``worker`` (compiled by ``neograph_ext.compile``)
    runs ``prep -> draft -> review -> polish``; the releases differ in ``draft``. Under
    ``v1``, ``review`` crashes (``mode="crash"``) or asks (``"ask"``)."""

    def counted(name: str) -> Callable[[Inner], dict[str, Any]]:
        def fn(state: Inner) -> dict[str, Any]:
            worker.record(log, name)
            if name == "review" and mode == "crash" and version == "v1":
                raise RuntimeError("the old code crashes in review")
            if name == "review" and mode == "ask":
                return {"review": str(interrupt("ok?"))}
            return {"out": f"{name} ({version})"} if name == "polish" else {name: version}

        fn.__name__ = name
        return fn

    sub = StateGraph(Inner).add_sequence(
        [counted(n) for n in ("prep", "draft", "review", "polish")]
    )
    sub.add_edge(START, "prep")
    worker_graph = ne.compile(sub, checkpointer=None, versions={"draft": version})
    builder = StateGraph(Inner)
    builder.add_node("research", counted("research"))
    builder.add_node("worker", worker_graph)
    builder.add_node("end", counted("end"))
    builder.add_edge(START, "research")
    builder.add_edge("research", "worker")
    builder.add_edge("worker", "end")
    return ne.compile(builder, checkpointer=saver)


def _inside_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    with contextlib.suppress(RuntimeError):
        ne.run(_inner(saver, log, "v1", "crash"), {"topic": "release"}, config)


def _inside_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _inner(saver, log, "v2", "crash")
    ne.run(graph, None, config)
    return final(graph, config)


def _inside_asked_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    ne.run(_inner(saver, log, "v1", "ask"), {"topic": "release"}, config)


def _inside_asked_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    # The answer is set aside while the changed draft runs again and the question is
    # asked again; the same answer, sent again, answers that.
    graph = _inner(saver, log, "v2", "ask")
    ne.run(graph, Command(resume="yes"), config)
    if graph.get_state(config).interrupts:
        ne.run(graph, Command(resume="yes"), config)
    return final(graph, config)


async def _ainside_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = _inner(saver, log, "v2", "crash")
    await ne.arun(graph, None, config)
    return await afinal(graph, config)


@dataclass(frozen=True)
class WritePath:
    """One write path: how a thread is prepared, and the call that writes."""

    setup: Callable[[BaseCheckpointSaver[Any], Path, RunnableConfig], None]
    call: Callable[[BaseCheckpointSaver[Any], Path, RunnableConfig], Any]
    graph: Callable[[BaseCheckpointSaver[Any], Path], Any]
    """The graph of the deployed code, to plan the thread with."""
    acall: Callable[[BaseCheckpointSaver[Any], Path, RunnableConfig], Awaitable[Any]] | None = None
    """The call through the async drivers, on an async saver (``worker --async``)."""


PATHS: Mapping[str, WritePath] = {
    "keep": WritePath(_keep_setup, _keep_call, retyped, _akeep_call),
    "accept": WritePath(_accept_setup, _accept_call, lambda s, log: _six(s, log, "d=float")),
    "migrate": WritePath(_migrate_setup, _migrate_call, _migrating),
    "replay": WritePath(
        _replay_setup, _replay_call, lambda s, log: _chat(s, log, "v2"), _areplay_call
    ),
    "reask": WritePath(
        _reask_setup, _reask_call, lambda s, log: _approval(s, log, "v2"), _areask_call
    ),
    "accept_asked": WritePath(
        _reask_setup, _accept_asked_call, lambda s, log: _approval(s, log, "v2")
    ),
    "adopt": WritePath(_adopt_setup, _adopt_call, _chat),
    "claim": WritePath(_claim_setup, _claim_call, _claimed, _aclaim_call),
    "claim_asked": WritePath(
        _asking_setup, _claim_asked_call, lambda s, log: asking(s, log, "v2"), _aclaim_asked_call
    ),
    "append": WritePath(_append_setup, _append_call, lambda s, log: _notes(s, log, NotesV2)),
    "convert": WritePath(_convert_setup, _convert_call, _converting),
    "freplay": WritePath(fp.freplay_setup, fp.freplay_call, fp.freplay),
    "inside": WritePath(
        _inside_setup, _inside_call, lambda s, log: _inner(s, log, "v2", "crash"), _ainside_call
    ),
    "inside_asked": WritePath(
        _inside_asked_setup, _inside_asked_call, lambda s, log: _inner(s, log, "v2", "ask")
    ),
}
