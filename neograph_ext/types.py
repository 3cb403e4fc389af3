"""The records the public functions return, for annotations and ``isinstance``: what a
plan's steps and changes say, a thread's history, a survey of threads, a deploy's cost,
a prune's report.

As ``langgraph.types`` holds LangGraph's: nothing here is constructed by a caller.
"""

from neograph_ext._fleet import ThreadCheck
from neograph_ext._inventory import Inventory, StampThreads
from neograph_ext._lineage import History, HistoryEntry, StampStatus
from neograph_ext._public import publish
from neograph_ext._upgrade import ThreadUpgrade, UpgradeAction
from neograph_ext.decision._changes import ChangeReason, NodeChange
from neograph_ext.decision._decision import TaskStep
from neograph_ext.decision._deploy_cost import CostLine, DeployCost
from neograph_ext.storage._prune import DescriptionPruned, PruneReport, PruneSkip, ThreadPruned

__all__ = [
    "ChangeReason",
    "CostLine",
    "DeployCost",
    "DescriptionPruned",
    "History",
    "HistoryEntry",
    "Inventory",
    "NodeChange",
    "PruneReport",
    "PruneSkip",
    "StampStatus",
    "StampThreads",
    "TaskStep",
    "ThreadCheck",
    "ThreadPruned",
    "ThreadUpgrade",
    "UpgradeAction",
]
publish(__name__, globals(), __all__)
