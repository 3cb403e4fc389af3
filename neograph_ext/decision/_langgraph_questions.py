"""Which questions (``interrupt()``s) a checkpoint waits on, and what answered them: read
from its pending writes, as LangGraph files them.

Rules:
- Read from LangGraph's source and checked on langgraph 1.2.24 (checkpoint 4.3.2):
  ``types.interrupt`` and ``types._interrupt_id``, ``pregel/_algo.py`` (``_scratchpad``).
  A node's task files the answers it was given as one ``__resume__`` write, the list of
  them in the order its ``interrupt()`` calls asked, and its open question as an
  ``__interrupt__`` write; the question's id hashes the task's namespace
  (``<node>:<task id>`` at the top level) and how many answers the task already has.
  ``tests/unit/test_langgraph_questions.py`` fails loudly when any of it changes.
- A question is told by recomputing its id from a node name, never guessed: one asked
  inside a subgraph, or under another LangGraph's ids, matches no node and is unknown.
- Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from xxhash import xxh3_128_hexdigest

from neograph_ext.decision._langgraph import NULL_TASK

__all__ = ["RESUME", "Question", "answered", "by_interrupt_id", "open_questions"]

RESUME = "__resume__"
_INTERRUPT = "__interrupt__"
_HEX32 = re.compile(r"[0-9a-f]{32}")


class Question(NamedTuple):
    """An ``interrupt()`` a checkpoint waits on."""

    id: str
    """Its interrupt id: what ``Command(resume={id: value})`` answers."""
    node: str
    """The node whose task asks it."""
    answers: tuple[Any, ...]
    """The answers its task was given before it, in order: it is the task's question
    ``len(answers)``."""


def open_questions(
    nodes: Iterable[str], writes: Sequence[tuple[str, str, Any]]
) -> tuple[Question, ...] | None:
    """The questions the checkpoint whose pending writes are ``writes`` waits on, one per
    waiting task; None when one of them matches no node of ``nodes`` (a subgraph's, or
    ids LangGraph derives otherwise) or a task waits on more than one."""
    channels: dict[str, set[str]] = {}
    answered: dict[str, tuple[Any, ...]] = {}
    asked: dict[str, list[Any]] = {}
    for task, channel, value in writes:
        channels.setdefault(task, set()).add(channel)
        if channel == RESUME:
            answered[task] = tuple(value) if isinstance(value, list) else (value,)
        elif channel == _INTERRUPT:
            asked.setdefault(task, []).extend(value if isinstance(value, list | tuple) else ())
    names = sorted(nodes)
    found: list[Question] = []
    for task, interrupts in asked.items():
        if channels[task] - {RESUME, _INTERRUPT}:
            continue  # the task finished (or failed) after its questions were answered
        answers = answered.get(task, ())
        ids = {_interrupt_id(f"{name}:{task}", len(answers)): name for name in names}
        known = [ids.get(str(getattr(i, "id", ""))) for i in interrupts]
        if len(known) != 1 or known[0] is None:
            return None
        found.append(Question(interrupts[0].id, known[0], answers))
    return tuple(found)


def answered(
    nodes: Iterable[str], writes: Sequence[tuple[str, str, Any]]
) -> dict[str, tuple[Any, ...]]:
    """Per node, the answers its task among ``writes`` was given, in order, whether the
    task finished, failed or waits on its next question; a node with several such tasks
    is left out (which answers belong to which is unknown)."""
    given: dict[str, tuple[Any, ...]] = {}
    asked: dict[str, Any] = {}
    finished: set[str] = set()
    bare: tuple[Any, ...] = ()
    for task, channel, value in writes:
        if channel == RESUME and task == NULL_TASK:
            bare = (value,)
        elif channel == RESUME:
            given[task] = tuple(value) if isinstance(value, list) else (value,)
        elif channel == _INTERRUPT and isinstance(value, list | tuple) and value:
            asked[task] = value[-1]
        elif not channel.startswith("__"):
            finished.add(task)
    names = sorted(nodes)
    found: dict[str, list[tuple[Any, ...]]] = {}
    for task, answers in given.items():
        last = str(getattr(asked.get(task), "id", ""))
        for name in names:
            ns = f"{name}:{task}"
            if last == _interrupt_id(ns, len(answers) - 1):
                found.setdefault(name, []).append(answers)
            elif last == _interrupt_id(ns, len(answers)):
                # Its last question open, or answered though its answers were not
                # stored again: SQLite keeps the first ``__resume__`` write of a task
                # that later finishes. A bare answer is the step's input, which holds
                # the last bare one given; equal to an answer stored, it may be that
                # one, the last answer keyed by id and lost: the answers are unknown.
                if task not in finished:
                    found.setdefault(name, []).append(answers)
                elif bare and bare[0] not in answers:
                    found.setdefault(name, []).append((*answers, *bare))
    return {name: each[0] for name, each in found.items() if len(each) == 1}


def _interrupt_id(namespace: str, answered: int) -> str:
    """``types._interrupt_id``: the id of a task's question once it has ``answered``."""
    return xxh3_128_hexdigest((f"{namespace}|{answered}" if answered else namespace).encode())


def by_interrupt_id(resume: object) -> bool:
    """Whether a ``Command(resume=...)`` value answers by interrupt id, as LangGraph reads
    it (``is_xxh3_128_hexdigest``): a dict whose keys are all interrupt ids."""
    return (
        isinstance(resume, dict)
        and bool(resume)
        and all(isinstance(k, str) and _HEX32.fullmatch(k) for k in resume)
    )
