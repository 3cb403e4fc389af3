"""Databases written by 0.1.0 and 0.2 export, and their fixtures plan offline as the
databases plan live; ``export`` selects threads and writes nothing to the database."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.pregel import Pregel

import neograph_ext as ne
from tests.cli.support import cli
from tests.fixtures import v0_1_0, v0_2
from tests.graphs.pipelines import asking


@pytest.fixture
def copied(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """Copies of the checked-in databases: tests never touch the originals."""
    paths = {}
    for name, module in (("v0_1_0", v0_1_0), ("v0_2", v0_2)):
        paths[name] = tmp_path / f"{name}.sqlite"
        shutil.copyfile(module.DATABASE, paths[name])
    yield paths


def _builders(module: ModuleType, thread: str) -> tuple[Any, Any]:
    """The builder that wrote ``thread``, and one after a deploy that changed it."""
    if thread == getattr(module, "WAITING", None):
        changed = ne.compile(asking(Counter()), checkpointer=InMemorySaver(), versions={"a": "2"})
        return asking(Counter()), changed
    return module.BUILDER_V1, module.BUILDER_V2


@pytest.mark.parametrize("name", ["v0_1_0", "v0_2"])
def test_an_old_database_exports_and_plans_offline_as_live(
    copied: dict[str, Path], tmp_path: Path, name: str
) -> None:
    module = v0_1_0 if name == "v0_1_0" else v0_2
    conn = sqlite3.connect(copied[name], check_same_thread=False)
    saver = SqliteSaver(conn)
    try:
        written = ne.export_threads(module.graph(saver, Counter()), tmp_path / "fx")
        fixtures = {f.thread_id: f for f in ne.testing.read_fixtures(tmp_path / "fx")}
        expected = {module.DONE, module.CRASHED, module.TWO_TURNS}
        assert set(fixtures) == expected | ({v0_2.WAITING} if module is v0_2 else set())
        assert len(written) == len(fixtures)
        for thread, fixture in fixtures.items():
            for builder in _builders(module, thread):
                live = ne.plan(_live(builder, saver), module.config(thread))
                assert ne.testing.plan_fixture(builder, fixture) == live, thread
        rewound = ne.testing.plan_fixture(module.BUILDER_V2, fixtures[module.DONE])
        assert rewound.kind is ne.PlanKind.REWIND and rewound.kept == {"a", "b"}
        assert "Analysis.score: int -> float" in str(rewound)
    finally:
        conn.close()


def _live(graph: Any, saver: SqliteSaver) -> Any:
    """``graph`` (a builder or a compiled graph) reading ``saver``."""
    if isinstance(graph, Pregel):
        return graph.copy(update={"checkpointer": saver})
    return ne.compile(graph, checkpointer=saver)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_export_selects_threads_and_leaves_the_database_as_it_was(
    copied: dict[str, Path], tmp_path: Path
) -> None:
    db, graph = copied["v0_2"], "tests.fixtures.v0_2:BUILDER_V1"
    before = _digest(db)

    def exported(*options: object) -> set[str]:
        out = tmp_path / str(len(list(tmp_path.iterdir())))
        result = cli("export", graph, "--db", db, "--out", out, *options)
        assert result.exit_code == 0, result.output
        return {f.thread_id for f in ne.testing.read_fixtures(out)}

    assert exported() == {v0_2.DONE, v0_2.CRASHED, v0_2.TWO_TURNS, v0_2.WAITING}
    assert exported("--unfinished") == {v0_2.CRASHED, v0_2.WAITING}
    assert exported("--threads", v0_2.DONE, "--threads", v0_2.WAITING) == {
        v0_2.DONE,
        v0_2.WAITING,
    }
    sampled = exported("--sample", "2")
    assert len(sampled) == 2 and exported("--sample", "2") == sampled
    assert exported("--unfinished", "--sample", "1") <= {v0_2.CRASHED, v0_2.WAITING}
    missing = cli("export", graph, "--db", db, "--out", tmp_path / "x", "--threads", "nope")
    assert missing.exit_code == 2 and "thread 'nope' has no checkpoint" in missing.stderr
    assert _digest(db) == before
