"""Threads whose state lives in a ``DeltaChannel`` (LangGraph 1.2) plan offline as live:
with values, the channel's value (rebuilt from its ancestors' writes) is exported as
LangGraph rebuilds it, so ``keep_compatible`` judges it offline too."""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from pydantic import BaseModel

import neograph_ext as ne
from tests.drive import Saver
from tests.graphs.delta import STATES, fan
from tests.integration.test_conformance import (
    COLUMNS,
    OPTIONAL,
    REQUIRED,
    V1,
    Column,
    add_lang,
)
from tests.integration.test_conformance import fan as conformance_fan


@pytest.mark.parametrize("crash", [None, "c"])
def test_a_changed_node_rewinds_alike(
    saver: Saver, config: RunnableConfig, tmp_path: Path, crash: str | None, runs: Counter[str]
) -> None:
    writer = ne.compile(fan(STATES["delta-far"], Counter(), crash=crash), checkpointer=saver)
    with contextlib.suppress(RuntimeError):
        ne.run(writer, {"log": []}, config)
    current = ne.compile(
        fan(STATES["delta-far"], runs, b="b2"), checkpointer=saver, versions={"b": "2"}
    )
    offline = _offline(writer, current, config, tmp_path, with_values=False)
    assert offline == ne.plan(current, config) and offline.kind is ne.PlanKind.REWIND
    assert runs == Counter()


@pytest.mark.parametrize("column", [c for c in COLUMNS if c.listed], ids=lambda c: c.name)
@pytest.mark.parametrize(
    ("new", "options"),
    [(OPTIONAL, {"keep_compatible": True}), (REQUIRED, {"migrations": {"summary": add_lang}})],
    ids=["keep_compatible", "migrations"],
)
def test_carrying_judges_the_rebuilt_value_alike(
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    tmp_path: Path,
    column: Column,
    new: type[BaseModel],
    options: dict[str, Any],
    runs: Counter[str],
) -> None:
    writer = ne.compile(conformance_fan(column, V1, Counter()), checkpointer=saver)
    ne.run(writer, {}, config)
    policy = ne.ResumePolicy(**options)
    current = ne.compile(conformance_fan(column, new, runs), checkpointer=saver, resume=policy)
    offline = _offline(writer, current, config, tmp_path, with_values=True)
    assert offline == ne.plan(current, config)
    assert offline.kind is ne.PlanKind.MIGRATE and offline.migrated == {"summary"}
    assert runs == Counter()


def _offline(
    writer: Any, current: Any, config: RunnableConfig, folder: Path, *, with_values: bool
) -> ne.ResumePlan:
    thread = config["configurable"]["thread_id"]
    ne.export_threads(writer, folder, threads=[thread], with_values=with_values)
    (fixture,) = ne.testing.read_fixtures(folder)
    return ne.testing.plan_fixture(current, fixture)
