"""What to invoke for a decision: the pure step between reading and executing.

Rules:
- Computed purely, by ``work_for``: nothing here reads or writes the saver, and
  a decision that must not run raises before anything runs.
- A rewind is LangGraph time travel: invoke from the target checkpoint, a fork.
  When the plan keeps finished tasks of the target's step, the invocation names the
  checkpoint and the tasks for ``_keep``, which makes the fork and saves their writes
  on it first; the thread then resumes from that fork. Nothing is deleted or
  overwritten.
- A head other code owns becomes this code's before it is resumed: a crashed one from
  a fork (``_forking``), a waiting one by a claim (``_claimed``, ``_claim``).
- A follow-up invocation (a replayed turn, an answer to a question asked again) runs
  only when the thread is as its ``Due`` wants it once the invocations before it ran.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.pregel import Pregel
from langgraph.types import Command

from neograph_ext.decision._changes import ChangeReason
from neograph_ext.decision._claim import claim_writes, last_writer
from neograph_ext.decision._decision import PlanKind, ResumePlan
from neograph_ext.decision._errors import CheckpointSchemaError, GraphError, ThreadSupersededError
from neograph_ext.decision._head_state import (
    has_interrupt,
    is_paused,
    rewind_cut_short,
    started_input,
    stored_result,
    waiting_nodes,
)
from neograph_ext.decision._inside import Inside
from neograph_ext.decision._langgraph import unsaved_subgraph
from neograph_ext.decision._langgraph_questions import by_interrupt_id, open_questions
from neograph_ext.decision._langgraph_renames import channel_nodes
from neograph_ext.decision._misread import turn_misread
from neograph_ext.decision._ownership import superseded_message
from neograph_ext.decision._plan import ASKED_AGAIN, REANSWERED
from neograph_ext.decision._reanswer import reanswers
from neograph_ext.decision._stamp import (
    ASK_AGAIN,
    PLAIN_CALL,
    Stamp,
    StampRef,
    encode_run,
    input_digest,
    read_marks,
)
from neograph_ext.drivers._thread import ThreadCall, at_checkpoint, named_checkpoint

__all__ = [
    "Due",
    "Invocation",
    "ReplayInput",
    "Work",
    "durable",
    "is_due",
    "marked_kind",
    "takes_head",
    "work_for",
]


class Due(StrEnum):
    """When an invocation runs, judged on the thread as the invocations before it left it."""

    ALWAYS = "always"
    INTERRUPTED = "interrupted"
    """Only if the thread waits on a question (an answer to a question asked again)."""
    COMPLETE = "complete"
    """Only if the thread's run completed (a replayed turn, a new turn after a rewind)."""


@dataclass(frozen=True)
class ReplayInput:
    """An input to read when it is due: the one a later turn started with."""

    config: RunnableConfig
    """Names that turn's ``input`` checkpoint, whose ``__start__`` value is the input."""
    source: str | None = None
    """The head whose turns are replayed, named in every checkpoint the replay writes
    (``RunMark.replaying``) so that a retry after a kill replays the turns still owed."""


class Invocation(NamedTuple):
    """One ``invoke`` of the graph. Named tuples, not dataclasses, for this module's
    records: every call builds them, and a tuple is built several times faster."""

    input: Any
    config: RunnableConfig
    mark: str
    """The run mark its checkpoints carry (``_stamp.encode_run``)."""
    when: Due = Due.ALWAYS
    keep: tuple[RunnableConfig, frozenset[str]] | None = None
    """Before invoking: fork this checkpoint, keeping the finished tasks of these nodes."""
    claim: tuple[RunnableConfig, list[tuple[str, Any]]] | None = None
    """Before invoking: store this claim on this waiting checkpoint (``_claim``)."""
    upto: int | None = None
    """For an entrypoint's ``keep``: only calls before this position are kept."""
    answering: Mapping[str, Any] = {}
    """For a ``keep``: per kept node waiting on a question, the answer given now, kept
    after the answers its task was given."""
    inner: tuple[RunnableConfig, ...] = ()
    """Before invoking: fork these subgraph checkpoints, each in its own namespace
    (``_inside``); the invocation then resumes the parent from its head."""


