"""When a thread's stored checkpoints cannot be read: one error naming the thread.

Rules:
- A saver that cannot decode what it stored (``reading``), or a head whose metadata
  LangGraph cannot resume from (``resumable``), is one ``UnreadableCheckpointError``
  naming the thread, the cause and the way out; never the saver's own exception, nor
  LangGraph's error that names neither.
- Nothing is repaired or skipped: the thread's rows are left as they are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from langgraph.checkpoint.base import CheckpointTuple

from neograph_ext.decision._errors import UnreadableCheckpointError

__all__ = ["reading", "resumable"]


class reading:
    """Translate a saver's failure to decode the thread's stored checkpoints.

    Savers decode metadata while they list or get checkpoints, and raise whatever their
    decoder raises; wrap every call that reads (and consumes) them. A class, not a
    generator: every resume enters one.

    Args:
        thread_id: The thread being read, named in the error.

    Raises:
        UnreadableCheckpointError: The saver could not decode a stored checkpoint.
    """

    __slots__ = ("_thread_id",)

    def __init__(self, thread_id: str) -> None:
        self._thread_id = thread_id

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        if isinstance(exc, RecursionError | UnicodeDecodeError | json.JSONDecodeError):
            why = f"the saver cannot decode them ({type(exc).__name__}: {str(exc)[:200]})"
            raise UnreadableCheckpointError(_unreadable(self._thread_id, why)) from exc


def resumable(head: CheckpointTuple | None, thread_id: str) -> CheckpointTuple | None:
    """The checkpoint to resume from, after checking that LangGraph can resume from it.

    LangGraph reads the step counter from that checkpoint's metadata and fails on
    anything else with an error that names neither the thread nor the cause.

    Args:
        head: The checkpoint a resume would start from, if any.
        thread_id: The thread, named in the error.

    Raises:
        UnreadableCheckpointError: Its metadata is not a mapping with an integer ``step``.
    """
    if head is None:
        return None
    metadata = head.metadata
    step = metadata.get("step") if isinstance(metadata, Mapping) else None
    if not isinstance(step, int) or isinstance(step, bool):
        found = f"a {type(metadata).__name__}" + (
            " without an integer step" if isinstance(metadata, Mapping) else ""
        )
        raise UnreadableCheckpointError(
            _unreadable(
                thread_id,
                f"checkpoint {head.checkpoint['id']} has metadata LangGraph cannot resume "
                f"from ({found}, not a mapping with an integer step)",
            )
        )
    return head


def _unreadable(thread_id: str, why: str) -> str:
    return (
        f"thread {thread_id!r}: its stored checkpoints cannot be read: {why}. Inspect the "
        "thread's rows in the checkpoint database, or start over under a new thread_id"
    )
