"""``compile(auto_resume=...)``: plain LangGraph calls plan and rewind as ``run`` does.

What a LangGraph server does to a graph (``copy`` with its own checkpointer, then
``astream``, ``ainvoke`` or ``astream_events``) is done here in-process, per saver.
"""

from __future__ import annotations

import logging
import uuid
import warnings
from collections import Counter
from importlib import metadata
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
import neograph_ext._run as run_module
from tests.drive import Drive, Saver
from tests.graphs.pipelines import Crash, linear, model

V3_EVENTS = tuple(int(p) for p in metadata.version("langgraph").split(".")[:2]) >= (1, 2)
"""LangGraph's v3 event protocol (``astream_events(version="v3")``) came with 1.2."""

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))
DONE = {"log": list("abcd")}


def _crashed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, **kwargs: Any
) -> None:
    """A thread that crashed in ``d`` under the V1 types."""
    graph = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver, **kwargs)
    with pytest.raises(Crash):
        drive.invoke(graph, {"log": []}, config)


def test_invoke_rewinds_and_then_returns_the_stored_result(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _crashed(drive, saver, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, attach=[ne.AutoResume()])
    assert drive.invoke(graph, None, config) == DONE
    assert runs == Counter("cd")
    runs.clear()
    assert drive.invoke(graph, None, config) == DONE
    assert runs == Counter()
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_an_input_on_a_complete_thread_is_a_new_turn_as_in_langgraph(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """A plain call is LangGraph's when nothing changed: a chat turn that repeats the last
    message is answered again (``run`` returns the stored result instead)."""
    graph = ne.compile(linear(runs), checkpointer=saver, attach=[ne.AutoResume()])
    assert drive.invoke(graph, {"log": []}, config) == DONE
    assert drive.invoke(graph, {"log": []}, config) == {"log": list("abcdabcd")}
    assert runs == Counter("abcdabcd")
    runs.clear()
    assert drive.run(graph, {"log": []}, config) == {"log": list("abcdabcd")}
    assert runs == Counter()


@pytest.mark.parametrize("given", [{}, {"auto_resume": None}], ids=["left-out", "0.2's None"])
def test_without_auto_resume_plain_calls_stay_plain(
    drive: Drive, saver: Saver, config: RunnableConfig, given: dict[str, Any], runs: Counter[str]
) -> None:
    _crashed(drive, saver, config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the documented default says nothing
        graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, **given)
    drive.invoke(graph, None, config)
    assert runs == Counter("d")  # LangGraph's resume: the stale `c` is kept


def test_0_2s_auto_resume_false_warns_and_keeps_plain_calls_strict(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    """0.2's ``compile(auto_resume=False)`` made plain calls (a server's runs) strict and
    left ``run`` rewinding: it keeps that meaning until 0.5, and says how to spell it."""
    _crashed(drive, saver, config)
    checkpoints = len(list(saver.list(config)))
    with pytest.warns(DeprecationWarning, match=r"auto_resume=False\) is deprecated") as seen:
        graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, auto_resume=False)
    message = str(seen[0].message)
    assert "attach=[AutoResume()], resume=ResumePolicy(on_change='raise')" in message
    assert "until 0.5" in message and seen[0].filename == __file__
    with pytest.raises(ne.CheckpointSchemaError, match="Invalidated nodes: c"):
        drive.invoke(graph, None, config)
    with pytest.raises(ne.CheckpointSchemaError):
        list(drive.graph_stream(graph, None, config))
    assert runs == Counter()  # no stale `c` handed on to `d`
    assert len(list(saver.list(config))) == checkpoints
    assert drive.run(graph, None, config) == DONE  # run() keeps the graph's policy: rewinds
    assert runs == Counter("cd")


def test_a_copy_with_a_checkpointer_keeps_auto_resume(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    """A server compiles without a saver and injects its own through ``copy``."""
    _crashed(drive, saver, config)
    graph = ne.compile(linear(runs, {"c": V2}), attach=[ne.AutoResume()])
    served = graph.copy(update={"checkpointer": saver})
    assert drive.invoke(served, None, config) == DONE
    assert runs == Counter("cd")


# Async only: a server's path (astream_events has no sync twin), on an async saver.
async def test_astream_rewinds_and_then_streams_the_stored_values_once(
    async_saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    saver = async_saver
    crashing = ne.compile(linear(Counter(), {"c": V1}, crash="d"), checkpointer=saver)
    with pytest.raises(Crash):
        await crashing.ainvoke({"log": []}, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, attach=[ne.AutoResume()])
    modes = ["values", "updates"]
    chunks = [c async for c in graph.astream(None, config, stream_mode=modes)]
    assert [c for mode, c in chunks if mode == "updates"] == [
        {"c": {"log": ["c"]}},
        {"d": {"log": ["d"]}},
    ]
    assert runs == Counter("cd")
    runs.clear()
    checkpoints = len([c async for c in saver.alist(config)])
    assert [c async for c in graph.astream(None, config, stream_mode=modes)] == [("values", DONE)]
    assert [c async for c in graph.astream(None, config, stream_mode="updates")] == []
    assert await graph.ainvoke(None, config) == DONE
    events = [e async for e in graph.astream_events(None, config, stream_mode=["values"])]
    assert [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream"] == [
        ("values", DONE)
    ]
    if V3_EVENTS:
        with warnings.catch_warnings():  # LangGraph calls its v3 protocol experimental
            warnings.simplefilter("ignore")
            v3 = await graph.astream_events(None, config, version="v3")
        assert [e["params"]["data"] async for e in v3 if e["method"] == "values"] == [DONE]
    assert runs == Counter()
    assert len([c async for c in saver.alist(config)]) == checkpoints


def test_stream_of_a_finished_thread_yields_its_values_once(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs), checkpointer=saver, attach=[ne.AutoResume()])
    drive.invoke(graph, {"log": []}, config)
    runs.clear()
    assert list(drive.graph_stream(graph, None, config, stream_mode="values")) == [DONE]
    assert list(drive.stream(graph, None, config, stream_mode=["values"])) == [("values", DONE)]
    assert runs == Counter()


def test_a_strict_graph_raises_before_any_node_runs(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    _crashed(drive, saver, config)
    checkpoints = len(list(saver.list(config)))
    strict = ne.ResumePolicy(on_change="raise")
    graph = ne.compile(
        linear(runs, {"c": V2}), checkpointer=saver, resume=strict, attach=[ne.AutoResume()]
    )
    with pytest.raises(ne.CheckpointSchemaError, match="Invalidated nodes: c") as raised:
        drive.invoke(graph, None, config)
    assert isinstance(raised.value, ValueError)  # a server passes a ValueError's message on
    with pytest.raises(ne.CheckpointSchemaError):
        list(drive.graph_stream(graph, None, config))
    assert runs == Counter()
    assert len(list(saver.list(config))) == checkpoints
    # run()'s own policy governs run().
    assert drive.run(graph, None, config, resume=ne.ResumePolicy()) == DONE
    assert runs == Counter("cd")


@pytest.mark.parametrize("durability", ["exit", "async", "sync"])
def test_an_explicit_durability_is_honoured(
    drive: Drive, saver: Saver, config: RunnableConfig, durability: str, runs: Counter[str]
) -> None:
    """As many checkpoints as LangGraph writes with the caller's ``durability``, on a new
    thread and on a rewind."""
    thread = config["configurable"]["thread_id"]
    plain: RunnableConfig = {"configurable": {"thread_id": f"{thread}-plain"}}
    drive.invoke(
        linear(runs).compile(checkpointer=saver), {"log": []}, plain, durability=durability
    )
    graph = ne.compile(linear(runs), checkpointer=saver, attach=[ne.AutoResume()])
    drive.invoke(graph, {"log": []}, config, durability=durability)
    assert len(list(saver.list(config))) == len(list(saver.list(plain)))
    assert runs == Counter("abcdabcd")

    rewound: RunnableConfig = {"configurable": {"thread_id": f"{thread}-rewound"}}
    _crashed(drive, saver, rewound)
    before = len(list(saver.list(rewound)))
    runs.clear()
    changed = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, attach=[ne.AutoResume()])
    assert drive.invoke(changed, None, rewound, durability=durability) == DONE
    assert runs == Counter("cd")
    # LangGraph's own time travel from the checkpoint before `c`: `c` and `d`, one
    # checkpoint per step (or the last one alone with "exit"), after a fork of the
    # replayed checkpoint on langgraph >= 1.2 (3 with "sync"), straight on it before (2).
    replayed: RunnableConfig = {"configurable": {"thread_id": f"{thread}-replayed"}}
    _crashed(drive, saver, replayed)
    plain_v2 = linear(Counter(), {"c": V2}).compile(checkpointer=saver)
    base = next(s for s in drive.get_state_history(plain_v2, replayed) if s.next == ("c",))
    plain_before = len(list(saver.list(replayed)))
    drive.invoke(plain_v2, None, base.config, durability=durability)
    assert len(list(saver.list(rewound))) - before == (
        len(list(saver.list(replayed))) - plain_before
    )


def test_run_on_an_auto_resuming_graph_plans_once(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    _crashed(drive, saver, config)
    graph = ne.compile(linear(runs, {"c": V2}), checkpointer=saver, attach=[ne.AutoResume()])
    with caplog.at_level(logging.INFO, logger="neograph_ext"):
        assert drive.run(graph, None, config) == DONE
    plans = [r for r in caplog.records if r.getMessage().startswith("thread ")]
    assert [r.getMessage().split(": ")[1].split(" ")[0] for r in plans] == ["rewind"]
    assert runs == Counter("cd")


def test_a_thread_written_before_stamping_starts_a_new_turn_on_another_input(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    drive.invoke(linear(runs).compile(checkpointer=saver), {"log": []}, config)
    runs.clear()
    graph = ne.compile(linear(runs), checkpointer=saver, attach=[ne.AutoResume()])
    assert drive.invoke(graph, {"log": ["again"]}, config) == {"log": [*"abcd", "again", *"abcd"]}
    assert runs == Counter("abcd")


def test_a_resume_reads_its_head_twice_and_a_crashed_task_s_namespace_once(
    drive: Drive, saver: Saver, monkeypatch: pytest.MonkeyPatch, runs: Counter[str]
) -> None:
    crashing = ne.compile(linear(Counter(), crash="c"), checkpointer=saver)
    ours, theirs = ({"configurable": {"thread_id": str(uuid.uuid4())}} for _ in range(2))
    for config in (ours, theirs):
        with pytest.raises(Crash):
            drive.run(crashing, {"log": []}, config)
    reads: Counter[str] = Counter()
    real = saver.aget_tuple if drive.is_async else saver.get_tuple

    def counting(cfg: RunnableConfig) -> Any:
        reads[cfg["configurable"]["thread_id"]] += 1
        return real(cfg)

    monkeypatch.setattr(saver, "aget_tuple" if drive.is_async else "get_tuple", counting)
    # The function itself, not the plan == run harness, whose own plan reads too.
    graph = ne.compile(linear(runs), checkpointer=saver)
    if drive.is_async:
        resumed = drive.wait(run_module.arun(graph, None, ours))
    else:
        resumed = run_module.run(graph, None, ours)
    assert resumed["log"] == list("abcd")
    assert drive.invoke(linear(runs).compile(checkpointer=saver), None, theirs)["log"] == list(
        "abcd"
    )

    assert runs == Counter({"c": 2, "d": 2})
    # One read to plan, one under the lock to check that the thread did not move meanwhile,
    # and one of the namespace the crashed task of ``c`` would have written a graph its code
    # called under (none here: a graph no stamp describes would not be trusted).
    assert (
        reads[ours["configurable"]["thread_id"]] == reads[theirs["configurable"]["thread_id"]] + 3
    )
