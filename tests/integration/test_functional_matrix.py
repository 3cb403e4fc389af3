"""Where the Functional API meets the library's other features: rolling deploys,
interrupts inside tasks, several turns, pruning, failed calls, after a deploy.

Each case runs an entrypoint of ``tests.graphs.functional`` (sync for the sync drive,
async for the async one) on every saver, deploys changed code, and counts the task
executions of the resume; the result is the one a fresh run of the new code returns.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.functional import asking_chain


def test_older_code_leaves_a_thread_the_newer_code_rewound_alone(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    runs: Counter[str] = Counter()
    workflow = asking_chain(runs, is_async=drive.is_async)
    old = ne.compile(workflow, checkpointer=saver)
    new = ne.compile(workflow, checkpointer=saver, versions={"t2": "v2"})
    drive.run(old, 1, config)  # waits on the question, under the old release
    assert "__interrupt__" in drive.run(new, None, config)  # t2 re-runs, asked again
    assert runs == Counter(t1=1, t2=2)
    for _ in range(3):  # workers of both releases keep taking the thread
        assert drive.plan(old, config).kind is ne.PlanKind.SUPERSEDED
        with pytest.raises(ne.ThreadSupersededError) as raised:
            drive.run(old, Command(resume="1"), config)
        assert raised.value.owner == new.neograph_ext_stamp.id
        assert drive.plan(new, config).kind is ne.PlanKind.CONTINUE
    assert runs == Counter(t1=1, t2=2)  # before: t2 ran once more per turn, each release
    assert drive.run(new, Command(resume="1"), config) == 4
    assert runs == Counter(t1=1, t2=2, t3=1)
    # A rollback takes the thread over, once, and the newer code must take it back.
    rollback = ne.ResumePolicy(take_over=True)
    assert drive.plan(old, config, resume=rollback).rerun == {"t2", "t3", "workflow"}
    assert "__interrupt__" in drive.run(old, None, config, resume=rollback)
    assert drive.run(old, Command(resume="1"), config) == 4
    assert runs == Counter(t1=1, t2=3, t3=2)
    assert drive.plan(new, config).kind is ne.PlanKind.SUPERSEDED
