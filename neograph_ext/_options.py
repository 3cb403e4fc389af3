"""A call's options, as ``run`` documents them: read by the flow and the drivers."""

from __future__ import annotations

from typing import NamedTuple

from neograph_ext._lock import OnBusy

__all__ = ["Options"]


class Options(NamedTuple):
    """What ``run``'s keywords ask for."""

    auto_resume: bool = True
    """False: strict; a change raises instead of rewinding or migrating."""
    reanswer: bool = False
    """Apply the answer given to a question asked again after a rewind."""
    replay_turns: bool = False
    """Rewind into an earlier turn and replay the later turns' inputs."""
    strict_unverified: bool = False
    """Raise instead of resuming a thread whose checkpoints cannot be verified."""
    on_busy: OnBusy = "wait"
    """When another process holds the thread's lock: wait for it, or raise."""
    lock_timeout: float = 300.0
    """Seconds to wait for the thread's lock."""
