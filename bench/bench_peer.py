"""Figure 6: neograph-ext against neograph, the library its auto-resume comes from.

neograph (PyPI ``neograph``) compiles ``@node`` functions into LangGraph and, given
a checkpointer, stores schema fingerprints in the state and rewinds a thread when
they differ. It is installed in a venv of its own (``.venv-peer`` at the repository
root, or the interpreter in ``$NEOGRAPH_EXT_PEER_PYTHON``), so it never shares a
process or a dependency set with this project; if that venv is missing it is
created with the same LangGraph versions as this one.

Both sides run ``peer_driver.py`` in subprocesses. Batches alternate: each round
runs one batch of each side (the order flips every round), and each batch times
one warm-up and ``PER_BATCH`` repetitions; a figure is the median of all the
repetitions of all the rounds.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from _harness import DIR_ENV, Row, bench_dir, fmt_ms, fmt_ratio

ROOT = Path(__file__).resolve().parent.parent
DRIVER = Path(__file__).resolve().parent / "peer_driver.py"
PEER_ENV = "NEOGRAPH_EXT_PEER_PYTHON"
PEER_VERSION = "0.7.11"
"""The neograph release measured; the pin keeps the figures reproducible."""
ROUNDS = 7
PER_BATCH = 3
TIMEOUT = 300


class PeerUnavailable(RuntimeError):
    """The peer could not be installed or run; the message says why."""


def peer_python() -> str:
    """The peer venv's interpreter, created and checked on first use."""
    chosen = os.environ.get(PEER_ENV)
    if chosen:
        python = Path(chosen)
    else:
        venv = ROOT / ".venv-peer"
        python = venv / "bin" / "python"
        if not python.exists():
            _create(venv)
    probe = subprocess.run(
        [str(python), "-c", "import neograph, langgraph.checkpoint.sqlite"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    if probe.returncode != 0:
        raise PeerUnavailable(f"neograph does not import: {probe.stderr.strip()[-500:]}")
    return str(python)


def _create(venv: Path) -> None:
    pins = [f"neograph=={PEER_VERSION}"]
    for dist in ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite"):
        try:
            pins.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            pins.append(dist)
    print(f"bench: creating {venv.name} with {' '.join(pins)}", file=sys.stderr)
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *pins],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=TIMEOUT)
        if done.returncode != 0:
            raise PeerUnavailable(
                f"`{' '.join(step[2:4])} ...` failed: {done.stderr.strip()[-500:]}"
            )


def _batch(python: str, side: str) -> dict[str, Any]:
    env = {**os.environ}
    directory = bench_dir()
    if directory:
        env[DIR_ENV] = directory
    done = subprocess.run(
        [python, str(DRIVER), side, str(PER_BATCH)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        cwd=str(ROOT),
    )
    if done.returncode != 0:
        raise PeerUnavailable(f"the {side} batch failed: {done.stderr.strip()[-800:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(rounds: int = ROUNDS) -> list[Row]:
    try:
        python = peer_python()
    except (PeerUnavailable, OSError, subprocess.SubprocessError) as exc:
        return [("6. Peer: neograph", f"not measured: {exc}", "")]
    sides = {"peer": python, "ours": sys.executable}
    wall: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    cpu: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    nodes: dict[str, dict[str, set[int]]] = {s: {} for s in sides}
    versions: dict[str, str] = {}
    try:
        for index in range(rounds):
            order = ["peer", "ours"] if index % 2 == 0 else ["ours", "peer"]
            for side in order:
                out = _batch(sides[side], side)
                versions[side] = out["version"]
                for kind, samples in out["wall"].items():
                    wall[side].setdefault(kind, []).extend(samples)
                    cpu[side].setdefault(kind, []).extend(out["cpu"][kind])
                    nodes[side].setdefault(kind, set()).update(out["nodes"][kind])
    except (PeerUnavailable, subprocess.SubprocessError) as exc:
        return [("6. Peer: neograph", f"not measured: {exc}", "")]

    def row(kind: str, title: str, note: str) -> Row:
        peer = statistics.median(wall["peer"][kind])
        ours = statistics.median(wall["ours"][kind])
        peer_cpu = statistics.median(cpu["peer"][kind])
        ours_cpu = statistics.median(cpu["ours"][kind])
        ran = f"nodes run: {_nodes(nodes['peer'][kind])} vs {_nodes(nodes['ours'][kind])}"
        return (
            f"6. Peer, 4-node pipeline, SQLite: {title}: neograph {versions['peer']} `run()` "
            f"vs neograph-ext `run()`",
            f"{fmt_ms(peer)} vs {fmt_ms(ours)}: **{fmt_ratio(peer / ours)}** "
            f"(CPU {fmt_ratio(peer_cpu / ours_cpu)}; n={len(wall['ours'][kind])}); {ran}",
            note,
        )

    return [
        row("resume", "no-change resume of a completed thread", "ratio > 1: neograph is slower"),
        row(
            "rewind", "rewind after `third`'s output model changed", "ratio > 1: neograph is slower"
        ),
        row(
            "again",
            "the next run after that rewind, no further change",
            "neograph re-runs the changed nodes on every later run"
            if min(nodes["peer"]["again"]) > 0
            else "ratio > 1: neograph is slower",
        ),
    ]


def _nodes(counts: set[int]) -> str:
    return "/".join(str(count) for count in sorted(counts))


def run() -> list[Row]:
    return measure()


if __name__ == "__main__":
    for line in run():
        print(" | ".join(line), file=sys.stdout)
