"""``ResumePlan.draw_mermaid``: LangGraph's own drawing of the graph, each node marked.

Plans are made by hand here: drawing reads no checkpoint. The PNG goes through
LangGraph's ``draw_mermaid_png`` to a renderer at ``base_url``: a local HTTP server
stands in for a self-hosted mermaid.ink, so the test runs offline.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from neograph_ext import PlanKind, ResumePlan
from neograph_ext.decision._drawing import Mark, marks


class State(TypedDict, total=False):
    log: list[str]


def linear(*names: str) -> Any:
    builder = StateGraph(State)
    for name in names:
        builder.add_node(name, lambda state: {})
    builder.add_edge(START, names[0])
    for before, after in pairwise(names):
        builder.add_edge(before, after)
    builder.add_edge(names[-1], END)
    return builder.compile()


REWIND = ResumePlan(
    PlanKind.REWIND,
    "t1",
    step=2,
    checkpoint_id="c2",
    invalidated_nodes=frozenset({"c"}),
    rerun=frozenset({"c", "d"}),
    kept=frozenset({"a", "b"}),
)


def defined(mermaid: str) -> list[str]:
    """The ids of the nodes LangGraph's writer defined, in its order."""
    return re.findall(r"^\t(\S+?)\(", mermaid, flags=re.MULTILINE)


def classes(mermaid: str) -> dict[str, list[str]]:
    found = re.findall(r"^\tclass (\S+) (\w+);$", mermaid, flags=re.MULTILINE)
    return {name: ids.split(",") for ids, name in found}


def test_a_rewind_marks_kept_changed_and_re_run_nodes_on_langgraph_s_drawing() -> None:
    graph = linear("a", "b", "c", "d", "e")

    drawn = REWIND.draw_mermaid(graph)

    plain = graph.get_graph().draw_mermaid()
    assert (
        drawn.startswith("---\nconfig:") and "title: 'thread t1: rewind, fork from step 2'" in drawn
    )
    assert plain.split("graph TD;")[1].split("\tclassDef")[0].count("-->") == drawn.split(
        "graph TD;"
    )[1].split("\tclassDef")[0].count("-->")  # every edge LangGraph drew
    assert classes(drawn) == {"kept": ["a", "b"], "rerun": ["d"], "changed": ["c"]}
    assert "\tc(c<hr/><small><em>resume = changed, re-runs, 1 of 2</em></small>)" in drawn
    assert "\ta(a<hr/><small><em>resume = kept</em></small>)" in drawn
    assert "\te(e)" in drawn  # a node the plan does not name is drawn as LangGraph draws it
    for mark in ("kept", "rerun", "changed"):
        assert re.search(rf"^\tclassDef {mark} fill:", drawn, flags=re.MULTILINE)
    assert "classDef default fill:#f2f0ff" in drawn  # LangGraph's own styles stay


def test_a_continuing_plan_marks_the_nodes_the_head_waits_on() -> None:
    plan = ResumePlan(PlanKind.CONTINUE, "t1", kept=frozenset({"a"}), next_nodes=frozenset({"b"}))
    drawn = plan.draw_mermaid(linear("a", "b", "c"))
    assert classes(drawn) == {"kept": ["a"], "next": ["b"]}
    assert "title: 'thread t1: continue'" in drawn


def test_a_blocked_plan_says_so_in_its_title() -> None:
    plan = ResumePlan(PlanKind.REWIND, "t1", step=1, blocker="an earlier turn changed")
    assert "(blocked)" in plan.draw_mermaid(linear("a", "b"))


def test_class_lines_name_the_ids_langgraph_s_writer_gave_a_node_that_needs_escaping() -> None:
    """Fails if langchain-core changes how it names nodes in Mermaid text."""
    plan = ResumePlan(PlanKind.REWIND, "t1", step=1, rerun=frozenset({"my node!"}),
                      kept=frozenset({"a"}))  # fmt: skip
    drawn = plan.draw_mermaid(linear("a", "my node!"))
    (escaped,) = classes(drawn)["rerun"]
    assert escaped != "my node!" and escaped in defined(drawn)


def test_the_strongest_mark_wins() -> None:
    assert marks(kept="ab", rerun="bc", changed="c", waiting="ad") == {
        "a": Mark.NEXT,
        "b": Mark.RERUN,
        "c": Mark.CHANGED,
        "d": Mark.NEXT,
    }


@pytest.fixture
def renderer() -> Iterator[tuple[str, list[str]]]:
    """A stand-in for a self-hosted mermaid.ink: records each diagram, answers a PNG."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(base64.b64decode(self.path.split("/img/")[1].split("?")[0]).decode())
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()
            self.wfile.write(PNG)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", asked
    finally:
        server.shutdown()
        server.server_close()


PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16


def test_the_png_is_langgraph_s_rendering_of_the_same_text(
    renderer: tuple[str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    base_url, asked = renderer
    graph = linear("a", "b", "c", "d")
    out = tmp_path / "plan.png"

    png = REWIND.draw_mermaid_png(graph, base_url=base_url, output_file_path=str(out))

    assert png == PNG == out.read_bytes()
    assert asked == [REWIND.draw_mermaid(graph)]
