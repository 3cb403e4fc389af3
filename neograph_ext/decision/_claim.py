"""A claim: code resuming a waiting step that other code wrote makes the step its own.

Why a claim and not a fork, as a crashed step gets (``_steps._forking``): a step waiting
on several questions (or a node asking twice) that is answered in part writes no
checkpoint, so what the answered tasks finish stays on the other code's checkpoint,
unstamped. A fork would own them, but it gives the questions still open new ids (they
derive from the task ids, hence from the checkpoint id): an answer a client sends to an
id it holds would be set aside. The claim leaves the step, and its questions, where
they are. A step waiting on a subgraph is claimed too: a fork would leave the
subgraph's own checkpoints behind.

Rules:
- A claim is a pending write of the waiting checkpoint, under a task id no task has:
  LangGraph hands a task back its own writes only, and applies only its null task's.
- It is written before the resume, under the thread's lock: a resume that crashes
  leaves the step claimed all the same.
- The latest claim (the highest ``n``) names the step's owner (``_ownership``); the tasks
  that finished after it are the claimant's, those before it the checkpoint's own
  code's (``_lineage_facts.pending_changes``).
- Pure: pending writes in, a ``Claim`` or the writes to store out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from neograph_ext.decision._langgraph import NULL_TASK
from neograph_ext.decision._records import ClaimRecord, read_claim
from neograph_ext.decision._stamp import Stamp, StampRef

__all__ = [
    "CLAIM",
    "CONTROL",
    "Claim",
    "Write",
    "claim_writes",
    "claimant",
    "claims_of",
    "last_writer",
    "unclaimed",
]

CLAIM = "neograph-ext:claim"
"""The task id and the channel of a claim's write."""

CONTROL = frozenset({"__error__", "__interrupt__", "__resume__", "__scheduled__", CLAIM})
"""The channels of pending writes that are no task's output: LangGraph's errors,
questions, answers and scheduled tasks, and claims."""
_TOOK = 16
"""Hex digits of a stamp id a take-over's claim records (``RunMark.took_from``'s)."""


class Claim(NamedTuple):
    """One claim on a waiting checkpoint."""

    stamp: Stamp | StampRef
    """The claimant's stamp (a reference until its description is looked up)."""
    took_from: str | None
    """When the claimant took the thread over (``RunMark.took_from``): the first 16 hex
    digits of the stamp it took it from."""
    tasks: frozenset[str]
    """The ids of the tasks that finished after this claim and before the next one."""
    wrote: frozenset[str]
    """The state channels those tasks wrote."""


Write = tuple[str, str, Any]
"""A pending write: task id, channel, value."""


def claims_of(writes: Iterable[Write]) -> tuple[Claim, ...]:
    """The claims among a checkpoint's pending writes, oldest first."""
    writes = tuple(writes)
    found = _claims(writes)
    claims = []
    for index, value in enumerate(found):
        before = frozenset(value.before)
        until = frozenset(found[index + 1].before) if index + 1 < len(found) else None
        theirs = [
            (task, channel)
            for task, channel, _ in writes
            if task not in before and (until is None or task in until) and _output(task, channel)
        ]
        claims.append(
            Claim(
                StampRef(value.stamp),
                value.took_from,
                frozenset(task for task, _ in theirs),
                frozenset(channel for _, channel in theirs),
            )
        )
    return tuple(claims)


def claimant(writes: Iterable[Write]) -> str | None:
    """The stamp id of the latest claim among a checkpoint's pending writes, if any."""
    claims = _claims(tuple(writes))
    return claims[-1].stamp if claims else None


def last_writer(stamp: object, writes: Iterable[Write]) -> str | None:
    """The stamp id of the code that last wrote a checkpoint written under ``stamp`` (as
    ``_stamp.read_marks`` reads it) whose pending writes are ``writes``: its latest
    claimant, else that stamp's; None when neither names readable code."""
    found = claimant(writes)
    if found is None and isinstance(stamp, Stamp | StampRef):
        return stamp.id
    return found


def unclaimed(writes: Iterable[Write]) -> list[Write]:
    """The outputs of the tasks that finished before the first claim (all of them when
    there is none), the checkpoint's own code's, and the step's input (the null task's
    writes, ``Command(update=...)``)."""
    writes = tuple(writes)
    found = _claims(writes)
    before = frozenset(found[0].before) if found else None
    return [
        write
        for write in writes
        if write[1] not in CONTROL
        and (before is None or write[0] in before or write[0] == NULL_TASK)
    ]


def claim_writes(
    stamp: str, took_from: str | None, writes: Iterable[Write]
) -> list[tuple[str, Any]]:
    """The write claiming a checkpoint whose pending writes are ``writes`` for the code
    of stamp ``stamp`` (taking the thread over from the stamp ``took_from``, of which the
    first 16 hex digits are kept, as a run mark keeps them), stored under the task id
    ``CLAIM``."""
    writes = tuple(writes)
    claims = _claims(writes)
    value = {
        "stamp": stamp,
        "took_from": took_from[:_TOOK] if took_from is not None else None,
        "before": sorted({task for task, channel, _ in writes if _output(task, channel)}),
        "n": claims[-1].n + 1 if claims else 0,
    }
    return [(CLAIM, value)]


def _claims(writes: Sequence[Write]) -> list[ClaimRecord]:
    """The valid claims among ``writes`` (``_records``: others are ignored), oldest first."""
    found = [read_claim(v) for t, c, v in writes if t == CLAIM and c == CLAIM]
    return sorted((claim for claim in found if claim is not None), key=lambda claim: claim.n)


def _output(task: str, channel: str) -> bool:
    """Whether a pending write is a task's output (not a question, an answer, an error,
    a claim or the input)."""
    return task != NULL_TASK and channel not in CONTROL
