"""The async paths make no blocking call on the event loop.

LangChain's own tests run under ``blockbuster``, and ``langgraph dev`` refuses blocking
I/O on its loop unless started with ``--allow-blocking``: a plan that reads a node's
source file (``inspect.getsource`` stats it) fails there. Every async test of ours runs
under it too (``no_blocking_on_the_loop`` in ``tests/conftest.py``); these show it is on,
and run what LangChain's ``test_per_call_works_with_ainvoke`` runs: a served agent asking
per tool call, resumed through ``ainvoke`` with ``auto_resume=True``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from blockbuster import BlockingError
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import neograph_ext as ne
from neograph_ext.decision import _langgraph
from tests.drive import Drive
from tests.graphs.agents import agent, counted_tool
from tests.graphs.pipelines import linear, model

CITY = model("SearchArgs", city=(str, ...))


@pytest.mark.parametrize(
    ("answer", "status", "said", "searched"),
    [
        (
            {"type": "edit", "edited_action": {"name": "search", "args": {"city": "Oslo"}}},
            "success",
            "Oslo",
            1,
        ),
        ({"type": "reject"}, "error", "The tool was not executed.", 0),
        ({"type": "respond", "message": "already sent"}, "success", "already sent", 0),
    ],
    ids=["edit", "reject", "respond"],
)
async def test_a_served_agent_asking_per_call_resumes_through_ainvoke(
    answer: dict[str, Any], status: str, said: str, searched: int, runs: Counter[str]
) -> None:
    gate = HumanInTheLoopMiddleware({"search": True}, interrupt_mode="per_call")
    built = agent(runs, [counted_tool(runs, CITY)], ["search"], middleware=[lambda _: gate])
    served = ne.compile(built, checkpointer=InMemorySaver(), attach=[ne.AutoResume()])
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    [asked] = (await served.ainvoke({"messages": [HumanMessage("go")]}, config))["__interrupt__"]
    final = await served.ainvoke(Command(resume={asked.id: answer}), config)
    [message] = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert message.status == status and said in str(message.content)
    assert runs == Counter({"model": 2, "search": searched})


def _reading_source(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A graph whose plan path reads its nodes' source files, as it did before."""
    from langchain_core.runnables.utils import get_function_nonlocals

    monkeypatch.setattr(_langgraph, "_reached", get_function_nonlocals)
    return ne.compile(linear(Counter()), checkpointer=InMemorySaver())


async def test_a_blocking_call_in_the_plan_path_fails_a_coroutine_test(
    monkeypatch: pytest.MonkeyPatch, config: RunnableConfig
) -> None:
    with pytest.raises(BlockingError, match=r"os\.stat"):
        await ne.arun(_reading_source(monkeypatch), {"log": []}, config)


@pytest.mark.parametrize("drive", ["async"], indirect=True)
def test_a_blocking_call_in_the_plan_path_fails_a_test_on_an_async_drive(
    drive: Drive, monkeypatch: pytest.MonkeyPatch, config: RunnableConfig
) -> None:
    with pytest.raises(BlockingError, match=r"os\.stat"):
        drive.run(_reading_source(monkeypatch), {"log": []}, config)
