"""Where a ``DeltaChannel`` meets the other features: values carried across a type
change and later rewinds, replays, rollbacks and ``accept``; a step finished by a resume
after a crash (an adopted thread); the read-back check of a resumed head.

Each case counts node executions and compares the thread, read back through a new saver
instance, with a fresh run of the new code; the plain reducer channel runs beside the
DeltaChannels wherever the case is about accumulating, not about delta storage.
"""

from __future__ import annotations

import operator
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from pydantic import BaseModel

import neograph_ext as ne
from tests.drive import Drive, Saver
from tests.graphs.delta import STATES, extend, fan
from tests.graphs.entries import EntryV1, EntryV2, add_lang, entries
from tests.graphs.notes import ItemV2, note, notes
from tests.graphs.pipelines import model
from tests.integration.savers import reopened

DELTA = {
    "delta-far": DeltaChannel(extend, snapshot_frequency=1000),
    "delta-near": DeltaChannel(extend, snapshot_frequency=1),
}
ACCUMULATING = {"plain": operator.add, **DELTA}
ItemV3 = model("Item", n=(float, ...), tag=(str, "x"))
"""The item of a deploy after ``ItemV2``: a field added."""
FRESH = [{"label": name, "lang": "en"} for name in "abcd"]
"""The log a fresh run of the new code writes."""


def _log(graph: Any, config: RunnableConfig, saver: BaseCheckpointSaver[Any], tmp: Path) -> Any:
    with reopened(saver, tmp) as fresh:
        values = graph.copy(update={"checkpointer": fresh}).get_state(config).values
    return [dict(entry) for entry in values["log"]]


