"""neograph-ext: schema-fingerprinted auto-resume for LangGraph.

``compile`` stamps the fingerprints of a graph's types into every checkpoint;
``run`` (and ``arun``, ``stream``, ``astream``) compares them on resume and rewinds a
thread to just before the earliest node whose types changed, keeping the work
upstream of it. ``plan`` explains what a resume would do without doing it;
``history`` reads a thread's lineage, each step compared with the graph, and
``list_threads`` a database's threads.
"""

from neograph_ext._accept import aaccept, accept
from neograph_ext._changes import ChangeReason, NodeChange
from neograph_ext._checks import is_stamped, unrevivable_types
from neograph_ext._compile import compile
from neograph_ext._decision import PlanKind, ResumePlan, TaskStep
from neograph_ext._errors import (
    CheckpointSchemaError,
    GraphError,
    NeographExtError,
    StampLostError,
    ThreadBusyError,
    ThreadSupersededError,
    UnreadableCheckpointError,
    WriteReadbackError,
)
from neograph_ext._fingerprint import fingerprint_type
from neograph_ext._lineage import (
    History,
    HistoryEntry,
    StampStatus,
    ahistory,
    alist_threads,
    history,
    list_threads,
)
from neograph_ext._policy import LockPolicy, ResumePolicy
from neograph_ext._run import aplan, arun, astream, plan, run, stream
from neograph_ext._stamp_store import is_store_thread as is_reserved_thread

__all__ = [
    "ChangeReason",
    "CheckpointSchemaError",
    "GraphError",
    "History",
    "HistoryEntry",
    "LockPolicy",
    "NeographExtError",
    "NodeChange",
    "PlanKind",
    "ResumePlan",
    "ResumePolicy",
    "StampLostError",
    "StampStatus",
    "TaskStep",
    "ThreadBusyError",
    "ThreadSupersededError",
    "UnreadableCheckpointError",
    "WriteReadbackError",
    "aaccept",
    "accept",
    "ahistory",
    "alist_threads",
    "aplan",
    "arun",
    "astream",
    "compile",
    "fingerprint_type",
    "history",
    "is_reserved_thread",
    "is_stamped",
    "list_threads",
    "plan",
    "run",
    "stream",
    "unrevivable_types",
]
