"""Property: whatever happens to a thread, nothing is lost and the end is right.

Hypothesis draws sequences of operations on one thread of the reliability graph:
runs, crashes inside a node, output-type changes (a deploy, or, for types drawn
before, a rollback: every run takes the thread over, ``ROLLING``) and LangGraph time
travel (``run`` from an earlier checkpoint of any branch). After every operation,
every checkpoint that existed before it still exists; at the end, one more ``run``
returns exactly what a fresh run of the final code returns.
One way: the property's operations are the sync driver's, drawn and replayed by
Hypothesis; doubling them would halve the examples drawn in the same time.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import BaseCheckpointSaver

import neograph_ext as ne
from tests.reliability import harness as h
from tests.reliability import worker
from tests.reliability.worker import INPUT, NODES

Op = tuple[Any, ...]

ROLLING = ne.ResumePolicy(take_over=True)
"""Code drawn again is older than code stored since (docs/deploys.md): each run is a
deliberate deploy, so it takes over a thread newer code wrote."""

OPS = st.one_of(
    st.just(("run",)),
    st.tuples(st.just("crash"), st.sampled_from(NODES)),
    st.tuples(st.just("retype"), st.sampled_from(NODES), st.sampled_from(sorted(worker.TYPES))),
    st.tuples(st.just("travel"), st.integers(min_value=0, max_value=10_000)),
)


@pytest.fixture(
    params=[
        pytest.param(("sqlite", 25), id="sqlite"),
        pytest.param(("postgres", 10), id="postgres", marks=pytest.mark.postgres),
    ]
)
def store(request: pytest.FixtureRequest) -> Iterator[tuple[BaseCheckpointSaver[Any], int]]:
    """A saver the whole property test shares (each example uses its own thread)."""
    kind, examples = request.param
    db = (
        str(request.getfixturevalue("sqlite_path"))
        if kind == "sqlite"
        else request.getfixturevalue("pg_dsn")
    )
    with worker.open_saver(db) as saver:
        saver.setup()  # type: ignore[attr-defined]
        yield saver, examples


def code_text(code: dict[str, str]) -> str:
    return ",".join(f"{node}={tp}" for node, tp in sorted(code.items()))


def checkpoint_ids(saver: BaseCheckpointSaver[Any], thread: str) -> list[str]:
    return sorted(t.checkpoint["id"] for t in saver.list({"configurable": {"thread_id": thread}}))


def apply(
    op: Op, saver: BaseCheckpointSaver[Any], thread: str, code: dict[str, str], log: Path
) -> None:
    """One operation; a crash is an exception raised inside the node, as a bug would."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    crash_at = None
    if op[0] == "retype":
        code[op[1]] = op[2]
        return
    if op[0] == "crash":
        crash_at = op[1]
    if op[0] == "travel":
        ids = checkpoint_ids(saver, thread)
        if not ids:
            return
        config["configurable"]["checkpoint_id"] = ids[op[1] % len(ids)]
    graph = worker.compiled(saver, worker.build(log, code, crash_at=crash_at), code)
    try:
        ne.run(graph, dict(INPUT), config, resume=ROLLING)
    except RuntimeError as exc:
        if crash_at is None or f"crash in {crash_at}" not in str(exc):
            raise


def test_nothing_is_lost_and_the_end_is_a_fresh_run(
    store: tuple[BaseCheckpointSaver[Any], int], tmp_path: Path
) -> None:
    saver, examples = store
    log = tmp_path / "executions.log"

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(ops=st.lists(OPS, min_size=1, max_size=8))
    def prop(ops: list[Op]) -> None:
        thread = f"property-{uuid.uuid4()}"
        code = worker.parse_code(None)
        for op in ops:
            before = set(checkpoint_ids(saver, thread))
            apply(op, saver, thread, code, log)
            after = set(checkpoint_ids(saver, thread))
            assert before <= after, f"{op} lost checkpoints {sorted(before - after)}"

        graph = worker.compiled(saver, worker.build(log, code), code)
        config = {"configurable": {"thread_id": thread}}
        result = ne.run(graph, dict(INPUT), config, resume=ROLLING)

        assert result == h.reference(code_text(code))
        assert ne.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE

    prop()
