"""neograph-ext inspects a graph with what the graph already imported: compiling,
running and planning an agent that LangGraph's prebuilt package built imports neither
``langchain`` nor ``deepagents``. Importing either changes LangChain's run metadata for
the rest of the process (``lc_versions``, ``ls_integration``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.cli.support import run_program
from tests.drive import SYNC_ONLY, Drive

pytestmark = pytest.mark.slow

OPTIONAL = ("langchain", "deepagents")

SCRIPT = """
import sys
from collections import Counter
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent
from langchain_core.messages import HumanMessage
import neograph_ext as ne
from tests.graphs.apps import FakeChat, search_tool
from tests.graphs.pipelines import model

runs = Counter()
tool = search_tool(runs, model("SearchArgs", query=(str, ...)))
tools = StateGraph(MessagesState)
tools.add_node("tools", ToolNode([tool]))
tools.add_edge(START, "tools")
with SqliteSaver.from_conn_string({path!r}) as saver:
    for built in (create_react_agent(FakeChat(runs=runs, call={{"query": "q"}}), [tool]), tools):
        graph = ne.compile(built, checkpointer=saver)
        if built is not tools:
            config = {{"configurable": {{"thread_id": "t"}}}}
            ne.run(graph, {{"messages": [HumanMessage("hi")]}}, config)
            assert ne.plan(graph, config).kind == "up_to_date"
            ne.check_threads(graph)
print(sorted({{m.partition(".")[0] for m in sys.modules}} & set({optional!r})), dict(runs))
"""


@SYNC_ONLY  # its subject is what a process imports, in a subprocess
def test_a_prebuilt_agent_is_compiled_run_and_planned_without_importing_langchain(
    drive: Drive, tmp_path: Path
) -> None:
    script = textwrap.dedent(SCRIPT).format(path=str(tmp_path / "agent.sqlite"), optional=OPTIONAL)
    done = run_program("-W", "ignore", "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] {'model': 2, 'search': 1}"
