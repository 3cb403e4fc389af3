"""The write path of an ``@entrypoint`` thread after a deploy, for ``paths.PATHS``.

``freplay``: a three-turn counter whose save type changed (``str`` to ``int``),
``replay_turns=True``: the first turn is rewound and the later inputs replayed, each an
invocation of its own, so a kill between two of them leaves turns owed.

Every task appends its name to the log first, so the log says what ran.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.func import entrypoint, task

import neograph_ext as ne
from tests.reliability import worker

__all__ = ["freplay", "freplay_call", "freplay_setup"]


def _final(graph: Any, config: RunnableConfig) -> Any:
    """As ``paths.final``: an entrypoint's values are its return value."""
    state = graph.get_state(config)
    return {
        "values": state.values,
        "next": sorted(state.next),
        "asks": [i.value for i in state.interrupts],
    }


def freplay(saver: BaseCheckpointSaver[Any], log: Path, save: type = int) -> Any:
    """A counter: ``add`` adds the input to ``previous``, saved as ``save``."""

    @task
    def add(x: int) -> int:
        worker.record(log, "add")
        return x + 100

    def counter(x: int, *, previous: Any = None) -> Any:
        # Not logged: LangGraph runs an entrypoint's body again on every resume, to
        # reach its next call; what it must not run again is a finished task.
        total = add(x).result() + (int(previous) if previous is not None else 0)
        return entrypoint.final(value=total, save=save(total))

    counter.__annotations__["return"] = entrypoint.final[int, save]  # type: ignore[valid-type]
    return ne.compile(entrypoint()(counter), checkpointer=saver)


def freplay_setup(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> None:
    graph = freplay(saver, log, str)
    for turn in (1, 2, 3):
        ne.run(graph, turn, config)


def freplay_call(saver: BaseCheckpointSaver[Any], log: Path, config: RunnableConfig) -> Any:
    graph = freplay(saver, log)
    ne.run(graph, None, config, resume=ne.ResumePolicy(replay_turns=True))
    return _final(graph, config)
