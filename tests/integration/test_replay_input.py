"""A replayed turn is recorded under the input the turn was given, even where LangGraph
stored that input after a node changed it (``add_messages`` sets message ids; a saver
that serialises in the background, as ``AsyncPostgresSaver`` often does, then stores
the changed value): the same input sent again is the same turn, not a new one."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

import neograph_ext as ne
from tests.graphs.chat import ProfileV3, chat, say


class LateInputSaver(InMemorySaver):
    """Stores a turn's input checkpoint only once ``add_messages`` gave its message an id
    (bounded), as a saver that serialises in the background may."""

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if metadata.get("source") == "input":
            messages = checkpoint["channel_values"]["__start__"]["messages"]
            deadline = time.monotonic() + 5
            while messages[0].id is None and time.monotonic() < deadline:
                time.sleep(0.001)
        return super().put(config, checkpoint, metadata, new_versions)


def test_the_same_input_after_a_replay_is_the_replayed_turn() -> None:
    saver = LateInputSaver()
    config: Any = {"configurable": {"thread_id": str(uuid.uuid4())}}
    old = ne.compile(chat(Counter()), checkpointer=saver)
    ne.run(old, say("hi"), config)
    ne.run(old, say("again"), config)
    stored = [
        t.checkpoint["channel_values"]["__start__"]["messages"][0]
        for t in saver.list(config)
        if t.metadata.get("source") == "input"
    ]
    assert all(m.id is not None for m in stored), "the inputs were stored unchanged"

    runs: Counter[str] = Counter()
    graph = ne.compile(chat(runs, ProfileV3), checkpointer=saver)
    ne.run(graph, None, config, resume=ne.ResumePolicy(replay_turns=True))
    assert runs == Counter({"extract": 1, "reply": 2})
    again = ne.run(graph, say("again"), config)
    assert runs == Counter({"extract": 1, "reply": 2}), "the same input started a new turn"
    assert [m.content for m in again["messages"]] == ["hi", "re: hi", "again", "re: again"]
