"""The compat harness's own checks: routing and the metadata-only judgement.

Run by ``make compat`` and ``make compat-ci`` before LangGraph's suite, so a harness
that stopped routing, or started excusing real differences, fails loudly.
"""

from __future__ import annotations

import importlib
import operator
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, NamedTuple, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from record_outcomes import METADATA_ONLY_MARK, pytest_assertrepr_compare, strip_stamp

from neograph_ext import ResumePolicy

STAMP = {"neograph_ext": '{"v":1}'}


class _State(TypedDict):
    items: Annotated[list[str], operator.add]


class _Snapshot(NamedTuple):
    values: dict[str, Any]
    metadata: dict[str, Any]


def _marked(left: object, right: object) -> bool:
    explanation = pytest_assertrepr_compare(None, "==", left, right)  # type: ignore[arg-type]
    return explanation is not None and METADATA_ONLY_MARK in explanation[0]


def test_stamp_keys_are_removed_at_any_depth() -> None:
    left = [("values", {"metadata": {"step": 1, **STAMP, "neograph_ext_run": "x"}})]
    assert strip_stamp(left) == [("values", {"metadata": {"step": 1}})]
    assert _marked(left, [("values", {"metadata": {"step": 1}})])


def test_a_mapping_holding_only_the_stamp_counts_as_absent() -> None:
    # LangGraph leaves a task event's empty metadata out; the stamp alone creates it.
    event = {"name": "one", "metadata": dict(STAMP)}
    assert _marked(event, {"name": "one"})


def test_named_tuples_are_rebuilt() -> None:
    snapshot = _Snapshot({"a": 1}, {"step": 0, **STAMP})
    assert strip_stamp(snapshot) == _Snapshot({"a": 1}, {"step": 0})
    assert type(strip_stamp(snapshot)) is _Snapshot


def test_a_real_difference_beside_the_stamp_is_not_excused() -> None:
    left = {"metadata": {"step": 2, **STAMP}}
    assert not _marked(left, {"metadata": {"step": 1}})
    assert not _marked({"items": ["a"]}, {"items": ["b"]})
    assert pytest_assertrepr_compare(None, "!=", left, left) is None  # type: ignore[arg-type]


@pytest.fixture
def route_compile() -> Iterator[ModuleType]:
    import route_compile as module

    yield module
    StateGraph.compile = module.original_compile  # type: ignore[method-assign]


