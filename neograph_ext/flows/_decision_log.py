"""What a decision logs: its kind, and its notes as warnings.

Rules:
- A call logs its decision once, where it acts on it (``run``, a served call); ``plan``
  and ``check``, which only plan, log it at DEBUG (``logged(..., level=logging.DEBUG)``).
- An unverified thread's notes are logged once per thread and process (``WARNED``):
  its unstamped checkpoints stay in the lineage for good, and every later plan finds
  them again. That registry is process state by nature; it is held weakly per saver.
"""

from __future__ import annotations

import logging
import weakref
from collections import Counter
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from neograph_ext.decision._decision import PlanKind, ResumePlan, carried_as

__all__ = ["WARNED", "logged"]

logger = logging.getLogger("neograph_ext")


def logged(
    saver: BaseCheckpointSaver[Any],
    thread_id: str,
    decision: ResumePlan,
    warnings: tuple[str, ...] = (),
    *,
    level: int = logging.INFO,
) -> ResumePlan:
    """``decision``, logged: its kind at ``level``, its notes and ``warnings`` (what
    carrying it out meets) as warnings, each once (the notes of an unverified thread once
    per thread and process); below INFO, everything at ``level``."""
    if logger.isEnabledFor(level):  # the arguments are built only when logged
        _log_decision(thread_id, decision, level)
    said = (*decision.notes, *warnings)
    if level < logging.INFO:
        for note in dict.fromkeys(said):
            logger.log(level, "thread %r: %s", thread_id, note)
        return decision
    if decision.kind is PlanKind.UNVERIFIED:
        _warn_unverified(saver, thread_id, decision.notes)
        said = warnings
    for note in dict.fromkeys(said):
        logger.warning("thread %r: %s", thread_id, note)
    return decision


WARNED: weakref.WeakKeyDictionary[BaseCheckpointSaver[Any], set[str]] = weakref.WeakKeyDictionary()
"""Per saver, the threads whose unverified checkpoints were logged in this process."""


def _warn_unverified(
    saver: BaseCheckpointSaver[Any], thread_id: str, notes: tuple[str, ...]
) -> None:
    """One warning per thread and process for checkpoints that cannot be verified: they
    stay in the lineage for good, and every later plan finds them again."""
    warned = WARNED.setdefault(saver, set())
    if thread_id in warned:
        return
    warned.add(thread_id)
    reasons = Counter(note.split(": ", 1)[-1] for note in notes)
    logger.warning(
        "thread %r: %d checkpoint(s) cannot be verified (%s): they count as unchanged and "
        "the thread resumes as LangGraph would; logged once per thread and process",
        thread_id,
        len(notes),
        "; ".join(f"{why}: {count}" for why, count in reasons.items()),
    )


def _log_decision(thread_id: str, decision: ResumePlan, level: int) -> None:
    logger.log(
        level,
        "thread %r: %s%s%s%s",
        thread_id,
        decision.kind,
        f" from checkpoint {decision.checkpoint_id} (step {decision.step})"
        if decision.kind is PlanKind.REWIND
        else "",
        f", values {carried_as(decision)}: {', '.join(sorted(decision.migrated))}"
        if decision.migrated
        else "",
        f", invalidated: {', '.join(sorted(decision.invalidated_nodes))}"
        if decision.invalidated_nodes
        else "",
    )