class Work(NamedTuple):
    """What a call invokes, and what it returns when it invokes nothing."""

    invocations: tuple[Invocation, ...]
    kwargs: dict[str, Any]
    stored: tuple[Any] | None = None
    """Invoking nothing, the result as LangGraph's channels rebuild it from the head
    (``_head._stored``); None when only LangGraph's ``get_state`` can."""
    carry: ResumePlan | None = None
    """A plan whose values are carried (``_migrate``) before planning the invocations."""
    warnings: tuple[str, ...] = ()
    """What carrying the decision out meets that its caller is warned of, once, with the
    decision (``_decision_log.logged``): this module only computes."""


def work_for(
    call: ThreadCall,
    decision: ResumePlan,
    head: CheckpointTuple | None,
    input: Any,
    kwargs: Mapping[str, Any],
) -> Work:
    """What to invoke for a decision, under the call's resume policy; raises before
    anything runs when it must."""
    _refuse_before_running(call, decision)
    if decision.migrated or decision.carried_from:
        return Work((), {}, carry=decision)
    stored_input = started_input(head) or decision.turn_input
    given = None if input is None or isinstance(input, Command) else input_digest(input)
    input = _unshared(input)
    asking = _asking(call, head)
    # A replay names the head whose turns it replays: the plan's head, or for a replay
    # cut short, the one its checkpoints name (``HeadFacts.owed``).
    source = _source(decision, head)
    took = decision.taken_from
    unread = _not_adopted(call, decision, head)
    verdict = PLAIN_CALL if unread else marked_kind(call, decision, head)
    here = encode_run(call.stamp, ASK_AGAIN if asking else verdict, stored_input, source, took)
    complete = head is not None and not decision.next_nodes and not has_interrupt(head)
    # A complete thread given another input starts a new turn; the same input (or an
    # input whose digest is unknown) asks for the stored result. A turn no run mark
    # recorded (plain LangGraph started it) is known by its input checkpoint's value;
    # without one (durability="exit"), any input starts a new turn, as graph.invoke would.
    new_turn = complete and given is not None and stored_input != given
    said: list[str] = [unread] if unread else []
    if new_turn and not unread:
        _misread_turn(call, decision, head, said)
    elif complete and not unread and decision.kind is PlanKind.UNVERIFIED:
        # Asked for the stored result: a fork of the head records the adoption.
        return Work((), {}, carry=decision, warnings=tuple(said))
    if head is None:
        steps: tuple[Invocation, ...] = (_first_turn(call, decision, input, given),)
    elif decision.kind is PlanKind.REWIND:
        again = encode_run(call.stamp, ASK_AGAIN, stored_input, source, took)
        turn = _turn(call, decision, input, given, Due.COMPLETE) if new_turn else None
        steps = _rewinding(call, decision, head, input, (here, again), source, turn, said)
    elif decision.replayed:
        steps = _replay_finished(call, decision, input, asking, complete, here, source, said)
        if new_turn:
            steps += (_turn(call, decision, input, given, Due.COMPLETE),)
    elif new_turn:
        steps = (_turn(call, decision, input, given, kind=verdict),)
    elif complete:
        steps = ()
    else:
        if given is not None and given != stored_input:
            said.append("the thread is incomplete: resuming it; the input given is ignored")
        resume = _resuming(call, decision, input, asking, here, said)
        forked = _forking(call, head, here) or _renamed_at_question(call, head, input, here)
        steps = (forked or _claimed(call, head, resume, took),)
    stored = stored_result(call.graph, head) if complete and not steps else None
    return Work(steps, durable(kwargs, call.graph), stored, warnings=tuple(said))


def marked_kind(call: ThreadCall, decision: ResumePlan, head: CheckpointTuple | None) -> str:
    """The decision the run mark of a call records: the plan's kind, but a rewind cut
    short that the call continues from the thread's newest checkpoint stays a rewind
    until it finishes, as a question asked again stays owed (``ASK_AGAIN``): so the
    rewind is known unfinished however often its process dies (``upgrade_threads``
    finishes it)."""
    continues = decision.kind is PlanKind.CONTINUE and named_checkpoint(call.config) is None
    if continues and rewind_cut_short(call.graph, head):
        return PlanKind.REWIND
    return decision.kind


