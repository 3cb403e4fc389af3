"""An ``@entrypoint`` thread's latest turn, as its lineage shows it: the calls its
base checkpoint holds and the stamps around it, what ``_calls.decide_calls`` judges.

Rules:
- Pure: records (``_history.lineage``, oldest first) and the finished calls the read
  side found on the base (``_langgraph_calls``) in, an ``EntrypointTurn`` out.
- The base is the checkpoint the turn's calls wrote to (``turn_base``): the head while
  the turn runs; once it finished, the checkpoint before the one its entrypoint's step
  wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from neograph_ext.decision._history import Record
from neograph_ext.decision._lineage_facts import is_carrying_fork
from neograph_ext.decision._stamp import Stamp, StampRef, Unreadable

__all__ = ["EntrypointTurn", "TurnCall", "turn_base", "turn_of"]

_Seen = Stamp | StampRef | Unreadable | None


@dataclass(frozen=True)
class TurnCall:
    """One finished call of the turn."""

    index: int
    """Its position among the entrypoint's calls."""
    task: str | None
    """The task's name; None for a call no task seen matches."""
    misread: str | None = None
    """Why its cached result does not read back as the task's declared return type
    (``_misread.result_misread``), if it does not."""
    ran_under: Stamp | StampRef | None = None
    """The stamp of the code that claimed the base before the call finished
    (``_claim``), which ran it; None when the base's own code did."""
    matched: bool | None = True
    """Whether the code makes this call again at its position (``_call_order.judged``):
    True (the same task with the same arguments, or older code recorded no digest),
    False (another task, other arguments, or no call there), None (known only when
    the call is made)."""


@dataclass(frozen=True)
class EntrypointTurn:
    """The latest turn of an entrypoint thread, as the read side found it."""

    entrypoint: str
    """The entrypoint's name."""
    base_id: str
    """The checkpoint its calls wrote to (its input checkpoint, or a fork of it)."""
    base_step: int
    """That checkpoint's step."""
    base_stamp: _Seen
    """The stamp the base carries: the code its cached results are attributed to."""
    calls: tuple[TurnCall, ...]
    """Its finished calls, in call order."""
    ended: _Seen = None
    """For a finished turn: the stamp of the checkpoint it ended with."""
    complete: bool = False
    """Whether the turn finished (its head is the checkpoint after the base)."""
    previous: _Seen = None
    """The stamp of the checkpoint that saved the ``previous`` the turn started from."""
    earlier: bool = False
    """Whether an earlier turn saved that ``previous``."""
    first_turn: str | None = None
    """The input checkpoint of the thread's first turn (for a replay); None when it is
    not stored any more (``prune(keep_last=...)``): a replay from a later turn would
    start from the stale ``previous`` itself."""
    later_inputs: tuple[str, ...] = ()
    """The input checkpoints of the turns after the first, oldest first (for a replay)."""
    verified: frozenset[str] = frozenset()
    """The stamp ids checkpoints written after the base (or the base itself, a fork
    ``run`` wrote) were verified against (by ``run`` or ``accept``): verified against
    the current one, the turn is settled."""
    failed: frozenset[str] = frozenset()
    """The tasks whose call failed on the base and never finished: they run again."""
    made: tuple[str, ...] = ()
    """The tasks of the calls the code makes, in call order, as far as its code tells
    (``_call_order``): those at or after a rewind's cut run."""


def turn_base(records: Sequence[Record], *, complete: bool) -> str | None:
    """The checkpoint the latest turn's calls wrote to: the head while the turn runs;
    once it finished, the checkpoint before the one its entrypoint's step wrote (a fork
    ``accept`` made of that one comes after it)."""
    if not records:
        return None
    if not complete:
        return records[-1].checkpoint_id
    for index in range(len(records) - 1, 0, -1):
        if records[index].source == "loop":
            return records[index - 1].checkpoint_id
        if records[index].source == "input":
            break
    return records[-1].checkpoint_id


def turn_of(
    records: Sequence[Record],
    entrypoint: str,
    base: tuple[str, int],
    calls: tuple[TurnCall, ...],
    *,
    complete: bool,
    failed: frozenset[str] = frozenset(),
    made: tuple[str, ...] = (),
) -> EntrypointTurn:
    """The latest turn of an entrypoint thread, from its lineage (oldest first) and the
    finished calls on its base checkpoint ``base`` (id, step), and the tasks whose
    call failed there."""
    stamps = {record.checkpoint_id: record.stamp for record in records}
    after = [r.checkpoint_id for r in records].index(base[0]) + 1 if base[0] in stamps else 0
    if after and is_carrying_fork(records[after - 1]):
        # A fork ``run`` wrote of the turn (carrying its ``previous``, keeping calls) was
        # verified by that run, as the checkpoints after it are.
        after -= 1
    inputs = [i for i, record in enumerate(records) if record.source == "input"]
    last = inputs[-1] if inputs else 0
    # The thread's own first turn starts from no ``previous``: its checkpoint has no parent.
    started = bool(inputs) and inputs[0] == 0 and records[0].parent_id is None
    return EntrypointTurn(
        entrypoint,
        base[0],
        base[1],
        stamps.get(base[0]),
        calls,
        ended=records[-1].stamp if complete and records else None,
        complete=complete,
        previous=records[last - 1].stamp if last > 0 else None,
        earlier=last > 0,
        first_turn=records[0].checkpoint_id if started else None,
        later_inputs=tuple(records[i].checkpoint_id for i in inputs[1:]),
        verified=frozenset(r.verified for r in records[after:] if r.verified is not None),
        failed=failed,
        made=made,
    )
