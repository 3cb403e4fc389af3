"""What a rewind answers again (``ResumePolicy(reanswer=True)``): each node whose question
the thread waits on gets every answer it was given, in the order it asked, and the answer
given now, each applied to its question of the same position once the rewind asks it
again. A question asked again has a new id (it hashes the new task's), so an answer keyed
by the old id is matched by node and position, never by the id.

Rules:
- Pure: ``reanswers`` reads the head before the rewind, ``command`` the newest
  checkpoint once the rewind asked again; both tell questions by ``open_questions``.
- An answer that cannot be matched safely (a subgraph's question, two waiting tasks of
  one node) is never sent to a question it was not given to: an answer keyed by id is
  then set aside, and ``reanswers`` says so by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.types import Command

from neograph_ext._langgraph_questions import by_interrupt_id, open_questions

__all__ = ["Reanswer", "reanswers"]


class Reanswer(NamedTuple):
    """An answer to send once the rewind asked again: one per node and question."""

    answers: Mapping[str, tuple[Any, ...]]
    """Per node, the answers to its questions, in the order it asks them."""

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
    nodes: Iterable[str], head: CheckpointTuple, input: Any
) -> tuple[tuple[Any, ...], str | None]:
    """What to send once a rewind of ``head`` asked again, given ``input`` (None, or the
    ``Command`` sent): a ``Reanswer``; ``input`` itself when the head waits on a
    breakpoint alone or ``input`` does more than answer; nothing when the answer is set
    aside. And why it is, if it is."""
    questions = open_questions(nodes, head.pending_writes or ())
    resume: Any = input.resume if isinstance(input, Command) else None
    keyed = by_interrupt_id(resume)
    if isinstance(input, Command) and input != Command(resume=resume):
        return (input,), None
    if questions is None or len({q.node for q in questions}) < len(questions):
        if keyed:
            return (), _set_aside(sorted(resume), "the question it answered cannot be told")
        return (input,), None
    if not questions:
        return (input,), None
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
        given = {questions[0].node: resume}
    answers = {
        q.node: (*q.answers, *([given[q.node]] if q.node in given else [])) for q in questions
    }
    return (Reanswer({node: found for node, found in answers.items() if found}),), said


def _set_aside(ids: list[str], why: str) -> str:
    return (
        f"the answer keyed by interrupt id {', '.join(ids)} is set aside: {why}, so it "
        "is not applied after the rewind; the question is asked again"
    )