def _not_adopted(call: ThreadCall, decision: ResumePlan, head: CheckpointTuple | None) -> str:
    """Why an unverified head is not adopted, or "" when it is (or is not unverified).

    Adopting a thread plain LangGraph wrote is a verification, done once: only a head
    whose values read back as declared becomes this code's (``RunMark.verified``)."""
    if decision.kind is not PlanKind.UNVERIFIED:
        return ""
    unread = turn_misread(call.graph.neograph_ext_revival, head)
    if not unread:
        return ""
    return (
        "not adopted: stored values do not read back as their declared types "
        f"({'; '.join(unread[ch] for ch in sorted(unread))}); the thread stays unverified"
    )


def _first_turn(
    call: ThreadCall, decision: ResumePlan, input: Any, given: str | None
) -> Invocation:
    """The first turn of a thread with no checkpoint; an answer has no question to answer."""
    if isinstance(input, Command) and input.resume is not None:
        raise GraphError(
            f"thread {decision.thread_id!r} has no checkpoint: a Command(resume=...) "
            "answers a question the thread waits on (plain LangGraph would run the "
            "whole graph on an empty input); check the thread_id, or start the thread "
            "with its input"
        )
    return _turn(call, decision, input, given)


def _refuse_before_running(call: ThreadCall, decision: ResumePlan) -> None:
    """Raise what the decision refuses under the call's resume policy, before anything
    runs: a thread newer code owns, a blocker, an unverified thread or a change in
    strict mode."""
    strict = call.resume.on_change == "raise"
    if decision.kind is PlanKind.SUPERSEDED:
        raise ThreadSupersededError(superseded_message(decision), decision)
    if decision.blocker:
        raise CheckpointSchemaError(_message(decision, decision.blocker), decision)
    if decision.kind is PlanKind.UNVERIFIED and call.resume.on_unverified == "raise":
        raise CheckpointSchemaError(_unverified(decision), decision)
    if decision.kind is PlanKind.REWIND and strict:
        ways = (
            "run with resume=ResumePolicy(on_change='rewind') to rewind "
            "and re-run them, keeping the upstream work, or start a new thread_id"
        )
        raise CheckpointSchemaError(_message(decision, ways + _carrying(decision)), decision)
    if decision.kind is PlanKind.MIGRATE and strict:
        ways = (
            "run with resume=ResumePolicy(on_change='rewind') "
            "to convert them, or start a new thread_id"
        )
        raise CheckpointSchemaError(_message(decision, ways + _carrying(decision)), decision)


def _rewinding(
    call: ThreadCall,
    decision: ResumePlan,
    head: CheckpointTuple,
    input: Any,
    marks: tuple[str, str],
    source: str | None,
    turn: Invocation | None,
    said: list[str],
) -> tuple[Invocation, ...]:
    """A rewind: the fork, the turns it replays, then what the call gave: an answer to
    the question the rewind asks (again, with ``reanswer``; or as it was, when only
    finished siblings of the asking task changed: ``_plan.asks_again``), or a new turn.
    ``marks``: the run mark, and the one saying the question is asked again."""
    here, again = marks
    answer = isinstance(input, Command)
    # A task that failed after its answers were stored still lists its last question;
    # it waits on none, and an answer sent to it is LangGraph's to ignore, never one to
    # keep for the next question the rewind asks (another node's).
    answered = (
        has_interrupt(head) and open_questions(call.graph.nodes, head.pending_writes or ()) == ()
    )
    paused = is_paused(call.graph, head) and not answered
    # Neither note: only finished siblings of the asking task changed (``asks_again``).
    kept_question = paused and answer and not {ASKED_AGAIN, REANSWERED} & set(decision.notes)
    applies = call.resume.reanswer or kept_question
    # The rewind of the head's own step re-runs a changed sibling that asked: the task
    # waiting, kept with its answers, asks its next question from what it was asked from,
    # and nothing upstream of it changed, so the answer given now is still its answer. It
    # is kept with the others, so that the task does not stop again beside the sibling.
    beside = (
        {} if applies or not (paused and answer) else _given_beside(call, decision, head, input)
    )
    # Until the question asked again is stored, the checkpoints say so: an answer a
    # retry sends meanwhile was given to the old question (``_asking``).
    mark = again if paused and not applies else here
    fork = _fork_for(call, decision, head, here if beside else mark)
    steps: tuple[Invocation, ...] = (fork._replace(answering=beside) if beside else fork,)
    steps += _replays(call, decision, source)
    if applies and (answer or paused) and decision.replayed:
        # The first question the rewind stops at is an earlier turn's, not the one
        # the answer was given to (the head's, in its last turn): it is asked.
        said.append(
            "the answer given is set aside: the replay asks the questions of the "
            "earlier turns first, and the question it answered is asked again once "
            "its turn is replayed"
        )
    elif kept_question:
        given = _unkeyed(input, head)
        steps += (Invocation(given, at_checkpoint(call.config, None), here, Due.INTERRUPTED),)
    elif applies and (answer or paused):
        steps += _reanswering(call, head, input, here, decision.checkpoint_id, said)
    elif paused and answer and not beside:
        # That the question is asked again is the plan's note (``_plan.ASKED_AGAIN``).
        said.append(
            "the answer given was set aside: something upstream of the question it "
            "answered changed, and the question is asked again "
            "(ResumePolicy(reanswer=True) would apply it)"
        )
    elif turn is not None:
        steps += (turn,)
    return steps


