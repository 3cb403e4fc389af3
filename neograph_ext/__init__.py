"""neograph-ext: schema-fingerprinted auto-resume for LangGraph.

``compile`` stamps the fingerprints of a graph's types into every checkpoint;
``run`` (and ``arun``, ``stream``, ``astream``) compares them on resume and rewinds a
thread to just before the earliest node whose types changed, keeping the work
upstream of it. ``plan`` explains what a resume would do without doing it.
"""

from neograph_ext._accept import aaccept, accept
from neograph_ext._changes import ChangeReason, NodeChange
from neograph_ext._errors import (
    CheckpointSchemaError,
    GraphError,
    NeographExtError,
    StampLostError,
    ThreadBusyError,
    UnreadableCheckpointError,
    WriteReadbackError,
)
from neograph_ext._fingerprint import fingerprint_type
from neograph_ext._graph import compile
from neograph_ext._plan import PlanKind, ResumePlan, TaskStep
from neograph_ext._policy import LockPolicy, ResumePolicy
from neograph_ext._run import aplan, arun, astream, plan, run, stream
from neograph_ext._stamp_store import is_store_thread as is_reserved_thread

__all__ = [
    "ChangeReason",
    "CheckpointSchemaError",
    "GraphError",
    "LockPolicy",
    "NeographExtError",
    "NodeChange",
    "PlanKind",
    "ResumePlan",
    "ResumePolicy",
    "StampLostError",
    "TaskStep",
    "ThreadBusyError",
    "UnreadableCheckpointError",
    "WriteReadbackError",
    "aaccept",
    "accept",
    "aplan",
    "arun",
    "astream",
    "compile",
    "fingerprint_type",
    "is_reserved_thread",
    "plan",
    "run",
    "stream",
]
