"""A pydantic ``RootModel`` never reads back from a checkpoint (LangGraph's serializer
revives a model as ``cls(**data)``, which fails for a list, and hands back the list),
nor does a generic model parametrised where pydantic binds no name for it (the
serializer looks ``Envelope[int]`` up by that name): ``compile`` warns of them,
``unrevivable_types`` names them, and a node reading one is handed the stored data
validated as the declared type, so a resume neither rewinds to its writer nor loops:
after a question (answered in the same process or another), a crash, and on a new turn,
with no deploy at all."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypedDict, TypeVar

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel, RootModel

import neograph_ext as ne
from tests.drive import Drive, Saver


class Tags(RootModel[list[str]]):
    """What the costly node writes: a list, as a model of its own."""


T = TypeVar("T")


class Envelope(BaseModel, Generic[T]):
    """A generic model: only a function parametrises it here, so no module binds it."""

    items: list[T]


def _form(form: str) -> tuple[type, Callable[[list[str]], Any], Callable[[Any], list[str]]]:
    """The declared type of ``tags``, how ``gen`` makes a value, how ``use`` reads one."""
    if form == "root":
        return Tags, Tags, lambda tags: list(tags.root)
    envelope = Envelope[str]
    return envelope, lambda items: envelope(items=items), lambda tags: list(tags.items)


FORMS = ["root", "generic"]


def _tagged(
    runs: Counter[str], form: str = "root", *, ask: bool = False, crash: list[bool] | None = None
) -> Any:
    """``gen`` (the costly node) writes ``tags`` (of the ``form``); ``use`` reads them,
    asking a question first (``ask``) or crashing while ``crash`` holds a True it pops;
    ``seen`` records the class ``use`` was handed."""
    declared, make, read = _form(form)
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Tagged",
        {"q": str, "tags": declared, "answer": str, "seen": list[str]},
        total=False,
    )

    def gen(state: Any) -> dict[str, Any]:
        runs["gen"] += 1
        return {"tags": make([state["q"], "x"])}

    def use(state: Any) -> dict[str, Any]:
        runs["use"] += 1
        answer = interrupt("keep these tags?") if ask else "-"
        if crash and crash.pop():
            raise RuntimeError("use crashed")
        tags = state["tags"]
        return {"answer": answer, "seen": [type(tags).__name__, *read(tags)]}

    builder = StateGraph(state).add_node("gen", gen).add_node("use", use)
    return builder.add_edge(START, "gen").add_edge("gen", "use").add_edge("use", END)


@pytest.mark.parametrize(
    ("form", "name", "why"),
    [("root", "Tags", "RootModel"), ("generic", "Envelope[str]", "parametrised generic model")],
)
def test_compile_warns_of_the_class_and_unrevivable_types_names_it(
    caplog: pytest.LogCaptureFixture, form: str, name: str, why: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="neograph_ext"):
        graph = ne.compile(_tagged(Counter(), form), checkpointer=None)
    (found,) = ne.unrevivable_types(graph)
    assert f"{__name__}.{name}" in found and why in found
    assert any(f"{__name__}.{name}" in r.getMessage() for r in caplog.records)
    strict = ne.ResumePolicy(on_change="raise")  # guidance: a node is handed the class
    assert ne.unrevivable_types(
        ne.compile(_tagged(Counter(), form), checkpointer=None, resume=strict)
    )


@pytest.mark.parametrize("form", FORMS)
def test_an_answer_resumes_the_asking_node_with_the_declared_class_and_gen_runs_once(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str], form: str
) -> None:
    graph = ne.compile(_tagged(runs, form, ask=True), checkpointer=saver)
    asked = drive.run(graph, {"q": "a"}, config)
    assert "__interrupt__" in asked
    planned = drive.plan(graph, config)
    assert planned.kind is ne.PlanKind.CONTINUE, planned
    result = drive.run(graph, Command(resume="yes"), config)
    name = "Tags" if form == "root" else "Envelope[str]"
    assert result["answer"] == "yes" and result["seen"] == [name, "a", "x"]
    assert runs == Counter(gen=1, use=2)  # `use` asked, then was answered


def test_a_crashed_thread_resumes_the_reader_with_the_root_model_and_gen_runs_once(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(_tagged(runs, crash=[False, True]), checkpointer=saver)
    with pytest.raises(RuntimeError, match="use crashed"):
        drive.run(graph, {"q": "a"}, config)
    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    assert drive.run(graph, None, config)["seen"] == ["Tags", "a", "x"]
    assert runs == Counter(gen=1, use=2)


def test_a_new_turn_reads_the_root_model_a_finished_turn_left(
    drive: Drive, saver: Saver, config: RunnableConfig, runs: Counter[str]
) -> None:
    builder = _tagged(runs)

    def again(state: Any) -> dict[str, Any]:  # a second turn reads the tags first
        runs["again"] += 1
        return {"seen": [type(state.get("tags")).__name__]}

    builder.add_node("again", again)
    builder.edges.discard((START, "gen"))
    builder.add_conditional_edges(START, lambda s: "again" if s.get("tags") else "gen")
    builder.add_edge("again", END)
    graph = ne.compile(builder, checkpointer=saver)
    drive.run(graph, {"q": "a"}, config)
    planned = drive.plan(graph, config, input={"q": "b"})
    assert not planned.notes, planned.notes
    assert drive.run(graph, {"q": "b"}, config)["seen"] == ["Tags"]
    assert runs == Counter(gen=1, use=1, again=1)


_PROCESS = """
import json, sys
from collections import Counter
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
import neograph_ext as ne
from tests.integration.test_root_models import _tagged

path, role, form = sys.argv[1:4]
runs = Counter()
with SqliteSaver.from_conn_string(path) as saver:
    graph = ne.compile(_tagged(runs, form, ask=True), checkpointer=saver)
    given = {"q": "a"} if role == "ask" else Command(resume="yes")
    out = ne.run(graph, given, {"configurable": {"thread_id": "t"}})
print(json.dumps({"runs": runs, "asked": "__interrupt__" in out, "seen": out.get("seen")}))
"""
ROOT = Path(__file__).resolve().parents[2]


def _process(path: Path, role: str, form: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _PROCESS, str(path), role, form],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
def test_a_process_of_its_own_answers_with_the_declared_class_and_runs_no_writer(
    tmp_path: Path, form: str
) -> None:
    path = tmp_path / "tags.sqlite"
    asked = _process(path, "ask", form)
    assert asked["asked"] and asked["runs"] == {"gen": 1, "use": 1}
    answered = _process(path, "answer", form)
    name = "Tags" if form == "root" else "Envelope[str]"
    assert not answered["asked"] and answered["seen"] == [name, "a", "x"]
    assert answered["runs"] == {"use": 1}  # `gen`, the costly node, ran in the first alone