def _given_beside(
    call: ThreadCall, decision: ResumePlan, head: CheckpointTuple, answer: Command[Any]
) -> dict[str, Any]:
    """Per node whose question the head waits on, the answer given now, when the rewind
    is of the step it waits in, keeps its task, and no node whose question waits changed;
    else nothing."""
    questions = open_questions(call.graph.nodes, head.pending_writes or ())
    if decision.checkpoint_id != head.checkpoint["id"] or not questions:
        return {}
    nodes = {q.node for q in questions}
    if len(nodes) < len(questions) or nodes & decision.invalidated_nodes:
        return {}
    if not nodes <= decision.kept_tasks or answer.update is not None or answer.goto:
        return {}
    return _given_to(call, head, answer.resume)


def _given_to(call: ThreadCall, head: CheckpointTuple, resume: Any) -> dict[str, Any]:
    """Per node whose question the head waits on, the answer ``resume`` gives it: keyed
    by its interrupt id, or the bare value when one question waits; none when two
    tasks of one node wait."""
    renames = call.stamp.renames or {}
    # A question a renamed node asked, before it was, hashes its old name.
    found = open_questions([*call.graph.nodes, *renames], head.pending_writes or ()) or ()
    questions = [q._replace(node=renames.get(q.node, q.node)) for q in found]
    if len({q.node for q in questions}) < len(questions):
        return {}
    if isinstance(resume, dict) and by_interrupt_id(resume):
        return {q.node: resume[q.id] for q in questions if q.id in resume}
    return {questions[0].node: resume} if len(questions) == 1 else {}


def _fork_for(
    call: ThreadCall, decision: ResumePlan, head: CheckpointTuple, mark: str
) -> Invocation:
    """The invocation from the rewind's target: resumed without a checkpoint_id when it
    keeps tasks (the fork is the newest checkpoint, and LangGraph hands the writes saved
    on it back to the kept tasks). A rewind to the head itself, and an entrypoint's turn,
    are forked so even when nothing is kept: invoked from that checkpoint, langgraph 1.1
    runs on the checkpoint itself, over the writes stored on it (which later resumes are
    handed), instead of forking it."""
    if decision.inside:
        inner = tuple(_inner_config(call.config, inside) for inside in decision.inside)
        resume = Invocation(None, at_checkpoint(call.config, None), mark, inner=inner)
        return _claimed(call, head, resume, decision.taken_from)
    rewind = at_checkpoint(call.config, decision.checkpoint_id)
    entry = call.graph.neograph_ext_entrypoint is not None
    if not (decision.kept_tasks or decision.checkpoint_id == head.checkpoint["id"] or entry):
        return Invocation(None, rewind, mark)
    upto = next((s.step for s in decision.steps if not s.kept and entry), None)
    keep = (rewind, decision.kept_tasks)
    return Invocation(None, at_checkpoint(call.config, None), mark, keep=keep, upto=upto)


