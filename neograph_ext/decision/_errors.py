"""The exceptions neograph-ext raises.

Every error derives from one root so callers can catch the library as a whole::

    NeographExtError
    ├── BudgetExceededError     the next superstep or model call would pass a cap of the
    │                           graph's ``Budget``; the thread stays resumable
    ├── CheckpointSchemaError   (also a ValueError) a resume would reuse checkpoints written
    │                           by other types
    ├── StampLostError          the checkpointer does not keep the metadata LangGraph
    │                           passes it, so the stamp would be lost from every checkpoint
    ├── ThreadBusyError         another process holds the thread's lock
    ├── ThreadSupersededError   (also a ValueError) newer code owns the thread (a rolling
    │                           deploy): older code leaves it alone unless told to take
    │                           it over
    ├── UnreadableCheckpointError
    │                           the thread's stored checkpoints cannot be decoded, or the
    │                           one to resume from has metadata LangGraph cannot resume from
    ├── UnresolvedTypeError     (also a TypeError) a forward reference cannot be resolved;
    │                           compile() catches it and leaves that type unfingerprinted
    ├── WriteReadbackError      (also a ValueError) with ``WriteChecks(readback=True)``: a
    │                           node wrote a value that would not read back as written
    ├── GraphError              the graph given cannot be used (not compiled by neograph-ext,
    │                           no checkpointer, no thread_id, a reference that cannot be
    │                           loaded, or, in strict mode, a declared type whose values
    │                           cannot read back from a checkpoint), or options that
    │                           contradict each other (a 0.2 keyword with its policy)
    └── FixtureError            a thread fixture cannot be written or read (not a fixture,
                                a format version this release does not read, malformed)

Third-party errors are translated at the boundary with ``raise ... from exc``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from neograph_ext.decision._budget import Spend
    from neograph_ext.decision._decision import ResumePlan

__all__ = [
    "BudgetExceededError",
    "CheckpointSchemaError",
    "FixtureError",
    "GraphError",
    "NeographExtError",
    "StampLostError",
    "ThreadBusyError",
    "ThreadSupersededError",
    "UnreadableCheckpointError",
    "UnresolvedTypeError",
    "WriteReadbackError",
]


class NeographExtError(Exception):
    """Root of every error raised by neograph-ext."""


class CheckpointSchemaError(NeographExtError, ValueError):
    """The thread's checkpoints were written by code whose types differ from the current ones.

    A ``ValueError`` too, so a LangGraph server passes its message on to clients (it
    replaces the message of an exception type it does not know).

    Raised before any node runs and before anything is written: in strict mode
    (``ResumePolicy(on_change="raise")``) whenever a resume would rewind, and in every mode when a
    rewind cannot be done safely (the change lies in an earlier turn of a multi-turn
    thread, or the thread has no per-step checkpoints).

    Attributes:
        invalidated_nodes: Names of the nodes whose stored results no longer match.
        plan: The full decision, with each change and its field-level diff.
    """

    def __init__(self, message: str, plan: ResumePlan) -> None:
        super().__init__(message)
        self.plan = plan
        self.invalidated_nodes: frozenset[str] = plan.invalidated_nodes


class StampLostError(NeographExtError):
    """The checkpointer loses the stamp: it does not keep the config metadata LangGraph
    passes to ``put`` in the checkpoints it stores.

    Found on the first write of a stamped graph's ``run`` (or twin) to a saver, once per
    saver class and process, before any node runs. Every thread on such a saver would
    plan as ``unverified``, and strict mode could not catch a change. The message names
    the saver class and the way out, ``WriteChecks(saver=False)`` among them.
    """


class ThreadBusyError(NeographExtError):
    """Another process is resuming the same thread: at once with
    ``LockPolicy(on_busy="raise")``, else after waiting ``LockPolicy.timeout`` seconds."""


class ThreadSupersededError(NeographExtError, ValueError):
    """Newer code owns the thread: its workers wrote it last, and this code is older (the
    database stored this code's stamp first, or that code took the thread over from it).

    A ``ValueError`` too, so a LangGraph server passes its message on to clients, as for
    ``CheckpointSchemaError``.

    Raised before any node runs and before anything is written, when resuming would undo
    the newer code's work, so that old and new workers of a rolling deploy do not rewind
    each other's work in turn. The message names the owning stamp and how to roll back:
    ``ResumePolicy(take_over=True)``, or ``neograph-ext accept``.

    Attributes:
        owner: The stamp id of the code that owns the thread.
        plan: The ``superseded`` plan, with what this code would re-run.
    """

    def __init__(self, message: str, plan: ResumePlan) -> None:
        super().__init__(message)
        self.plan = plan
        self.owner: str | None = plan.owner


class GraphError(NeographExtError):
    """The graph, config or options given cannot be used; the message names the fix."""


class UnreadableCheckpointError(NeographExtError):
    """A thread's stored checkpoints cannot be read back, so the thread cannot be resumed.

    The saver failed to decode them (metadata that is not JSON, not UTF-8, or nested past
    what the decoder accepts), or the checkpoint to resume from has metadata LangGraph
    cannot resume from (not a mapping with an integer ``step``). Raised before any node
    runs and before anything is written; the message names the thread and the way out.
    """


class WriteReadbackError(NeographExtError, ValueError):
    """A node wrote a value that would not read back from the checkpoint as written.

    Raised only by graphs compiled with ``WriteChecks(readback=True)``, as the step's writes are
    saved and before they are: the step fails, naming the node, the channel and the type,
    instead of a later resume handing the next node something else (a plain ``dict``
    where a model was written).
    """


class UnresolvedTypeError(NeographExtError, TypeError):
    """A forward reference inside a type cannot be resolved, so it has no signature.

    Callers degrade gracefully: the type is left without a fingerprint.
    """


class FixtureError(NeographExtError):
    """A thread fixture (``export_threads``, ``read_fixtures``) cannot be written or read:
    not a fixture, of a format version this release does not read, or malformed. The
    message names the file or thread and the fix."""


class BudgetExceededError(NeographExtError):
    """The next superstep or model call would pass a cap of the graph's ``Budget``.

    Raised inside the run, before that superstep or call starts: the thread is left as a
    crash leaves it (the step that stopped is resumable), so compiling the graph with a
    larger cap and calling ``run`` again continues where it stopped.

    Attributes:
        thread_id: The thread.
        cap: The ``Budget`` field that would be passed (``max_supersteps``,
            ``max_model_calls`` or ``max_tokens``).
        limit: Its value.
        spent: What the thread (or, with ``per="turn"``, its current turn) has spent.
    """

    def __init__(self, message: str, thread_id: str, cap: str, limit: int, spent: Spend) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.cap = cap
        self.limit = limit
        self.spent = spent
