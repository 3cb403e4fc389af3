"""Threads as months of deploys leave them, for the pruning tests, and what they read.

``written`` makes, on one database: ``rewound`` (two rewinds, the second to the start,
then an ``accept``), ``user`` (a plain ``update_state`` at an earlier checkpoint: the
user's own fork), ``delta`` (a DeltaChannel whose only snapshot is its first checkpoint,
rewound), ``waiting`` (rewound while waiting at an interrupt, asked again),
``migrated`` (a migration of the head, then a rewind before its reader) and ``subgraph``
(a subgraph node rewound: its old namespace is abandoned too).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver

import neograph_ext as ne
from tests.graphs.apps import outline, with_subgraph, writer
from tests.graphs.delta import Far, fan
from tests.graphs.pipelines import asking, deployed, linear
from tests.integration.test_migration_chain import S1, S3, add_lang, pipeline


def cfg(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def written(saver: BaseCheckpointSaver[Any]) -> Any:
    """Threads as months of deploys leave them; returns the graph of the last deploy."""
    runs: Counter[str] = Counter()
    # Rewinds: b changed, then a (the rewind to the start abandons b's fork too); an
    # accept of the head last.
    for versions in ({}, {"b": "v2"}, {"a": "v3", "b": "v2"}):
        graph = ne.compile(linear(runs), checkpointer=saver, versions=versions)
        ne.run(graph, {"log": []} if not versions else None, cfg("rewound"))
    ne.accept(ne.compile(linear(runs), checkpointer=saver, versions={"a": "v4"}), cfg("rewound"))
    # A user's own time travel: a plain update at an earlier checkpoint.
    user = ne.compile(linear(runs), checkpointer=saver)
    ne.run(user, {"log": []}, cfg("user"))
    early = [s for s in user.get_state_history(cfg("user"))][2]
    user.update_state(early.config, {"value": 7})
    # A DeltaChannel whose only snapshot is its first checkpoint, rewound.
    for b in ("b1", "b2"):
        graph = ne.compile(fan(Far, runs, b=b), checkpointer=saver, versions={"b": b})
        ne.run(graph, {"log": []} if b == "b1" else None, cfg("delta"))
    # Waiting at an interrupt, asked again after a rewind: it has an abandoned branch.
    for version in ("v1", "v2"):
        graph = ne.compile(asking(runs), checkpointer=saver, versions={"a": version})
        ne.run(graph, {"log": []} if version == "v1" else None, cfg("waiting"))
    # A migration of the head, then a rewind to before the migrated value's reader.
    migrating = ne.ResumePolicy(migrations={S3: add_lang})
    for summary, resume, versions in (
        (S1, ne.ResumePolicy(), {}),
        (S3, migrating, {}),
        (S3, migrating, {"review": "v2"}),
    ):
        deployed(summary)
        graph = ne.compile(
            pipeline(runs, summary), checkpointer=saver, resume=resume, versions=versions
        )
        ne.run(graph, {"doc": "d"}, cfg("migrated"))
    # A subgraph node rewound: the old run's subgraph namespace is abandoned with it.
    for version in ("v1", "v2"):
        sub = writer(runs, outline(str)).compile()
        graph = ne.compile(
            with_subgraph(runs, sub), checkpointer=saver, versions={"writer": version}
        )
        ne.run(graph, {"topic": "t"} if version == "v1" else None, cfg("subgraph"))
    return ne.compile(fan(Far, runs, b="b2"), checkpointer=saver, versions={"b": "b2"})


THREADS = ("rewound", "user", "delta", "waiting", "migrated", "subgraph")


def ids(saver: BaseCheckpointSaver[Any]) -> dict[str, set[str]]:
    """Every root-namespace checkpoint id per thread, descriptions' threads too."""
    found: dict[str, set[str]] = {}
    for tup in saver.list(None):
        if tup.config["configurable"].get("checkpoint_ns"):
            continue
        found.setdefault(tup.config["configurable"]["thread_id"], set()).add(tup.checkpoint["id"])
    return found


def payload(saver: BaseCheckpointSaver[Any]) -> int:
    """The bytes of every payload column, measured apart from ``prune``."""
    if isinstance(saver, PostgresSaver):
        sql = (
            "SELECT (SELECT coalesce(sum(pg_column_size(checkpoint) + pg_column_size(metadata)), 0)"
            " FROM checkpoints) + (SELECT coalesce(sum(pg_column_size(blob)), 0) FROM "
            "checkpoint_writes) + (SELECT coalesce(sum(pg_column_size(blob)), 0) FROM "
            "checkpoint_blobs) AS n"
        )
        row = saver.conn.execute(sql).fetchone()  # type: ignore[attr-defined]
        return int(row["n"])
    sql = (
        "SELECT (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM "
        "checkpoints) + (SELECT coalesce(sum(length(value)), 0) FROM writes)"
    )
    return int(saver.conn.execute(sql).fetchone()[0])  # type: ignore[attr-defined]


def reads(graph: Any, thread: str) -> tuple[Any, ...]:
    """What a thread reads: its state, the history of the head's lineage (LangGraph's
    history lists every branch: the lineage is followed by parent), its plan."""
    state = graph.get_state(cfg(thread))
    snapshots = {
        s.config["configurable"]["checkpoint_id"]: s for s in graph.get_state_history(cfg(thread))
    }
    lineage, at = [], state
    while at is not None:
        lineage.append((at.config["configurable"]["checkpoint_id"], at.values, at.next))
        parent = (at.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        at = snapshots.get(parent)
    return state.values, state.next, lineage, dataclasses.asdict(ne.plan(graph, cfg(thread)))


LAST = fan(Far, Counter(), b="b2")
"""The graph the command line is pointed at (its stamp is the last deploy's)."""


def namespaces(saver: BaseCheckpointSaver[Any]) -> dict[str, set[str]]:
    """Every subgraph namespace per thread."""
    found: dict[str, set[str]] = {}
    for tup in saver.list(None):
        namespace = tup.config["configurable"].get("checkpoint_ns")
        if namespace:
            found.setdefault(tup.config["configurable"]["thread_id"], set()).add(namespace)
    return found