def _inner_config(config: RunnableConfig, inside: Inside) -> RunnableConfig:
    """The address of the subgraph checkpoint a rewind inside forks."""
    thread_id = (config.get("configurable") or {})["thread_id"]
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": inside.namespace,
            "checkpoint_id": inside.checkpoint_id,
        }
    }


def _unkeyed(answer: Command[Any], head: CheckpointTuple) -> Command[Any]:
    """An answer keyed by the interrupt id of the one question the head waits on, as the
    bare value: the fork asks the same question under a new id, which the old key does
    not answer (with several questions, a bare value would answer none: left keyed)."""
    resume = answer.resume
    asked = [w for w in head.pending_writes or () if w[1] == "__interrupt__"]
    if not (isinstance(resume, Mapping) and by_interrupt_id(resume)):
        return answer
    if len(resume) == 1 == len(asked) and answer.update is None:
        return Command(resume=next(iter(resume.values())), goto=answer.goto)
    return answer


def _reanswering(
    call: ThreadCall,
    head: CheckpointTuple,
    input: Any,
    mark: str,
    until: str | None,
    said: list[str],
) -> tuple[Invocation, ...]:
    """What is sent once the rewind to ``until`` asked again (``_reanswer``), due while
    the thread waits on a question."""
    sent, why = reanswers(call.graph.nodes, head, input, until)
    if why is not None:
        said.append(why)
    after = at_checkpoint(call.config, None)
    return tuple(Invocation(value, after, mark, Due.INTERRUPTED) for value in sent)


def _forking(call: ThreadCall, head: CheckpointTuple | None, mark: str) -> Invocation | None:
    """Resume a crashed head other code wrote from a fork of it under this code's stamp.

    The writes a superstep's tasks leave when one of them crashes stay on the checkpoint
    it ran from, and carry no stamp: left on the other code's head, an older release
    resuming it would be handed this code's outputs (and make the thread its own), a
    newer one would take them for its own. On the fork, which keeps every finished task,
    they are this code's (``_ownership``); an entrypoint's fork keeps its turn's
    finished calls (``_keep_calls``). A head waiting on a question (whose open questions
    a fork would give new ids) or on a subgraph (whose own checkpoints a fork would
    leave behind) is claimed instead and resumed where it is (``_claimed``).
    """
    if head is None or is_paused(call.graph, head):
        return None
    stamp, _ = read_marks(head.metadata)
    if not isinstance(stamp, Stamp | StampRef) or stamp.id == call.stamp.id:
        return None
    nodes = call.stamp.nodes
    waits = waiting_nodes(call.graph, head)
    if any(nodes[name].sub is not None for name in waits if name in nodes):
        return None
    base = at_checkpoint(call.config, head.checkpoint["id"])
    shape = call.graph.neograph_ext_entrypoint
    everything = shape.tasks if shape is not None else frozenset(call.graph.nodes)
    return Invocation(None, at_checkpoint(call.config, None), mark, keep=(base, everything))


def _renamed_at_question(
    call: ThreadCall, head: CheckpointTuple, input: Any, mark: str
) -> Invocation | None:
    """Resume a head other code wrote, waiting on a question in a step whose task ids
    or writes name a node this code renamed (``renames``), from a fork of it keeping
    every finished task; the tasks waiting keep their answers and the answer given now
    (``answering``). Resumed where it is, LangGraph would file the step's tasks under
    new ids, apart from their stored writes: a finished task runs again, an answer keyed
    by the old id is dropped, the old question stays pending beside the new one."""
    renamed_now = set((call.stamp.renames or {}).values())
    if not renamed_now or not has_interrupt(head) or not _owned_elsewhere(call, head):
        return None
    waits = waiting_nodes(call.graph, head)
    named = {
        name
        for name, node in call.graph.nodes.items()
        for channel in node.triggers
        if channel_nodes(channel) & renamed_now
        and (name in waits or channel_nodes(channel) & waits)
    }
    if not (named or waits & renamed_now):
        return None
    answering: dict[str, Any] = {}
    if isinstance(input, Command):
        if input.update is not None or input.goto:
            return None
        answering = _given_to(call, head, input.resume)
    base = at_checkpoint(call.config, head.checkpoint["id"])
    everything = frozenset(call.graph.nodes)
    return Invocation(
        None, at_checkpoint(call.config, None), mark, keep=(base, everything), answering=answering
    )


