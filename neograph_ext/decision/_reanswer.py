"""What a rewind answers again (``ResumePolicy(reanswer=True)``): each node the rewind
re-runs gets every answer it was given, in the order it asked, and the node whose
question the thread waits on the answer given now too, each applied to its question of
the same position once the rewind asks it again. A question asked again has a new id (it
hashes the new task's), so an answer keyed by the old id is matched by node and
position, never by the id.

Rules:
- I/O-free: ``reanswers`` reads the head before the rewind; ``reanswering`` is a flow
  (``_flow``) that reads the branch the rewind forks away from for the answers given
  along it, then answers each question as the rewind asks it (``command``), telling
  questions by ``open_questions``, at most once per answer.
- An answer that cannot be matched safely (a subgraph's question, two waiting tasks of
  one node) is never sent to a question it was not given to: an answer keyed by id is
  then set aside, and ``reanswers`` says so by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Command

from neograph_ext.decision._head_state import has_interrupt
from neograph_ext.decision._langgraph_questions import answered, by_interrupt_id, open_questions
from neograph_ext.decision._operations import Flow, Invoke, ReadTuple

__all__ = ["Reanswer", "reanswering", "reanswers"]


class Reanswer(NamedTuple):
    """The answers to send once the rewind asked again: one per node and question."""

    answers: Mapping[str, tuple[Any, ...]]
    """Per node whose question the thread waits on, the answers to its questions, in
    the order it asks them."""
    branch: RunnableConfig | None = None
    """The head the rewind forks away from: its checkpoints back to ``until`` hold the
    answers the nodes the rewind re-runs were given (``_earlier``)."""
    until: str | None = None
    """The checkpoint the rewind forks from."""

    def command(self, nodes: Iterable[str], head: CheckpointTuple) -> Command[Any] | None:
        """The answers due to the questions ``head`` waits on, keyed by their new ids;
        None when none is due (the node asks a question it was never given an answer to,
        which ``run`` then returns)."""
        resume = {
            q.id: self.answers[q.node][len(q.answers)]
            for q in open_questions(nodes, head.pending_writes or ()) or ()
            if len(q.answers) < len(self.answers.get(q.node, ()))
        }
        return Command(resume=resume) if resume else None


def reanswers(
    nodes: Iterable[str], head: CheckpointTuple, input: Any, until: str | None
) -> tuple[tuple[Any, ...], str | None]:
    """What to send once a rewind of ``head`` to ``until`` asked again, given ``input``
    (None, or the ``Command`` sent): a ``Reanswer``; ``input`` itself when the head waits
    on a breakpoint alone or ``input`` does more than answer; nothing when the answer is
    set aside. And why it is, if it is."""
    questions = open_questions(nodes, head.pending_writes or ())
    resume: Any = input.resume if isinstance(input, Command) else None
    keyed = by_interrupt_id(resume)
    if isinstance(input, Command) and input != Command(resume=resume):
        return (input,), None
    if questions is None:
        # The question is a subgraph's or a node's this code no longer has: after the
        # rewind, the first question asked may be another node's, which must not take it.
        if resume is None:
            return (input,), None
        if keyed:
            return (), _set_aside(sorted(resume), "the question it answered cannot be told")
        return (), (
            "the answer given is set aside: the question it answered is a subgraph's or "
            "that of a node this code no longer has, so it is not applied after the "
            "rewind to whichever question is asked first"
        )
    if len({q.node for q in questions}) < len(questions):
        if keyed:
            return (), _set_aside(sorted(resume), "the question it answered cannot be told")
        return (input,), None
    if not questions and not has_interrupt(head):
        return (input,), None  # a breakpoint alone: ``None`` goes past it
    given: dict[str, Any] = {}
    said = None
    if keyed:
        nodes_of = {q.id: q.node for q in questions}
        given = {nodes_of[key]: value for key, value in resume.items() if key in nodes_of}
        unknown = sorted(resume.keys() - nodes_of.keys())
        if unknown:
            said = _set_aside(unknown, "the thread waits on no question of that id")
    elif resume is not None:
        if len(questions) > 1:
            return (input,), None  # LangGraph's own error: several questions wait
        # None open: a task that failed after its answers, which are stored, still lists
        # its last question; the answer given to it again is LangGraph's to ignore.
        given = {questions[0].node: resume} if questions else {}
    answers = {
        q.node: (*q.answers, *([given[q.node]] if q.node in given else [])) for q in questions
    }
    kept = {node: found for node, found in answers.items() if found}
    return (Reanswer(kept, head.config, until),), said


def reanswering(
    sent: Reanswer,
    nodes: Iterable[str],
    config: RunnableConfig,
    mark: str,
    kwargs: Mapping[str, Any],
) -> Flow[tuple[Any, ...]]:
    """Send ``sent``'s answers as the rewind asks again, one invocation per question
    answered, with the answers the branch forked away from gave the nodes it re-runs;
    sends back the last invocation's result, if one ran."""
    nodes = tuple(nodes)
    answers = {**(yield from _earlier(sent, nodes)), **sent.answers}
    due = sent._replace(answers=answers)
    result: tuple[Any, ...] = ()
    now = yield ReadTuple(config)
    for _ in range(sum(map(len, answers.values()))):
        command = due.command(nodes, now) if now is not None else None
        if command is None:
            break
        result = ((yield Invoke(command, config, mark, kwargs)),)
        now = yield ReadTuple(config)
    return result


def _earlier(sent: Reanswer, nodes: tuple[str, ...]) -> Flow[dict[str, tuple[Any, ...]]]:
    """The answers each node was given along the branch, from its head back to the
    checkpoint the rewind forks from; a node asked at two of them is left out."""
    found: dict[str, tuple[Any, ...]] = {}
    twice: set[str] = set()
    config = sent.branch
    while config is not None:
        tup = yield ReadTuple(config)
        if tup is None:
            break
        for node, given in answered(nodes, tup.pending_writes or ()).items():
            if node in found:
                twice.add(node)
            found.setdefault(node, given)
        if tup.checkpoint["id"] == sent.until:
            break
        config = tup.parent_config
    return {node: given for node, given in found.items() if node not in twice}


def _set_aside(ids: list[str], why: str) -> str:
    return (
        f"the answer keyed by interrupt id {', '.join(ids)} is set aside: {why}, so it "
        "is not applied after the rewind; the question is asked again"
    )