@pytest.mark.parametrize("reducer", list(ACCUMULATING))
def test_a_rewind_to_before_a_migration_converts_the_earlier_items_again(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    reducer: str,
    runs: Counter[str],
) -> None:
    """Migrated, then ``d`` changed: the rewind to before ``d`` must not bring back the
    unconverted entries of ``a``, ``b`` and ``c`` (read back as ``EntryV2`` without
    ``lang``), nor keep the migrated log, whose ``d`` entry would be written twice."""
    kind = ACCUMULATING[reducer]
    drive.run(ne.compile(entries(EntryV1, kind, Counter()), checkpointer=saver), {}, config)
    policy = ne.ResumePolicy(migrations={"log": add_lang})
    graph = ne.compile(entries(EntryV2, kind, runs), checkpointer=saver, resume=policy)
    assert drive.plan(graph, config).kind is ne.PlanKind.MIGRATE
    drive.run(graph, None, config)
    changed = ne.compile(
        entries(EntryV2, kind, runs), checkpointer=saver, resume=policy, versions={"d": "2"}
    )
    plan = drive.plan(changed, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.migrated == {"log"}
    drive.run(changed, None, config)
    assert runs == Counter("d")
    assert _log(changed, config, saver, tmp_path) == FRESH
    assert drive.plan(changed, config).kind is ne.PlanKind.UP_TO_DATE


@pytest.mark.parametrize("reducer", list(DELTA))
def test_without_the_migration_that_rewind_is_refused_naming_the_channel(
    drive: Drive, saver: Saver, config: RunnableConfig, reducer: str, runs: Counter[str]
) -> None:
    kind = DELTA[reducer]
    drive.run(ne.compile(entries(EntryV1, kind, Counter()), checkpointer=saver), {}, config)
    policy = ne.ResumePolicy(migrations={"log": add_lang})
    drive.run(
        ne.compile(entries(EntryV2, kind, runs), checkpointer=saver, resume=policy), None, config
    )
    changed = ne.compile(entries(EntryV2, kind, runs), checkpointer=saver, versions={"d": "2"})
    with pytest.raises(ne.CheckpointSchemaError, match="`log`"):
        drive.run(changed, None, config)
    assert runs == Counter()


@pytest.mark.parametrize("reducer", list(ACCUMULATING))
def test_a_rewind_to_before_an_accept_brings_back_what_was_accepted(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    reducer: str,
    runs: Counter[str],
) -> None:
    """``accept`` converts nothing, though its fork snapshots a DeltaChannel: the
    entries stay as they were accepted, and only ``d`` runs again."""
    kind = ACCUMULATING[reducer]
    drive.run(ne.compile(entries(EntryV1, kind, runs), checkpointer=saver), {}, config)
    drive.accept(ne.compile(entries(EntryV2, kind, runs), checkpointer=saver), config)
    runs.clear()
    changed = ne.compile(entries(EntryV2, kind, runs), checkpointer=saver, versions={"d": "2"})
    assert drive.plan(changed, config).blocker is None
    drive.run(changed, None, config)
    assert runs == Counter("d")
    accepted = [{"label": name} for name in "abc"]
    assert _log(changed, config, saver, tmp_path) == [*accepted, FRESH[-1]]


@pytest.mark.parametrize("reducer", list(ACCUMULATING))
def test_a_rollback_after_a_migration_takes_the_unconverted_items_back(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    reducer: str,
    runs: Counter[str],
) -> None:
    """The old code takes the migrated thread over: the entries before the last writer
    are of its own type again, nothing to convert; then the new code takes it back."""
    kind = ACCUMULATING[reducer]
    old = ne.compile(entries(EntryV1, kind, runs), checkpointer=saver)
    policy = ne.ResumePolicy(migrations={"log": add_lang})
    new = ne.compile(entries(EntryV2, kind, runs), checkpointer=saver, resume=policy)
    drive.run(old, {}, config)
    drive.run(new, None, config)
    runs.clear()
    taking = ne.ResumePolicy(take_over=True)
    assert drive.plan(old, config, resume=taking).blocker is None
    drive.run(old, None, config, resume=taking)
    assert runs == Counter("d")
    assert _log(old, config, saver, tmp_path) == [{"label": name} for name in "abcd"]
    drive.run(new, None, config, resume=taking)
    assert _log(new, config, saver, tmp_path) == FRESH


@pytest.mark.parametrize("reducer", list(DELTA))
def test_a_replay_into_the_first_turn_after_a_migration_forks_and_ends_as_a_fresh_run(
    drive: Drive, saver: Saver, config: RunnableConfig, reducer: str, runs: Counter[str]
) -> None:
    """Migrated in the second turn, changed again after a third: the rewind to before
    the first item needs nothing converted (no item is there yet); the three turns are
    replayed, and every checkpoint of the old branch stays."""
    kind = DELTA[reducer]
    old = ne.compile(notes(Counter(), reducer=kind), checkpointer=saver)
    for text in ("one", "two"):
        drive.run(old, note(text), config)
    policy = ne.ResumePolicy(
        migrations={"items": lambda items: [ItemV2(n=dict(i)["n"]) for i in items]}
    )
    drive.run(
        ne.compile(notes(Counter(), ItemV2, reducer=kind), checkpointer=saver, resume=policy),
        note("three"),
        config,
    )
    before = {
        s.config["configurable"]["checkpoint_id"] for s in drive.get_state_history(old, config)
    }
    replaying = ne.ResumePolicy(replay_turns=True)
    graph = ne.compile(notes(runs, ItemV3, reducer=kind), checkpointer=saver, resume=replaying)
    assert len(drive.plan(graph, config).replayed) == 2
    drive.run(graph, None, config)
    assert runs == Counter({"take": 3})
    items = drive.get_state(graph, config).values["items"]
    assert [(type(i), i.n, i.tag) for i in items] == [(ItemV3, float(n), "x") for n in range(3)]
    after = {
        s.config["configurable"]["checkpoint_id"] for s in drive.get_state_history(graph, config)
    }
    assert before < after


@pytest.mark.parametrize("reducer", list(DELTA))
def test_an_earlier_turns_items_kept_compatible_read_back_as_the_new_type(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    reducer: str,
    runs: Counter[str],
) -> None:
    """``Item.n`` went from int to float: both turns' items are kept, validated (their
    ``n`` a float, as a fresh run writes), and a third turn appends after them."""
    kind = DELTA[reducer]
    old = ne.compile(notes(Counter(), reducer=kind), checkpointer=saver)
    for text in ("one", "two"):
        drive.run(old, note(text), config)
    policy = ne.ResumePolicy(keep_compatible=True)
    graph = ne.compile(notes(runs, ItemV2, reducer=kind), checkpointer=saver, resume=policy)
    assert drive.plan(graph, config).kind is ne.PlanKind.MIGRATE
    drive.run(graph, note("three"), config)
    assert runs == Counter({"take": 1})
    with reopened(saver, tmp_path) as fresh:
        items = graph.copy(update={"checkpointer": fresh}).get_state(config).values["items"]
    assert [(type(i), i.n, type(i.n)) for i in items] == [(ItemV2, n, float) for n in (0, 1, 2)]


@pytest.mark.parametrize("state", list(STATES))
@pytest.mark.parametrize("written_by", ["langgraph", "neograph-ext"])
def test_a_step_finished_by_a_resume_after_a_crash_keeps_its_sibling_on_a_rewind(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    state: str,
    written_by: str,
    runs: Counter[str],
) -> None:
    """``c`` crashed and finished when the thread was resumed (adopted, for a thread
    plain LangGraph wrote): its step holds the failed try's error beside its output.
    A change of ``b`` then keeps ``c``, as planned."""
    crashing = fan(STATES[state], runs, crash="c")
    with pytest.raises(RuntimeError, match="c crashed"):
        if written_by == "langgraph":
            drive.invoke(crashing.compile(checkpointer=saver), {"log": []}, config)
        else:
            drive.run(ne.compile(crashing, checkpointer=saver), {"log": []}, config)
    drive.ran_before(fan(STATES[state], runs), saver, None, config, runs)
    graph = ne.compile(fan(STATES[state], runs, b="b2"), checkpointer=saver, versions={"b": "2"})
    assert drive.plan(graph, config).kept_tasks == {"c"}
    drive.run(graph, None, config)
    assert runs == Counter("bd")
    with reopened(saver, tmp_path) as fresh:
        values = graph.copy(update={"checkpointer": fresh}).get_state(config).values
    assert values == {"log": ["a1", "b2", "c1", "d1"]}


class Kept(BaseModel):
    """An importable model: it reads back as itself."""

    text: str


class Crash(RuntimeError):
    """``publish`` failing, as a process dying mid-run."""


def drafting(saver: BaseCheckpointSaver[Any], runs: Counter[str], kind: Any, **how: bool) -> Any:
    """``write -> publish``: ``write`` appends a draft to a list in ``kind``, of a class
    defined here (which no process can import: it reads back as a dict) unless ``kept``;
    ``publish`` reports the class it was handed, or ``crash``es."""

    class Draft(BaseModel):
        text: str

    model = Kept if how.get("kept") else Draft
    state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "Drafts", {"drafts": Annotated[list[model], kind], "out": str}, total=False
    )

    def write(values: Any) -> dict[str, Any]:
        runs["write"] += 1
        return {"drafts": [model(text="hello")]}

    def publish(values: Any) -> dict[str, Any]:
        runs["publish"] += 1
        if how.get("crash"):
            raise Crash("publish")
        return {"out": type(values["drafts"][0]).__name__}

    builder = StateGraph(state)
    builder.add_sequence([write, publish]).add_edge(START, "write")
    return ne.compile(builder, checkpointer=saver)


@pytest.mark.parametrize("reducer", list(DELTA))
@pytest.mark.parametrize("kept", [False, True], ids=["a dict", "itself"])
def test_a_stored_delta_value_is_judged_as_langgraph_rebuilds_it(
    drive: Drive, saver: Saver, config: RunnableConfig, reducer: str, kept: bool, runs: Counter[str]
) -> None:
    """A resume hands ``publish`` the rebuilt list, not what ``channel_values`` hold (no
    value, or a snapshot): one that reads back as a dict rewinds to ``write``; one that
    reads back as itself is no false alarm."""
    with pytest.raises(Crash):
        drive.run(drafting(saver, Counter(), DELTA[reducer], crash=True, kept=kept), {}, config)
    graph = drafting(saver, runs, DELTA[reducer], kept=kept)
    planned = drive.plan(graph, config)
    assert planned.kind is (ne.PlanKind.CONTINUE if kept else ne.PlanKind.REWIND)
    result = drive.run(graph, None, config)
    assert result["out"] == ("Kept" if kept else "Draft")
    assert runs == (Counter(["publish"]) if kept else Counter(["write", "publish"]))