def _claimed(
    call: ThreadCall, head: CheckpointTuple | None, resume: Invocation, took: str | None
) -> Invocation:
    """``resume``, claiming the head first when other code owns it (``_claim``): a head
    resumed where it is, not forked (``_forking``), waits on a question or a subgraph.
    What its tasks finish is this code's, though no checkpoint of the step is written
    while a question is still open or the subgraph runs."""
    if head is None or not _owned_elsewhere(call, head):
        return resume
    writes = claim_writes(call.stamp.id, took, head.pending_writes or ())
    return resume._replace(claim=(head.config, writes))


def _owned_elsewhere(call: ThreadCall, head: CheckpointTuple) -> bool:
    """Whether other code owns the head: it claimed the head last, or wrote it."""
    holder = last_writer(read_marks(head.metadata)[0], head.pending_writes or ())
    return holder not in (None, call.stamp.id)


def takes_head(call: ThreadCall, decision: ResumePlan | None, head: CheckpointTuple | None) -> bool:
    """Whether resuming ``head`` as ``decision`` says first makes it this code's: a fork
    of a crashed head (``_forking``) or a claim on a waiting one (``_claimed``) that other
    code owns. Only ``run`` writes them: a served call doing so goes through it."""
    if head is None or decision is None or decision.kind is not PlanKind.CONTINUE:
        return False
    if not decision.next_nodes and not has_interrupt(head):
        return False  # complete: nothing is resumed
    return _forking(call, head, "") is not None or _owned_elsewhere(call, head)


def _resuming(
    call: ThreadCall,
    decision: ResumePlan,
    input: Any,
    asking: bool,
    mark: str,
    said: list[str],
) -> Invocation:
    """Resume the incomplete head: with the answer given, unless it was sent to a question
    asked again after a change and not stored yet (then ``said`` says so)."""
    answer = isinstance(input, Command)
    if answer and asking and not call.resume.reanswer:
        said.append(
            "the question asked again after a change was not stored yet: it is asked "
            "now, and the answer given, sent to the old question, is set aside "
            "(ResumePolicy(reanswer=True) would apply it)"
        )
        answer = False
    return Invocation(input if answer else None, call.config, mark)


def _misread_turn(
    call: ThreadCall,
    decision: ResumePlan,
    head: CheckpointTuple | None,
    said: list[str],
) -> None:
    """Say so (in ``said``) when a new turn starts from stored values that do not read
    back as their declared types; in strict mode, refuse it."""
    found = turn_misread(call.graph.neograph_ext_revival, head)
    if not found:
        return
    why = (
        "a new turn starts from stored values that do not read back as their declared "
        f"types ({'; '.join(found[ch] for ch in sorted(found))}); "
        "a node of the turn that reads one before writing it gets the plain data. No rewind "
        "can rebuild them: the turn reads them from the checkpoint. Fix: define the class "
        "at the top level of an importable module (or allow it on the saver's msgpack "
        "allowlist); neograph_ext.unrevivable_types(graph) names it"
    )
    if call.resume.on_change == "raise":
        raise CheckpointSchemaError(f"thread {decision.thread_id!r}: {why}", decision)
    said.append(why)


def _source(decision: ResumePlan, head: CheckpointTuple | None) -> str | None:
    """The head whose later turns the call replays, if it replays any."""
    if not decision.replayed:
        return None
    if decision.kind is PlanKind.REWIND or head is None:
        return decision.head_id
    return read_marks(head.metadata)[1].replaying


def _replay_finished(
    call: ThreadCall,
    decision: ResumePlan,
    input: Any,
    asking: bool,
    complete: bool,
    here: str,
    source: str | None,
    said: list[str],
) -> tuple[Invocation, ...]:
    """A replay cut short by a kill, or stopped at a question: finish the head's turn
    (with the answer given, unless the head is complete), then the turns still owed."""
    said.append(
        f"a replay of the turns of checkpoint {source} was cut short; "
        f"{len(decision.replayed)} turn(s) still owed are replayed"
    )
    steps = () if complete else (_resuming(call, decision, input, asking, here, said),)
    return steps + _replays(call, decision, source)


