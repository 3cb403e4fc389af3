"""A notebook's deploy: one process, its classes in ``__main__``, a thread waiting on a
question. A stored value that revives as a real class other than the declared one (the
old class of a rename, still defined) is a changed type, and one that comes back as plain
data (the old class gone) a misread: either way the rewind re-runs its writer and asks
again, as for a module's class, since the class it writes now revives in this process.
Only a class the process itself cannot revive (a local class) blocks the rewind: its
answer would meet the same plain data (``test_read_back``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.cli.support import program_report
from tests.drive import SYNC_ONLY, Drive

pytestmark = pytest.mark.slow

NOTEBOOK = """
import json, sys
from collections import Counter
from typing import TypedDict
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel
import neograph_ext as ne

runs = Counter()

class Draft(BaseModel):
    text: str

def build(cls):
    class State(TypedDict, total=False):
        draft: cls
        out: str
    def write(state: State) -> dict:
        runs["write"] += 1
        return {{"draft": cls(text="hello")}}
    def ask(state: State) -> dict:
        return {{"out": interrupt("ok?")}}
    def publish(state: State) -> dict:
        runs["publish"] += 1
        return {{"out": type(state["draft"]).__name__ + ":" + state["out"]}}
    asking = StateGraph(State)
    asking.add_node("write", write)
    asking.add_node("ask", ask)
    asking.add_edge(START, "write")
    asking.add_edge("write", "ask")
    builder = StateGraph(State)
    if {nested}:  # the question is asked inside a subgraph added as a node
        builder.add_node("inner", asking.compile())
        builder.add_node("publish", publish)
        builder.add_edge(START, "inner")
        builder.add_edge("inner", "publish")
        return builder
    asking.add_node("publish", publish)
    asking.add_edge("ask", "publish")
    return asking

config = {{"configurable": {{"thread_id": "t"}}}}
with SqliteSaver.from_conn_string({path!r}) as saver:
    old = ne.compile(build(Draft), checkpointer=saver)
    assert "__interrupt__" in ne.run(old, {{}}, config)
    {deploy}
    new = ne.compile(build(Draft2), checkpointer=saver)
    report = {{"plan": str(ne.plan(new, config).kind)}}
    try:
        again = ne.run(new, Command(resume="first"), config)
        report["asked_again"] = "__interrupt__" in again
        report["out"] = ne.run(new, Command(resume="second"), config)["out"]
    except ne.CheckpointSchemaError as exc:
        report["error"] = str(exc)
    report["runs"] = dict(runs)
print(json.dumps(report))
"""

RENAMED = "class Draft2(BaseModel):\n        text: str\n        words: int = 1"
GONE = RENAMED + "\n    del sys.modules['__main__'].Draft"


def _notebook(deploy: str, path: Path, nested: bool) -> dict[str, object]:
    script = textwrap.dedent(NOTEBOOK).format(path=str(path), deploy=deploy, nested=nested)
    report: dict[str, object] = program_report("-W", "ignore", "-c", script)
    return report


NESTED = pytest.mark.parametrize("nested", [False, True], ids=["flat", "subgraph"])


@pytest.mark.slow
@SYNC_ONLY  # its subject is a process of its own, whose classes live in ``__main__``
@NESTED
@pytest.mark.parametrize("deploy", [RENAMED, GONE], ids=["old class kept", "old class gone"])
def test_a_renamed_main_class_rewinds_and_asks_again(
    drive: Drive, tmp_path: Path, nested: bool, deploy: str
) -> None:
    report = _notebook(deploy, tmp_path / "notebook.sqlite", nested)
    assert report["plan"] == "rewind", report
    assert report["asked_again"] is True  # the question comes again after the rewind
    assert report["out"] == "Draft2:second"  # `publish` reads the new class, revived
    assert report["runs"] == {"write": 2, "publish": 1}
