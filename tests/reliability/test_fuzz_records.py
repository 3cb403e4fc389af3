"""Fuzzing every kind of record neograph-ext reads back from a database: a claim, a
checkpoint's stamp and run mark, a budget ledger, a fixture file.

Each example stores one hostile record (wrong types, nesting, NUL bytes, huge integers,
1 MB strings) beside a thread waiting on a question, on SQLite and PostgreSQL; then
``plan``, ``check_threads`` and the CLI's ``plan`` and ``check`` succeed or raise a
documented error (``NeographExtError``, exit code 1 or 2 with one error line), and the
answer still resumes the thread to its end. Example counts are bounded for CI.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.types import Command

import neograph_ext as ne
from neograph_ext.decision._claim import CLAIM
from neograph_ext.decision._stamp import RUN_KEY, STAMP_KEY
from neograph_ext.storage._ledger_store import LEDGER_NS
from tests.cli.cli_graphs import asking
from tests.cli.support import cli
from tests.drive import Saver
from tests.reliability import worker

GRAPH = "tests.cli.cli_graphs:asking"
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HEX = "0123456789abcdef"

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**200)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.text(alphabet=HEX + "\x00", min_size=15, max_size=66)
    | st.just("a" * 1_000_000)
    | st.just("\x00")
)
values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
"""Any value a hostile or buggy writer could leave."""

claims = values | st.fixed_dictionaries(
    {"stamp": values, "n": values, "before": values, "took_from": values}
)
"""A claim's value: any value, or one with the claim's keys and any values."""

ATTACK_BEFORE = {"stamp": "a" * 64, "n": 0, "before": [["t"], {"t": 1}], "took_from": None}
"""A claim whose ``before`` holds a list and a dict: unhashable."""
ATTACK_NUL = {"stamp": "a" * 63 + "\x00", "n": 0, "before": [], "took_from": None}
"""A claim whose stamp holds a NUL byte, which PostgreSQL refuses in a query."""


def _waiting(saver: BaseCheckpointSaver[Any]) -> tuple[Any, dict[str, Any]]:
    """A new thread, waiting on ``asking``'s question; the graph and its config."""
    graph = ne.compile(asking, checkpointer=saver)
    config: dict[str, Any] = {"configurable": {"thread_id": f"fuzz-{uuid.uuid4()}"}}
    assert "__interrupt__" in ne.run(graph, {"doc": "d", "log": []}, config)
    return graph, config


def _documented(call: Callable[[], object]) -> None:
    with contextlib.suppress(ne.NeographExtError):
        call()


def _survives(db: str, graph: Any, config: dict[str, Any]) -> None:
    """Every reader succeeds or raises a documented error; the answer ends the thread."""
    thread = config["configurable"]["thread_id"]
    _documented(lambda: ne.plan(graph, config))
    _documented(lambda: list(ne.check_threads(graph, [thread])))
    for args in (("plan", GRAPH, "--db", db, "--thread", thread), ("check", GRAPH, "--db", db)):
        result = cli(*args, "--json", *(("--thread", thread) if args[0] == "check" else ()))
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        assert result.exit_code in (0, 1, 2), result.output
        if result.exit_code == 2:
            assert result.stderr.startswith("error: "), result.stderr
    done = ne.run(graph, Command(resume="yes"), config)
    assert "__interrupt__" not in done, done


@pytest.fixture
def saver(db: str) -> Any:
    with worker.open_saver(db) as opened:
        yield opened


@SETTINGS
@given(value=claims)
@example(value=ATTACK_BEFORE)
@example(value=ATTACK_NUL)
def test_a_hostile_claim_never_wedges_a_thread(
    db: str, saver: BaseCheckpointSaver[Any], value: Any
) -> None:
    graph, config = _waiting(saver)
    head = saver.get_tuple(config)
    assert head is not None
    try:
        saver.put_writes(head.config, [(CLAIM, value)], CLAIM)
    except Exception:  # what the database itself refuses to store cannot be read back
        assume(False)
    _survives(db, graph, config)


def _set_metadata(db: str, checkpoint_id: str, metadata: dict[str, Any]) -> None:
    """Overwrite a checkpoint's metadata in place, as only another writer would."""
    stored = json.dumps(metadata)
    if db.startswith("postgresql://"):
        import psycopg

        assume("\\u0000" not in stored)  # jsonb cannot hold it
        with psycopg.connect(db, autocommit=True) as conn:
            query = "UPDATE checkpoints SET metadata = %s::jsonb WHERE checkpoint_id = %s"
            conn.execute(query, (stored, checkpoint_id))
        return
    with contextlib.closing(sqlite3.connect(db)) as conn:
        query = "UPDATE checkpoints SET metadata = ? WHERE checkpoint_id = ?"
        conn.execute(query, (stored.encode(), checkpoint_id))
        conn.commit()


@SETTINGS
@given(stamp=values, mark=values)
@example(stamp="2:" + "a" * 63 + "\x00", mark="a" * 16 + ".continue.")
def test_a_hostile_stamp_or_run_mark_never_wedges_a_thread(
    db: str, saver: BaseCheckpointSaver[Any], stamp: Any, mark: Any
) -> None:
    graph, config = _waiting(saver)
    head = saver.get_tuple(config)
    assert head is not None
    metadata = {**head.metadata, STAMP_KEY: stamp, RUN_KEY: mark}
    _set_metadata(db, head.checkpoint["id"], metadata)
    _survives(db, graph, config)


@SETTINGS
@given(value=values)
def test_a_hostile_ledger_never_wedges_a_thread(
    db: str, saver: BaseCheckpointSaver[Any], value: Any
) -> None:
    graph, config = _waiting(saver)
    thread = config["configurable"]["thread_id"]
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"ledger": value}
    checkpoint["channel_versions"] = {"ledger": 1}
    ledger_config = {"configurable": {"thread_id": thread, "checkpoint_ns": LEDGER_NS}}
    try:
        saver.put(ledger_config, checkpoint, {"source": "update", "step": -1}, {"ledger": 1})
    except Exception:  # what the database itself refuses to store cannot be read back
        assume(False)
    assert ne.budget.ledger(graph, config) is None
    _survives(db, graph, config)


@SETTINGS
@given(
    field=st.sampled_from(["thread_id", "head", "values", "stamps", "checkpoints"]), value=values
)
def test_a_hostile_fixture_is_read_or_refused_with_a_fixture_error(
    db: str, saver: Saver, tmp_path_factory: pytest.TempPathFactory, field: str, value: Any
) -> None:
    graph, config = _waiting(saver)
    directory = tmp_path_factory.mktemp("fixtures")
    thread = config["configurable"]["thread_id"]
    ne.export_threads(graph, directory, threads=[thread])
    (path,) = directory.iterdir()
    document = json.loads(path.read_text())
    document[field] = value
    path.write_text(json.dumps(document))
    try:
        fixtures = ne.testing.read_fixtures(directory)
    except ne.testing.FixtureError:
        return
    for fixture in fixtures:
        _documented(lambda fixture=fixture: ne.testing.plan_fixture(graph, fixture))