def _replays(call: ThreadCall, decision: ResumePlan, source: str | None) -> tuple[Invocation, ...]:
    """One invocation per turn to replay, each due once the thread is complete."""
    return tuple(
        Invocation(
            ReplayInput(at_checkpoint(call.config, cp), source),
            at_checkpoint(call.config, None),
            "",
            Due.COMPLETE,
        )
        for cp in decision.replayed
    )


def _unshared(value: Any) -> Any:
    """The input LangGraph is handed: a copy, since its reducers change what they are
    given in place (``add_messages`` sets each message's missing ``id``), and the caller's
    input, never mutated, must keep its digest: the same input asks for the stored result.
    An input that cannot be copied is handed over as given."""
    try:
        return copy.deepcopy(value)
    except (TypeError, copy.Error):
        return value


def _turn(
    call: ThreadCall,
    decision: ResumePlan,
    input: Any,
    given: str | None,
    when: Due = Due.ALWAYS,
    kind: str | None = None,
) -> Invocation:
    """A new turn on the thread's newest checkpoint, marked with the input's digest (and
    ``kind``, else the decision's)."""
    mark = encode_run(call.stamp, kind or decision.kind, given, took_from=decision.taken_from)
    return Invocation(input, at_checkpoint(call.config, None), mark, when)


def _asking(call: ThreadCall, head: CheckpointTuple | None) -> bool:
    """Whether ``head`` was written by a run asking a question again that is not
    stored yet (a process killed before it was): the question is still owed."""
    if head is None or read_marks(head.metadata)[1].decision != ASK_AGAIN:
        return False
    return not is_paused(call.graph, head)


def durable(kwargs: Mapping[str, Any], graph: Pregel[Any, Any, Any, Any]) -> dict[str, Any]:
    """``invoke``'s keywords as ``run`` passes them: ``durability="sync"`` unless given,
    or unless a subgraph cannot write under it (``unsaved_subgraph``): then LangGraph's
    default."""
    if "durability" in kwargs or unsaved_subgraph(graph):
        return dict(kwargs)
    return {"durability": "sync", **kwargs}


def is_due(when: Due, graph: Pregel[Any, Any, Any, Any], head: CheckpointTuple | None) -> bool:
    """Whether a follow-up invocation applies to the thread as the first one left it."""
    if head is None:
        return False
    if when is Due.INTERRUPTED:
        return is_paused(graph, head)
    return not has_interrupt(head) and not waiting_nodes(graph, head)


def _carrying(decision: ResumePlan) -> str:
    if not decision.migrated:
        return ""
    channels = ", ".join(sorted(decision.migrated))
    return f" (on_change='rewind' keeps or migrates the stored values of: {channels})"


def _unverified(decision: ResumePlan) -> str:
    notes = "\n".join(f"    {note}" for note in decision.notes)
    return (
        f"thread {decision.thread_id!r}: {len(decision.notes)} checkpoint(s) of it cannot "
        "be verified (written without a stamp: by plain LangGraph, or through a saver that "
        "drops it; or by a graph a node called that no stamp describes), so nothing can be "
        f"compared with the current graph:\n{notes}\n"
        "To proceed: run with ResumePolicy(on_unverified='resume') to resume it as LangGraph "
        "would, neograph_ext.accept(graph, config) to record that you checked it by hand, or "
        "start a new thread_id."
    )


def _message(decision: ResumePlan, ways: str) -> str:
    changed = "\n".join(
        [change.describe() for change in decision.changes]
        + [inside.describe() for inside in decision.inside]
    )
    nodes = ", ".join(sorted(decision.invalidated_nodes)) or "none"
    why = "were written by code that differs from the current graph (types, versions or edges)"
    if all(change.reason is ChangeReason.STORED_VALUE for change in decision.changes):
        why = "hold values that do not read back as their declared types"
    return (
        f"thread {decision.thread_id!r}: checkpoints {why}. Invalidated nodes: {nodes}.\n"
        f"{changed}\nTo proceed: {ways}."
    )
