"""Two releases of one counted review graph, for rolling deploys: ``draft -> summarize ->
approve -> publish``, where ``summarize`` stands for an LLM call and ``approve`` asks a
human (LangGraph's ``interrupt``). The releases differ in ``summarize``'s output type."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel

import neograph_ext
from neograph_ext import ResumePolicy
from tests.graphs.pipelines import Crash, deployed, model, wire

SummaryV1 = model("ReviewSummary", text=(str, ...))
SummaryV2 = model("ReviewSummary", text=(str, ...), words=(int, 0))
SummaryV3 = model("ReviewSummary", text=(str, ...), words=(int, 0), lang=(str, "en"))
"""``summarize``'s output in the old, the new and a later release."""


def review(
    runs: Counter[str], summary: type[BaseModel], failing: set[str], *, ask: bool = True
) -> StateGraph[Any, Any, Any, Any]:
    """``draft -> summarize -> approve -> publish``; ``approve`` asks unless ``ask`` is
    False; a node named in ``failing`` raises ``Crash`` while it is named there."""
    state = TypedDict(  # type: ignore[name-match]  # noqa: UP013
        "Review", {"doc": str, "draft": str, "summary": summary, "verdict": str}, total=False
    )

    def counted(name: str) -> None:
        runs[name] += 1
        if name in failing:
            raise Crash(name)

    def draft(state: Any) -> dict[str, Any]:
        counted("draft")
        return {"draft": f"draft of {state['doc']}"}

    def summarize(state: Any) -> dict[str, Any]:
        counted("summarize")
        return {"summary": summary(text=state["draft"])}

    def approve(state: Any) -> dict[str, Any]:
        counted("approve")
        return {"verdict": str(interrupt("publish?")) if ask else "auto"}

    def publish(state: Any) -> dict[str, Any]:
        counted("publish")
        return {"verdict": f"published: {state['verdict']}"}

    builder = StateGraph(state)
    for name, fn in (
        ("draft", draft),
        ("summarize", summarize),
        ("approve", approve),
        ("publish", publish),
    ):
        builder.add_node(name, fn)
    wire(builder, "draft", "summarize", "approve", "publish")
    return builder


@dataclass
class Release:
    """One release of the review graph, compiled on a saver, counting what it runs."""

    summary: type[BaseModel]
    saver: BaseCheckpointSaver[Any]
    ask: bool = True
    resume: ResumePolicy | None = None
    auto_resume: bool = False
    runs: Counter[str] = field(default_factory=Counter)
    failing: set[str] = field(default_factory=set)
    """Nodes that crash while named here, standing in for a worker dying mid-run."""

    def __post_init__(self) -> None:
        options: dict[str, Any] = {"resume": self.resume} if self.resume else {}
        if self.auto_resume:
            options["attach"] = [neograph_ext.AutoResume()]
        self.graph = neograph_ext.compile(
            review(self.runs, self.summary, self.failing, ask=self.ask),
            checkpointer=self.saver,
            **options,
        )

    def serving(self) -> Any:
        """The graph, with this release's classes bound where stored values revive from,
        as in its workers' processes (one version of a class per process)."""
        deployed(self.summary)
        return self.graph
