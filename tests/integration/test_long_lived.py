"""Long-lived threads: dead values, kept values, migrations, and ``accept``, on a chat."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

import neograph_ext as ne
from tests.drive import Drive
from tests.graphs.chat import ProfileV2, ProfileV3, SummaryV2, chat, say, two_turns
from tests.graphs.pipelines import DraftV1, DraftV2, approval, as_data


def _count(saver: BaseCheckpointSaver[Any], config: RunnableConfig) -> int:
    return len(
        list(saver.list({"configurable": {"thread_id": config["configurable"]["thread_id"]}}))
    )


def _name(value: Any) -> str:
    return str(as_data(value)["who"])


def test_a_change_to_a_value_overwritten_later_reruns_only_the_latest_turn(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    graph = ne.compile(chat(runs, summary=SummaryV2), checkpointer=saver)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.blocker is None
    assert plan.rerun == {"reply"}
    drive.run(graph, None, config)
    assert runs == Counter({"reply": 1})
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_a_live_value_of_an_earlier_turn_blocks_and_names_the_ways_out(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    # A renamed field: the stored profile no longer validates (one that does is kept).
    graph = ne.compile(chat(runs, ProfileV3), checkpointer=saver)
    before = _count(saver, config)
    with pytest.raises(ne.CheckpointSchemaError) as caught:
        drive.run(graph, say("third"), config)
    message = str(caught.value)
    for way in ("keep_compatible", "migrations", "accept", "new thread_id", "profile"):
        assert way in message
    assert runs == Counter() and _count(saver, config) == before


def test_keep_compatible_carries_the_value_without_running_a_node(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    graph = ne.compile(
        chat(runs, ProfileV2), checkpointer=saver, resume=ne.ResumePolicy(keep_compatible=True)
    )
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.MIGRATE and plan.migrated == {"profile"}
    with pytest.raises(ne.CheckpointSchemaError, match="profile"):
        drive.run(
            graph, None, config, resume=ne.ResumePolicy(keep_compatible=True, on_change="raise")
        )
    before = _count(saver, config)
    result = drive.run(graph, None, config)
    assert runs == Counter() and _count(saver, config) == before + 1
    assert as_data(result["profile"]) == {"who": "Ada", "tone": "plain"}
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
    drive.run(graph, say("third"), config)
    assert runs == Counter({"reply": 1})
    assert len(drive.get_state(graph, config).values["messages"]) == 6


def test_a_migration_converts_the_stored_value(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    seen: list[Any] = []

    def to_v3(old: Any) -> Any:
        seen.append(old)
        return ProfileV3(full_name=_name(old))

    graph = ne.compile(
        chat(runs, ProfileV3),
        checkpointer=saver,
        resume=ne.ResumePolicy(migrations={ProfileV3: to_v3}),
    )
    assert drive.plan(graph, config).kind is ne.PlanKind.MIGRATE
    result = drive.run(graph, None, config)
    assert runs == Counter() and len(seen) == 1
    assert as_data(result["profile"]) == {"full_name": "Ada"}


def test_a_failing_migration_writes_nothing(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    graph = ne.compile(
        chat(runs, ProfileV3),
        checkpointer=saver,
        resume=ne.ResumePolicy(migrations={"profile": dict}),
    )
    before = _count(saver, config)
    with pytest.raises(ne.CheckpointSchemaError, match=r"migrations\[profile\].*`profile`"):
        drive.run(graph, None, config)
    assert runs == Counter() and _count(saver, config) == before


def test_a_raising_migration_writes_nothing(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    two_turns(drive, saver, config)

    def broken(old: Any) -> Any:
        raise KeyError("nickname")

    graph = ne.compile(
        chat(Counter(), ProfileV3),
        checkpointer=saver,
        resume=ne.ResumePolicy(migrations={"profile": broken}),
    )
    before = _count(saver, config)
    with pytest.raises(ne.CheckpointSchemaError, match=r"migrations\[profile\] raised on channel"):
        drive.run(graph, say("third"), config)
    assert _count(saver, config) == before


def test_an_incompatible_value_is_not_kept(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig
) -> None:
    two_turns(drive, saver, config)
    graph = ne.compile(
        chat(Counter(), ProfileV3), checkpointer=saver, resume=ne.ResumePolicy(keep_compatible=True)
    )
    plan = drive.plan(graph, config)
    assert plan.blocker and "earlier turn" in plan.blocker and not plan.migrated


def test_a_kept_value_is_migrated_on_a_later_deploy(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    graph = ne.compile(
        chat(runs, ProfileV2),
        checkpointer=saver,
        resume=ne.ResumePolicy(keep_compatible={"profile"}),
    )
    assert drive.plan(graph, config).kind is ne.PlanKind.MIGRATE
    result = drive.run(graph, None, config)
    assert runs == Counter() and as_data(result["profile"])["tone"] == "plain"
    graph = ne.compile(
        chat(runs, ProfileV3),
        checkpointer=saver,
        resume=ne.ResumePolicy(migrations={"profile": lambda old: ProfileV3(full_name=_name(old))}),
    )
    result = drive.run(graph, say("third"), config)
    assert as_data(result["profile"]) == {"full_name": "Ada"}
    assert runs == Counter({"reply": 1})


def test_a_value_from_a_plain_invoke_under_new_code_is_dead_stale(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    graph = ne.compile(chat(runs, summary=SummaryV2), checkpointer=saver)
    drive.invoke(graph, say("plain"), config)  # a later turn under the new code, not through run()
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
    drive.run(graph, say("next"), config)
    assert runs == Counter({"reply": 2})


def test_accept_stamps_the_head_as_current_keeping_next_and_interrupts(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    graph = ne.compile(chat(runs, ProfileV3), checkpointer=saver)
    assert drive.plan(graph, config).blocker
    before = drive.get_state(graph, config)
    drive.accept(graph, config)
    after = drive.get_state(graph, config)
    assert after.next == before.next and after.interrupts == before.interrupts
    assert (
        after.config["configurable"]["checkpoint_id"]
        != before.config["configurable"]["checkpoint_id"]
    )
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
    drive.run(graph, say("third"), config)
    assert runs == Counter({"reply": 1})


def test_accept_on_a_rewinding_thread(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(chat(Counter()), checkpointer=saver)
    drive.run(graph, say("hi"), config)
    graph = ne.compile(chat(runs, summary=SummaryV2), checkpointer=saver)
    assert drive.plan(graph, config).kind is ne.PlanKind.REWIND
    drive.accept(graph, config)
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
    assert runs == Counter()


def test_keeping_a_value_keeps_the_pending_interrupt_for_its_answer(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:

    drive.run(ne.compile(approval(Counter(), DraftV1), checkpointer=saver), {}, config)
    graph = ne.compile(
        approval(runs, DraftV2), checkpointer=saver, resume=ne.ResumePolicy(keep_compatible=True)
    )
    assert drive.plan(graph, config).kind is ne.PlanKind.MIGRATE
    result = drive.run(graph, Command(resume="approve"), config)
    assert result["answer"] == "approve" and runs == Counter({"review": 1, "send": 1})
    assert as_data(result["draft"]) == {"text": "hello", "tone": "plain"}


def test_an_approval_is_asked_again_when_the_draft_changed(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:

    drive.run(ne.compile(approval(Counter(), DraftV1), checkpointer=saver), {}, config)
    graph = ne.compile(approval(runs, DraftV2), checkpointer=saver)
    assert any("asked again" in note for note in drive.plan(graph, config).notes)
    with caplog.at_level("WARNING", logger="neograph_ext"):
        again = drive.run(graph, Command(resume="approve"), config)
    assert "the answer given was set aside" in caplog.text
    assert [i.value for i in again["__interrupt__"]] == ["approve?"]
    assert runs == Counter({"draft": 1, "review": 1})  # send did not run
    result = drive.run(graph, Command(resume="approve"), config)
    assert result["answer"] == "approve" and runs["send"] == 1
    assert as_data(result["draft"]) == {"text": "hello", "tone": "plain"}  # the new draft


def test_reanswer_sends_at_once(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:

    drive.run(ne.compile(approval(Counter(), DraftV1), checkpointer=saver), {}, config)
    graph = ne.compile(approval(runs, DraftV2), checkpointer=saver)
    result = drive.run(
        graph, Command(resume="approve"), config, resume=ne.ResumePolicy(reanswer=True)
    )
    assert result["answer"] == "approve"
    assert runs == Counter({"draft": 1, "review": 2, "send": 1})


def _at_breakpoint(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> Any:
    """A thread stopped by ``interrupt_before=["send"]`` under DraftV1, and the graph of
    DraftV2 (counting into ``runs``) that resumes it."""
    old = ne.compile(
        approval(Counter(), DraftV1, ask=False), checkpointer=saver, interrupt_before=["send"]
    )
    drive.run(old, {}, config)
    return ne.compile(
        approval(runs, DraftV2, ask=False), checkpointer=saver, interrupt_before=["send"]
    )


def test_a_static_breakpoint_is_asked_again_too(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = _at_breakpoint(drive, saver, config, runs)
    drive.run(graph, Command(resume="approve"), config)
    assert runs == Counter({"draft": 1, "review": 1})
    assert drive.get_state(graph, config).next == ("send",)
    drive.run(graph, Command(resume="approve"), config)
    assert runs["send"] == 1


def test_a_static_breakpoint_with_reanswer_sends_at_once(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = _at_breakpoint(drive, saver, config, runs)
    drive.run(graph, None, config, resume=ne.ResumePolicy(reanswer=True))
    assert runs == Counter({"draft": 1, "review": 1, "send": 1})


# Async on PostgreSQL, the input checkpoint often holds the message with the id
# ``add_messages`` gave it: the replay records the digest the turn recorded instead.
def test_replay_turns_reruns_the_earlier_turn_then_feeds_later_inputs_again(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    graph = ne.compile(chat(runs, ProfileV3), checkpointer=saver)
    plan = drive.plan(graph, config, resume=ne.ResumePolicy(replay_turns=True))
    assert plan.kind is ne.PlanKind.REWIND and plan.blocker is None and len(plan.replayed) == 1
    result = drive.run(graph, None, config, resume=ne.ResumePolicy(replay_turns=True))
    assert runs == Counter({"extract": 1, "reply": 2})
    said = [m.content for m in result["messages"]]
    assert said == ["hi", "re: hi", "again", "re: again"]
    assert as_data(result["profile"]) == {"full_name": "Ada"}
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE
    stored = drive.run(graph, say("again"), config)  # the replayed input was recorded
    assert [m.content for m in stored["messages"]] == said and runs["reply"] == 2


def test_replay_stops_at_the_first_interrupt_of_a_later_turn(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = ne.compile(chat(Counter()), checkpointer=saver)
    drive.run(graph, say("hi"), config)
    assert "__interrupt__" in drive.run(graph, say("ask"), config)
    drive.run(graph, Command(resume="yes"), config)
    drive.run(graph, say("bye"), config)
    graph = ne.compile(chat(runs, ProfileV3), checkpointer=saver)

    assert len(drive.plan(graph, config, resume=ne.ResumePolicy(replay_turns=True)).replayed) == 2
    result = drive.run(graph, None, config, resume=ne.ResumePolicy(replay_turns=True))

    # Turn 1 re-ran, turn 2's input was fed again and asked again; turn 3 waits.
    assert "__interrupt__" in result
    assert runs == Counter({"extract": 1, "reply": 2})
    assert [m.content for m in result["messages"]] == ["hi", "re: hi", "ask"]
    assert drive.plan(graph, config).replayed  # turn 3 is still owed
    answered = drive.run(graph, Command(resume="sure"), config)
    # The answer finishes turn 2, and the replay goes on with turn 3.
    said = [m.content for m in answered["messages"]]
    assert said == ["hi", "re: hi", "ask", "re: ask: sure", "bye", "re: bye"]
    assert runs == Counter({"extract": 1, "reply": 4})
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_kept_values_and_a_latest_turn_rewind_combine(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    two_turns(drive, saver, config)
    # Only the profile is kept: the summary's change rewinds the latest turn.
    graph = ne.compile(
        chat(runs, ProfileV2, SummaryV2),
        checkpointer=saver,
        resume=ne.ResumePolicy(keep_compatible={"profile"}),
    )
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.migrated == {"profile"}
    assert plan.rerun == {"reply"} and plan.blocker is None
    result = drive.run(graph, None, config)
    assert runs == Counter({"reply": 1})
    assert as_data(result["profile"]) == {"who": "Ada", "tone": "plain"}
    assert [m.content for m in result["messages"]] == ["hi", "re: hi", "again", "re: again"]
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_accept_keeps_a_pending_interrupt(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:

    drive.run(ne.compile(approval(Counter(), DraftV1), checkpointer=saver), {}, config)
    graph = ne.compile(approval(runs, DraftV2), checkpointer=saver)
    before = drive.get_state(graph, config)
    drive.accept(graph, config)
    after = drive.get_state(graph, config)
    assert after.next == before.next == ("review",)
    assert [i.value for i in after.interrupts] == [i.value for i in before.interrupts]
    assert drive.plan(graph, config).kind is ne.PlanKind.CONTINUE
    result = drive.run(graph, Command(resume="approve"), config)
    assert result["answer"] == "approve" and runs == Counter({"review": 1, "send": 1})
