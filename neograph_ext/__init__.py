"""neograph-ext: schema-fingerprinted auto-resume for LangGraph.

``compile`` stamps the fingerprints of a graph's types into every checkpoint;
``run`` (and ``arun``, ``stream``, ``astream``) compares them on resume and rewinds a
thread to just before the earliest node whose types changed, keeping the work
upstream of it. ``plan`` explains what a resume would do without doing it;
``history`` reads a thread's lineage, each step compared with the graph, and
``list_threads`` a database's threads; ``prune`` removes what rewinds left behind.
``export_threads`` writes threads as fixtures that ``neograph_ext.testing`` plans new
code against, offline.
"""

from importlib.metadata import version as _version

from neograph_ext._accept import aaccept, accept
from neograph_ext._attach import AutoResume, WriteChecks
from neograph_ext._budget import Budget, Ledger, Spend
from neograph_ext._budget_read import aledger, ledger
from neograph_ext._changes import ChangeReason, NodeChange
from neograph_ext._checks import (
    declared_classes,
    is_stamped,
    stale_values,
    unrevivable_types,
)
from neograph_ext._compile import compile
from neograph_ext._decision import PlanKind, ResumePlan, TaskStep
from neograph_ext._errors import (
    BudgetExceededError,
    CheckpointSchemaError,
    FixtureError,
    GraphError,
    NeographExtError,
    StampLostError,
    ThreadBusyError,
    ThreadSupersededError,
    UnreadableCheckpointError,
    WriteReadbackError,
)
from neograph_ext._export import export_threads
from neograph_ext._fingerprint import fingerprint_type
from neograph_ext._fixtures import ThreadFixture, read_fixtures
from neograph_ext._fleet import ThreadCheck, acheck_threads, check_threads
from neograph_ext._inventory import Inventory, StampThreads, inventory
from neograph_ext._lineage import (
    History,
    HistoryEntry,
    StampStatus,
    ahistory,
    alist_threads,
    history,
    list_threads,
)
from neograph_ext._offline import plan_fixture
from neograph_ext._policy import LockPolicy, ResumePolicy
from neograph_ext._prune import DescriptionPruned, PruneReport, PruneSkip, ThreadPruned
from neograph_ext._pruning import aprune, prune
from neograph_ext._run import aplan, arun, astream, plan, run, stream
from neograph_ext._stamp_store import is_store_thread as is_reserved_thread
from neograph_ext._telemetry import Telemetry

__version__: str = _version("neograph-ext")
"""The installed distribution's version: pyproject.toml is its one source."""

__all__ = [
    "AutoResume",
    "Budget",
    "BudgetExceededError",
    "ChangeReason",
    "CheckpointSchemaError",
    "DescriptionPruned",
    "FixtureError",
    "GraphError",
    "History",
    "HistoryEntry",
    "Inventory",
    "Ledger",
    "LockPolicy",
    "NeographExtError",
    "NodeChange",
    "PlanKind",
    "PruneReport",
    "PruneSkip",
    "ResumePlan",
    "ResumePolicy",
    "Spend",
    "StampLostError",
    "StampStatus",
    "StampThreads",
    "TaskStep",
    "Telemetry",
    "ThreadBusyError",
    "ThreadCheck",
    "ThreadFixture",
    "ThreadPruned",
    "ThreadSupersededError",
    "UnreadableCheckpointError",
    "WriteChecks",
    "WriteReadbackError",
    "aaccept",
    "accept",
    "acheck_threads",
    "ahistory",
    "aledger",
    "alist_threads",
    "aplan",
    "aprune",
    "arun",
    "astream",
    "check_threads",
    "compile",
    "declared_classes",
    "export_threads",
    "fingerprint_type",
    "history",
    "inventory",
    "is_reserved_thread",
    "is_stamped",
    "ledger",
    "list_threads",
    "plan",
    "plan_fixture",
    "prune",
    "read_fixtures",
    "run",
    "stale_values",
    "stream",
    "unrevivable_types",
]
