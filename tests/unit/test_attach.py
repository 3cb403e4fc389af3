"""``compile(attach=[...])`` and 0.3's keywords it replaces (``_attach``), on a graph that
is compiled and never run."""

from __future__ import annotations

import warnings
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

import neograph_ext as ne
from neograph_ext._auto_resume import AutoResumingGraph
from neograph_ext.budget import Budget


class State(TypedDict, total=False):
    text: str


def _builder() -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("write", lambda state: {"text": "x"})
    builder.add_edge(START, "write")
    builder.add_edge("write", END)
    return builder


def _held(graph: Any) -> tuple[object, ...]:
    """What a compiled graph holds of what it was attached."""
    return (
        isinstance(graph, AutoResumingGraph),
        graph.neograph_ext_verify_saver,
        graph.neograph_ext_budget,
        graph.neograph_ext_telemetry,
        any(w.name == "verify_writes" for n in graph.nodes.values() for w in n.writers),
    )


BUDGET = Budget(max_model_calls=3)
TOLD = ne.Telemetry()
MOVED = {
    "auto_resume": (True, ne.AutoResume(), "attach=[AutoResume()]"),
    "verify_writes": (True, ne.WriteChecks(readback=True), "attach=[WriteChecks(readback=True)]"),
    "verify_saver": (False, ne.WriteChecks(saver=False), "attach=[WriteChecks(saver=False)]"),
    "budget": (BUDGET, BUDGET, "attach=[Budget(...)]"),
    "telemetry": (TOLD, TOLD, "attach=[Telemetry(...)]"),
}


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_0_3_keyword_warns_naming_its_record_and_still_works(name: str) -> None:
    old, record, replacement = MOVED[name]
    with pytest.warns(DeprecationWarning, match=rf"{name}=.*\) is deprecated: pass ") as seen:
        graph = ne.compile(_builder(), **{name: old})
    assert replacement in str(seen[0].message)
    assert seen[0].filename == __file__  # the caller's line, not the package's
    assert _held(graph) == _held(ne.compile(_builder(), attach=[record]))
    assert _held(graph) != _held(ne.compile(_builder()))


def test_both_write_checks_make_one_record() -> None:
    with pytest.warns(DeprecationWarning, match=r"WriteChecks\(readback=True, saver=False\)"):
        graph = ne.compile(_builder(), verify_writes=True, verify_saver=False)
    checks = ne.WriteChecks(readback=True, saver=False)
    assert _held(graph) == _held(ne.compile(_builder(), attach=[checks]))


def test_the_documented_defaults_say_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph = ne.compile(
            _builder(),
            auto_resume=None,  # 0.2's default; False is 0.2's strict spelling
            verify_writes=False,
            verify_saver=True,
            budget=None,
            telemetry=None,
        )
        every = [ne.AutoResume(), ne.WriteChecks(readback=True), BUDGET, TOLD]
        ne.compile(_builder(), attach=every)
    assert _held(graph) == _held(ne.compile(_builder()))


def test_a_0_3_keyword_beside_its_record_is_an_error_naming_both() -> None:
    with pytest.raises(ne.GraphError, match=r"budget=\.\.\.\) and .*attach=\[Budget"):
        ne.compile(_builder(), budget=BUDGET, attach=[Budget()])
    with pytest.raises(ne.GraphError, match=r"verify_saver=.*WriteChecks"):
        ne.compile(_builder(), verify_saver=False, attach=[ne.WriteChecks()])


@pytest.mark.parametrize(
    ("attach", "message"),
    [
        ([ne.ResumePolicy()], r"takes neograph_ext.AutoResume\(\), .* not ResumePolicy"),
        ([BUDGET, Budget()], "two Budget records"),
        (BUDGET, r"a list of records, as \[Budget"),
        ("AutoResume", "a list of records"),
    ],
    ids=["other record", "twice", "bare record", "string"],
)
def test_attach_takes_a_list_of_records_one_of_a_kind(attach: Any, message: str) -> None:
    with pytest.raises(ne.GraphError, match=message):
        ne.compile(_builder(), attach=attach)


def test_a_budget_keyword_that_is_no_budget_is_refused() -> None:
    with pytest.raises(ne.GraphError, match=r"budget=\.\.\.\) takes .*not \{'max_model_calls'"):
        ne.compile(_builder(), budget={"max_model_calls": 3})