def test_routed_compile_stamps_checkpoints_and_reaches_the_original(
    route_compile: ModuleType,
) -> None:
    runs = []

    def node(state: _State) -> dict[str, list[str]]:
        runs.append(state)
        return {"items": ["x"]}

    builder = StateGraph(_State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    route_compile._Routed.calls = 0
    graph = builder.compile(InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}

    assert graph.invoke({"items": []}, config) == {"items": ["x"]}
    assert len(runs) == 1
    assert route_compile._Routed.calls == 1  # once: the inner compile went to the original
    assert "neograph_ext" in (graph.get_state(config).metadata or {})


def test_langgraphs_suite_sees_no_langchain_version_in_model_metadata() -> None:
    import without_langchain  # noqa: F401  # patches at import, as `-p` loads it
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    versions = FakeListChatModel(responses=["x"]).metadata["lc_versions"]  # type: ignore[index]
    assert set(versions) == {"langchain-core"}


def test_the_auto_resume_pass_compiles_with_auto_resume(
    route_compile: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = route_compile.original_compile
    builder = StateGraph(_State)
    builder.add_node("node", lambda state: {"items": ["x"]})
    builder.add_edge(START, "node")
    # Called directly: an earlier test may have put LangGraph's own compile back.
    plain = route_compile._routed_compile(builder, InMemorySaver())
    assert getattr(type(plain), "neograph_ext_auto_resume", None) is None

    monkeypatch.setenv(route_compile.AUTO_RESUME_ENV, "true")
    StateGraph.compile = real  # type: ignore[method-assign]
    try:
        module = importlib.reload(route_compile)
        auto = module._routed_compile(builder, InMemorySaver())
        assert type(auto).neograph_ext_auto_resume == ResumePolicy()
    finally:
        monkeypatch.delenv(route_compile.AUTO_RESUME_ENV)
        StateGraph.compile = real  # type: ignore[method-assign]
        importlib.reload(route_compile)  # plain routing again, patched over the original


def test_the_run_script_names_the_same_switch_and_an_explained_list() -> None:
    import route_compile
    import run

    assert run.AUTO_RESUME_ENV == route_compile.AUTO_RESUME_ENV
    for nodeid, reason in run._read_list(run.EXCEPTIONS_FILE).items():
        assert nodeid.startswith("tests/") and reason, f"{nodeid}: an entry needs its reason"


@pytest.fixture
def results_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's logs and records under ``tmp_path``, not the checkout's ``.compat``."""
    import run

    monkeypatch.setattr(run, "ROOT", tmp_path)
    monkeypatch.setattr(run, "CACHE", tmp_path / "cache")


def _tree(tmp_path: Path, tests: str) -> Path:
    """A tiny suite laid out as LangGraph's sdist is: a pyproject and a tests folder."""
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (tree / "tests" / "test_some.py").write_text(tests)
    return tree


@pytest.mark.usefixtures("results_in_tmp")
def test_a_test_that_hangs_fails_alone_and_the_pass_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import run

    monkeypatch.setattr(run, "TEST_TIMEOUT", 2)
    tree = _tree(
        tmp_path,
        "import time\n\ndef test_hangs():\n    time.sleep(600)\n\ndef test_after():\n    pass\n",
    )
    done = run._run_pass("baseline", tree, ["tests"], 1, "t")
    outcomes = {nodeid.split("::")[1]: entry["outcome"] for nodeid, entry in done.results.items()}
    assert outcomes == {"test_hangs": "failed", "test_after": "passed"}
    assert done.seconds < 60


@pytest.mark.usefixtures("results_in_tmp")
def test_a_pass_that_stalls_outside_any_test_is_stopped_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import run

    monkeypatch.setattr(run, "PASS_TIMEOUT", 3)
    # Collection is outside every test's timeout, as a stalled pytest-xdist would be.
    tree = _tree(tmp_path, "import time\n\ntime.sleep(600)\n\ndef test_never():\n    pass\n")
    with pytest.raises(run.Stalled, match="the wrapped pass stalled: stopped after 3 s"):
        run._run_pass("wrapped", tree, ["tests"], 1, "t")


def test_a_baseline_that_stalls_once_is_run_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    import run

    ran: list[str] = []

    def stalls_once(name: str, *args: Any) -> Any:
        ran.append(name)
        if len(ran) == 1:
            raise run.Stalled(f"the {name} pass stalled")
        return run.Pass(name, {}, 1.0)

    monkeypatch.setattr(run, "_run_pass", stalls_once)
    assert run._baseline(Path("tree"), ["tests"], 1, "t") == run.Pass("baseline", {}, 1.0)
    assert ran == ["baseline", "baseline"]

    def stalls(name: str, *args: Any) -> Any:
        raise run.Stalled(f"the {name} pass stalled")

    monkeypatch.setattr(run, "_run_pass", stalls)
    with pytest.raises(run.Stalled):  # a second stall ends the run
        run._baseline(Path("tree"), ["tests"], 1, "t")


@pytest.mark.usefixtures("results_in_tmp")
def test_a_shuffled_pass_runs_the_same_tests_in_another_order(tmp_path: Path) -> None:
    import run

    ran = tmp_path / "ran"
    body = "".join(
        f"def test_{n}():\n    open({str(ran)!r}, 'a').write('{n} ')\n\n" for n in range(12)
    )
    tree = _tree(tmp_path, body)
    orders = []
    for order in (0, run.SHUFFLED):
        ran.write_text("")
        done = run._run_pass("baseline", tree, ["tests"], 1, f"t{order}", order=order)
        assert len(done.results) == 12
        orders.append(ran.read_text().split())
    assert orders[0] == [str(n) for n in range(12)]
    assert sorted(orders[1], key=int) == orders[0] and orders[1] != orders[0]
