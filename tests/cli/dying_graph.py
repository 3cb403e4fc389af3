"""``releases.current`` for ``--jobs`` tests in which one process of the pool dies.

Imported by a process of the pool (a child of the command), this module arms a death
when ``DYING_AT`` says when and ``DYING_FLAG`` names a file that does not exist yet: the
first process to create it dies by ``SIGKILL``, as the kernel's out-of-memory killer
kills, the others work on. ``DYING_AT=start``: at once, while the process loads the
graph; ``DYING_AT=write``: at its first write to the database.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.graphs.releases import current

__all__ = ["current"]


def _chosen() -> bool:
    """Whether this process is the one to die: the first to create the flag file."""
    try:
        os.close(os.open(os.environ["DYING_FLAG"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _dying(method: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _chosen():
            os.kill(os.getpid(), signal.SIGKILL)
        return method(*args, **kwargs)

    return wrapper


_AT = os.environ.get("DYING_AT") if multiprocessing.parent_process() is not None else None
if _AT == "start" and _chosen():
    os.kill(os.getpid(), signal.SIGKILL)
elif _AT == "write":
    for _saver in (SqliteSaver, PostgresSaver):
        _saver.put = _dying(_saver.put)  # type: ignore[method-assign]
        _saver.put_writes = _dying(_saver.put_writes)  # type: ignore[method-assign]
