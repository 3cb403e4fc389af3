"""The served app: a 4-node pipeline, deployed as ``app.pipeline`` by the end-to-end test,
and the same work as an ``@entrypoint`` of three tasks (``functional``).

The test copies this file into a project directory and adds a field to ``Summary``
between server restarts, as a deploy would; ``approval`` drafts a summary and asks for
an approval, reporting its progress on the ``custom`` stream. Nodes run in the server's
process, so each appends its name to the file ``PIPELINE_RUNS`` names; ``publish``
crashes while the file ``PIPELINE_CRASH`` names exists.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypedDict

from langgraph.config import get_stream_writer
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from pydantic import BaseModel

import neograph_ext


class Summary(BaseModel):
    title: str


class State(TypedDict, total=False):
    url: str
    text: str
    facts: list[str]
    summary: Summary
    published: str


def _ran(name: str) -> None:
    with Path(os.environ["PIPELINE_RUNS"]).open("a") as runs:
        runs.write(name + "\n")


def fetch(state: State) -> dict[str, object]:
    _ran("fetch")
    return {"text": f"text of {state['url']}"}


def extract(state: State) -> dict[str, object]:
    _ran("extract")
    return {"facts": [state["text"]]}


def summarize(state: State) -> dict[str, Summary]:
    _ran("summarize")
    # Every field but the title counts the facts, whatever fields the deploy has.
    fields = {name: len(state["facts"]) for name in Summary.model_fields if name != "title"}
    return {"summary": Summary(title="t", **fields)}


def publish(state: State) -> dict[str, object]:
    _ran("publish")
    if Path(os.environ["PIPELINE_CRASH"]).exists():
        raise RuntimeError("publish crashed")
    summary = state["summary"]
    return {"published": " ".join(f"{k}={getattr(summary, k)}" for k in Summary.model_fields)}


builder = StateGraph(State)
for step in (fetch, extract, summarize, publish):
    builder.add_node(step.__name__, step)
builder.add_edge(START, "fetch")
builder.add_edge("fetch", "extract")
builder.add_edge("extract", "summarize")
builder.add_edge("summarize", "publish")
builder.add_edge("publish", END)

graph = neograph_ext.compile(builder, attach=[neograph_ext.AutoResume()])
strict = neograph_ext.compile(
    builder, resume=neograph_ext.ResumePolicy(on_change="raise"), attach=[neograph_ext.AutoResume()]
)


class Approval(TypedDict, total=False):
    summary: Summary
    answer: str


def draft(state: Approval) -> dict[str, Summary]:
    _ran("draft")
    fields = {name: 0 for name in Summary.model_fields if name != "title"}
    return {"summary": Summary(title="t", **fields)}


def review(state: Approval) -> dict[str, object]:
    _ran("review")
    get_stream_writer()({"progress": "review"})
    return {"answer": interrupt("approve?")}


asking = StateGraph(Approval)
asking.add_node("draft", draft)
asking.add_node("review", review)
asking.add_edge(START, "draft")
asking.add_edge("draft", "review")
asking.add_edge("review", END)
approval = neograph_ext.compile(asking, attach=[neograph_ext.AutoResume()])


@task
def fetch_text(url: str) -> str:
    _ran("fetch_text")
    return f"text of {url}"


@task
def summarize_text(text: str) -> Summary:
    _ran("summarize_text")
    fields = {name: len(text.split()) for name in Summary.model_fields if name != "title"}
    return Summary(title="t", **fields)


@task
def publish_summary(summary: Summary) -> str:
    _ran("publish_summary")
    if Path(os.environ["PIPELINE_CRASH"]).exists():
        raise RuntimeError("publish crashed")
    return " ".join(f"{k}={getattr(summary, k)}" for k in Summary.model_fields)


@entrypoint()
def workflow(url: str) -> str:
    return publish_summary(summarize_text(fetch_text(url).result()).result()).result()


functional = neograph_ext.compile(workflow, attach=[neograph_ext.AutoResume()])
