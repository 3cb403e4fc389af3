"""Where the time of a call goes: a cProfile call tree, a few levels deep, as markdown.

Used for every comparison that misses its target, on both sides of it, so the
results explain themselves. cProfile slows pure-Python code more than C code (the
SQLite driver, msgpack, ``json``), so shares are indicative: the absolute figures are
the medians in the table, measured without a profiler.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Probe", "call_tree"]

Key = tuple[str, int, str]


@dataclass(frozen=True)
class Probe:
    """A repeatable call to profile."""

    label: str
    """What the call is, for the heading."""
    call: Callable[[Any], object]
    """The call; it receives what ``setup`` returned."""
    setup: Callable[[], Any] = lambda: None
    """Untimed preparation of each call (not profiled)."""


def _probe_root(call: Callable[[Any], object], arg: Any) -> object:
    return call(arg)


def call_tree(probe: Probe, budget: float = 1.5, depth: int = 3, threshold: float = 0.04) -> str:
    """Profile repeated calls of ``probe`` and render the call tree under it.

    Args:
        probe: The call.
        budget: About how many seconds of calls to aggregate (10 to 300 calls).
        depth: Levels of callees shown.
        threshold: Callees below this share of the whole call are left out.

    Returns:
        Markdown: a nested list with each callee's share and time per call. A callee
        that is the only significant one of its caller and takes nearly all of its
        time shares its caller's line (``a → b``).
    """
    arg = probe.setup()
    start = time.perf_counter()
    probe.call(arg)
    once = max(time.perf_counter() - start, 1e-6)
    calls = max(10, min(300, int(budget / once)))
    profile = cProfile.Profile()
    for _ in range(calls):
        arg = probe.setup()
        profile.enable()
        _probe_root(probe.call, arg)
        profile.disable()
    stats: dict[Key, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    root = next(key for key in stats if key[2] == "_probe_root")
    total = stats[root][3]
    children: dict[Key, list[tuple[Key, float]]] = {}
    for key, (_, _, _, _, callers) in stats.items():
        for caller, (_, _, _, cumulative) in callers.items():
            children.setdefault(caller, []).append((key, cumulative))
    for found in children.values():
        found.sort(key=lambda kv: -kv[1])
    lines = [
        f"`{probe.label}`: {total / calls * 1e6:,.0f} µs per call under the profiler "
        f"({calls} calls)"
    ]

    def significant(key: Key, seen: frozenset[Key]) -> list[tuple[Key, float]]:
        return [
            (child, cumulative)
            for child, cumulative in children.get(key, [])
            if cumulative >= threshold * total and child not in seen
        ]

    def walk(key: Key, level: int, seen: frozenset[Key]) -> None:
        if level > depth:
            return
        for child, cumulative in significant(key, seen):
            chain = [child]
            seen_here = seen | {child}
            while True:
                below = significant(chain[-1], seen_here)
                if len(below) != 1 or below[0][1] < 0.9 * cumulative:
                    break
                chain.append(below[0][0])
                seen_here |= {below[0][0]}
            names = " → ".join(f"`{_name(k)}`" for k in chain)
            lines.append(
                f"{'  ' * (level - 1)}- {names}: {cumulative / total:.0%} "
                f"({cumulative / calls * 1e6:,.0f} µs)"
            )
            walk(chain[-1], level + 1, seen_here)

    walk(root, 1, frozenset({root}))
    return "\n".join(lines)


def _name(key: Key) -> str:
    filename, _, function = key
    if filename == "~":
        return function.strip("<>").replace("built-in method ", "")
    parts = filename.replace(os.sep, "/").split("/")
    for anchor in ("site-packages", "neograph_ext", "bench", "lib"):
        if anchor in parts:
            index = len(parts) - 1 - parts[::-1].index(anchor)
            start = index + 1 if anchor in ("site-packages", "lib") else index
            return f"{'/'.join(parts[start:])}:{function}"
    return f"{parts[-1]}:{function}"
