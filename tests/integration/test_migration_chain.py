"""Deploys in a row on one long-lived thread: each plans and runs as it would on a thread
the previous code wrote directly.

Five deploys after the first run: ``keep_compatible``, a ``migrations`` entry, a
rewind, another migration, ``keep_compatible`` again. A value an earlier deploy carried
on is judged by the types it holds now; a rewind to before a carrying fork keeps the
carried value, not the older one stored at its target.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from pydantic import BaseModel, ConfigDict

import neograph_ext as ne
from neograph_ext import PlanKind
from neograph_ext.decision._changes import STORED
from tests.drive import Drive
from tests.graphs.pipelines import as_data, deployed, model

S1 = model("Summary", text=(str, ...))
S2 = model("Summary", text=(str, ...), words=(int, 0))  # compatible: kept
S3 = model("Summary", text=(str, ...), words=(int, 0), lang=(str, ...))  # needs a migration
# Renamed: migrated again. LangGraph revives a stored S3 through the class bound now
# (``model_construct``), which keeps the field it renames only when extras are allowed.
S4 = model(
    "Summary",
    __config__=ConfigDict(extra="allow"),
    text=(str, ...),
    words=(int, 0),
    language=(str, ...),
)
S5 = model("Summary", text=(str, ...), words=(int, 0), language=(str, ...), tone=(str, "plain"))


def add_lang(old: Any) -> Any:
    return S3(**as_data(old), lang="en")


def rename_lang(old: Any) -> Any:
    data = as_data(old)
    data["language"] = data.pop("lang")
    return S4(**data)


def pipeline(runs: Counter[str], summary: type[BaseModel]) -> StateGraph[Any, Any, Any, Any]:
    """``fetch -> summarize -> review``: alphabetical order is not execution order."""
    state = TypedDict(  # type: ignore[name-match]  # noqa: UP013
        "Doc", {"doc": str, "summary": summary, "review": str}, total=False
    )

    def fetch(state: Any) -> dict[str, Any]:
        runs["fetch"] += 1
        return {"doc": "text"}

    def summarize(state: Any) -> dict[str, Any]:
        runs["summarize"] += 1
        words = {"text": "x", "lang": "fr", "language": "fr"}
        return {"summary": summary(**{k: v for k, v in words.items() if k in summary.model_fields})}

    def review(state: Any) -> dict[str, Any]:
        runs["review"] += 1
        return {"review": f"ok:{sorted(as_data(state['summary']))}"}

    builder = StateGraph(state).add_sequence([fetch, summarize, review])
    return builder.add_edge(START, "fetch")


def _deploys() -> list[tuple[str, Any, dict[str, Any], PlanKind]]:
    review_v2 = {"versions": {"review": "v2"}}
    return [
        ("keep", S2, {"keep_compatible": True}, PlanKind.MIGRATE),
        ("migrate", S3, {"migrations": {S3: add_lang}}, PlanKind.MIGRATE),
        ("rewind", S3, review_v2, PlanKind.REWIND),
        ("migrate", S4, {**review_v2, "migrations": {S4: rename_lang}}, PlanKind.MIGRATE),
        ("keep", S5, {**review_v2, "keep_compatible": True}, PlanKind.MIGRATE),
    ]


def test_five_deploys_in_a_row_plan_and_run_as_each_would_alone(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    previous: tuple[Any, dict[str, Any]] = (S1, {})
    deployed(S1)
    drive.run(ne.compile(pipeline(runs, S1), checkpointer=saver), {"doc": "d"}, config)
    assert runs == Counter(["fetch", "summarize", "review"])
    for number, (name, summary, options, kind) in enumerate(_deploys(), 1):
        # The same change on a thread the previous deploy's code wrote directly.
        direct = {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-{number}"}}
        deployed(previous[0])
        before = ne.compile(pipeline(Counter(), previous[0]), checkpointer=saver, **previous[1])
        drive.run(before, {"doc": "d"}, direct)

        deployed(summary)  # the code this deploy runs
        graph = ne.compile(pipeline(runs, summary), checkpointer=saver, **options)
        plan = drive.plan(graph, config)
        alone = drive.plan(graph, direct)

        assert (plan.kind, alone.kind) == (kind, kind), (name, str(plan))
        assert (plan.rerun, plan.kept, plan.migrated) == (alone.rerun, alone.kept, alone.migrated)
        assert [c.describe() for c in plan.changes] == [c.describe() for c in alone.changes]
        assert STORED not in plan.rerun | plan.kept | {c.node for c in plan.changes}
        lines = [line for c in plan.changes for line in c.diff]
        assert len(lines) == len(set(lines)), str(plan)

        runs.clear()
        drive.run(graph, {"doc": "d"}, config)
        assert runs == (Counter(["review"]) if kind is PlanKind.REWIND else Counter()), name
        assert drive.plan(graph, config).kind is PlanKind.UP_TO_DATE, name
        previous = (summary, options)

    values = drive.get_state(graph, config).values
    assert as_data(values["summary"]) == {
        "text": "x",
        "words": 0,
        "language": "en",
        "tone": "plain",
    }
    assert values["review"] == "ok:['lang', 'text', 'words']"  # what the rewound review saw


def test_rerun_and_kept_print_in_execution_order(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    deployed(S1)
    drive.run(ne.compile(pipeline(Counter(), S1), checkpointer=saver), {"doc": "d"}, config)
    deployed(S2)
    kept = drive.plan(
        ne.compile(
            pipeline(Counter(), S2),
            checkpointer=saver,
            resume=ne.ResumePolicy(keep_compatible=True),
        ),
        config,
    )
    assert "kept: fetch, summarize, review" in str(kept)
    versions = {"fetch": "v2"}
    rewind = drive.plan(
        ne.compile(pipeline(Counter(), S1), checkpointer=saver, versions=versions), config
    )
    assert "re-runs: fetch, summarize, review" in str(rewind)
