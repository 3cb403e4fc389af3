"""Run every benchmark figure; write ``bench/results.md`` and ``bench/scaling.png``.

    python bench/run.py                # everything (``make bench``)
    python bench/run.py --only 1,3     # some figures, for a quick look

PostgreSQL figures are measured when ``$NEOGRAPH_EXT_PG_DSN`` names a server (its
tables ``checkpoints``, ``checkpoint_blobs`` and ``checkpoint_writes`` are emptied
first: give it a throwaway database); otherwise the results say they were not.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT))

import bench_concurrency  # noqa: E402
import bench_fleet  # noqa: E402
import bench_keep  # noqa: E402
import bench_metadata  # noqa: E402
import bench_overhead  # noqa: E402
import bench_peer  # noqa: E402
import bench_plan  # noqa: E402
import bench_resume  # noqa: E402
import bench_rewind  # noqa: E402
from _harness import (  # noqa: E402
    PG_DSN_ENV,
    LoopThreads,
    Result,
    bench_dir_label,
    copy_sqlite_thread,
    pg_dsn,
    pg_saver,
    sqlite_saver,
)
from _profile import call_tree  # noqa: E402

RESULTS = HERE / "results.md"
PLOT = HERE / "scaling.png"
FINGERPRINT_TARGET_MS = 50.0


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated figure numbers (1-10); default: all")
    args = parser.parse_args()
    only = {int(n) for n in args.only.split(",")} if args.only else set(range(1, 11))
    started = time.perf_counter()
    results: list[Result] = []
    points: list[bench_plan.Point] = []
    notes: list[str] = []
    profiles: list[tuple[str, list[str]]] = []
    dsn = pg_dsn()

    def figure(number: int, title: str, fn: Callable[[], list[Result]]) -> None:
        if number not in only:
            return
        log(f"figure {number}: {title}")
        start = time.perf_counter()
        found = fn()
        log(f"figure {number} took {time.perf_counter() - start:.0f} s")
        for result in found:
            print(" | ".join(result.row), flush=True)
            if result.missed and result.probes:
                # Now, while the saver the probes use is still open.
                log(f"profiling: {result.row[0]}")
                profiles.append((result.row[0], [call_tree(probe) for probe in result.probes]))
        results.extend(found)

    if 1 in only:
        with sqlite_saver() as saver:
            figure(1, "fresh-run overhead", lambda: bench_overhead.measure(saver))
    if only & {2, 3}:
        with sqlite_saver() as saver:
            threads = LoopThreads(saver)
            figure(2, "no-change resume", lambda: bench_resume.measure(threads))

            def sqlite_plan() -> list[Result]:
                rows, found = bench_plan.measure(threads, "SQLite")
                points.extend(found)
                return rows

            figure(3, "rewind planning, SQLite", sqlite_plan)
            notes.append(f"SQLite loop threads were written in {threads.build_seconds:.0f} s.")
    if 3 in only:
        if dsn:
            with pg_saver(dsn) as saver:
                threads = LoopThreads(saver)

                def pg_plan() -> list[Result]:
                    rows, found = bench_plan.measure(threads, "PostgreSQL")
                    points.extend(found)
                    return rows

                figure(3, "rewind planning, PostgreSQL", pg_plan)
                notes.append(
                    f"PostgreSQL loop threads were written in {threads.build_seconds:.0f} s."
                )
        else:
            results.append(
                Result(
                    (
                        "3. Rewind planning, PostgreSQL",
                        f"not measured: ${PG_DSN_ENV} is not set",
                        "",
                    )
                )
            )
    if 4 in only:
        with sqlite_saver() as saver:
            figure(
                4,
                "what a rewind saves",
                lambda: bench_rewind.measure(saver, lambda a, b: copy_sqlite_thread(saver, a, b)),
            )
    figure(5, "fingerprint_type", fingerprint_rows)
    figure(6, "peer: neograph", lambda: [Result(row) for row in bench_peer.measure()])
    if 7 in only:
        if dsn:
            figure(7, "concurrent runs on a pool", lambda: bench_concurrency.measure(dsn))
        else:
            results.append(
                Result(
                    (
                        "7. Concurrent runs on a PostgreSQL pool",
                        f"not measured: ${PG_DSN_ENV} is not set",
                        "",
                    )
                )
            )

    if 8 in only:
        with sqlite_saver() as saver:
            figure(
                8,
                "a one-branch change: keeping vs re-running the superstep",
                lambda: bench_keep.measure(saver, lambda a, b: copy_sqlite_thread(saver, a, b)),
            )

    figure(9, "metadata bytes per checkpoint", bench_metadata.measure)
    figure(10, "check of a fleet against the floor", lambda: bench_fleet.rows(dsn=dsn))

    plotted = plot(points) if points else "no planning figures were run"
    elapsed = time.perf_counter() - started
    RESULTS.write_text(render(results, profiles, notes, plotted, dsn, elapsed), encoding="utf-8")
    log(f"wrote {RESULTS.relative_to(ROOT)} in {elapsed:.0f} s")


def fingerprint_rows() -> list[Result]:
    """Figure 5, from ``bench_fingerprint.run()``, with a verdict added."""
    try:
        import bench_fingerprint
    except ImportError as exc:
        return [Result(("5. `fingerprint_type`", f"not measured: {exc}", ""))]
    out = []
    for what, measured, target in bench_fingerprint.run():
        found = re.search(r"([\d.]+)\s*ms", measured)
        missed = False
        if found:
            missed = float(found.group(1)) >= FINGERPRINT_TARGET_MS
            target = f"< {FINGERPRINT_TARGET_MS:g} ms: {'**missed**' if missed else 'met'}"
        label = what.replace("fingerprint_type", "`fingerprint_type`")
        out.append(Result((f"5. {label}", measured, target), missed))
    return out


def plot(points: list[bench_plan.Point]) -> str:
    """Draw the scaling figure; returns a sentence for the results."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "not drawn: matplotlib is not installed (`pip install -e '.[bench]'` installs it)"
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    colours = {"SQLite": "tab:blue", "PostgreSQL": "tab:orange"}
    for saver in sorted({p.saver for p in points}):
        mine = sorted((p for p in points if p.saver == saver), key=lambda p: p.checkpoints)
        xs = [p.checkpoints for p in mine]
        colour = colours.get(saver, "tab:gray")
        ax.plot(xs, [p.plan * 1000 for p in mine], "o-", color=colour, label=f"plan(), {saver}")
        ax.plot(
            xs,
            [p.scan * 1000 for p in mine],
            "s--",
            color=colour,
            alpha=0.7,
            label=f"raw saver.list() scan, {saver}",
        )
    first = min(points, key=lambda p: p.checkpoints)
    xs = sorted({p.checkpoints for p in points})
    ax.plot(
        xs,
        [first.scan * 1000 * x / first.checkpoints for x in xs],
        ":",
        color="gray",
        label="linear growth",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("checkpoints in the thread")
    ax.set_ylabel("median time (ms)")
    ax.set_title("Rewind planning vs a raw scan of the thread")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(PLOT)
    plt.close(fig)
    return f"![planning and raw-scan time against history length]({PLOT.name})"


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def _git() -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not rev:
        return "unknown"
    return f"{rev}{' with uncommitted changes' if dirty else ''}"


def _pg(dsn: str | None) -> str:
    if not dsn:
        return f"not measured (${PG_DSN_ENV} not set)"
    try:
        import psycopg

        with psycopg.connect(dsn) as conn:
            settings = {
                name: conn.execute(f"SHOW {name}").fetchone()[0]  # type: ignore[index]
                for name in ("server_version", "fsync", "synchronous_commit")
            }
    except Exception as exc:
        return f"unreachable: {exc}"
    return (
        f"PostgreSQL {settings['server_version']} (fsync={settings['fsync']}, "
        f"synchronous_commit={settings['synchronous_commit']})"
    )


def render(
    results: list[Result],
    profiles: list[tuple[str, list[str]]],
    notes: list[str],
    plotted: str,
    dsn: str | None,
    elapsed: float,
) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    table = ["| Figure | Result (median) | Target |", "| --- | --- | --- |"]
    table += [f"| {what} | {measured} | {target} |" for what, measured, target in _rows(results)]
    missed = [r.row[0] for r in results if r.missed]
    environment = [
        ("neograph-ext", f"{_version('neograph-ext')} (commit {_git()})"),
        ("Python", f"{platform.python_version()} on {platform.system()} {platform.machine()}"),
        ("CPU cores", str(os.cpu_count())),
        ("langgraph", _version("langgraph")),
        ("langgraph-checkpoint", _version("langgraph-checkpoint")),
        ("langgraph-checkpoint-sqlite", _version("langgraph-checkpoint-sqlite")),
        ("langgraph-checkpoint-postgres", _version("langgraph-checkpoint-postgres")),
        ("SQLite", f"{sqlite3.sqlite_version}, database files in {bench_dir_label()}"),
        ("PostgreSQL", _pg(dsn)),
        ("whole run", f"{elapsed:.0f} s"),
    ]
    parts = [
        "# neograph-ext benchmarks",
        "",
        f"Generated by `make bench` (`python bench/run.py`) on {now}. What neograph-ext "
        "costs over plain LangGraph, and what it saves. Every comparison is two things "
        "measured in the same process, interleaved; see *Method* below.",
        "",
        "## Results",
        "",
        *table,
        "",
        "Ratios are neograph-ext over the baseline (for figure 6: neograph over "
        "neograph-ext); below 1 is faster. The CPU ratio compares process CPU time, "
        "which waiting for a core or a disk does not inflate: on a busy machine it is "
        "the steadier of the two.",
        "",
        "## Scaling",
        "",
        plotted,
        "",
        "## Environment",
        "",
        "| | |",
        "| --- | --- |",
        *[f"| {k} | {v} |" for k, v in environment],
        "",
        *(f"- {note}" for note in notes),
        "",
        METHOD,
        PEER,
        "## Targets missed",
        "",
    ]
    if not missed:
        parts += ["None.", ""]
    else:
        parts += [
            "Each missed comparison was profiled (cProfile, about 1.5 s of calls each "
            "side); the trees show where the time of one call goes, neograph-ext's side "
            "first, down to callees of at least 4% of the call. Shares are "
            "of the whole call; cProfile slows Python code more than the SQLite driver, "
            "msgpack or `json`, so the pure-Python parts look larger than they are.",
            "",
        ]
        for title, trees in profiles:
            parts += [f"### {title}", ""]
            number = title.split(".", 1)[0]
            why = WHY.get(number) or WHY.get(number.rstrip("ab"))
            if why:
                parts += [why, ""]
            for tree in trees:
                parts += [tree, ""]
    return "\n".join(parts).rstrip() + "\n"


def _rows(results: list[Result]) -> list[tuple[str, str, str]]:
    return [tuple(cell.replace("|", "\\|") for cell in r.row) for r in results]  # type: ignore[misc]


WHY = {
    "1": "On a fresh thread `run()` first reads the thread (one `get_tuple`, which finds "
    "nothing), then invokes; every checkpoint it writes carries the stamp reference and "
    "the run mark in its metadata, and it holds the thread's lock while it runs.",
    "2a": "`run()` reads the head (`get_tuple`), checks two metadata keys (the stamp "
    "reference and the run mark `run()` left), works out which nodes the head waits on, "
    "digests the input given to compare it with the stored one, and returns the stored "
    "output; `get_state` reads the head and builds a snapshot. Both take a few tens of "
    "microseconds.",
    "2b": "Before it resumes, `run()` reads the head (`get_tuple`), checks its stamp "
    "reference and run mark and works out which nodes it waits on; with work to do, it "
    "takes the thread's lock (a `stat` of the database, a digest, opening and locking the "
    "thread's lock file) and reads the head again, to plan again if another process "
    "moved it meanwhile; LangGraph's `invoke` then reads the head once more. "
    "`invoke(None, config)` alone reads it once. This is a fixed "
    "cost per call, the same at both thread lengths, so its share shrinks as soon as "
    "nodes do real work (row 2c).",
    "3": "`plan()` is one `get_tuple` (the head) and one `saver.list()`, plus, "
    "per checkpoint, the reduction to a record (`lineage` → `_Walk.record`: which nodes "
    "ran and which channels they wrote, about 2 µs) and the decision (`decide`, under "
    "1 µs), all pure Python. The walk keeps records, not tuples, so with the collector "
    "on it gains where the scan's own tuples make each of the collector's passes longer "
    "(10,000 checkpoints); the row's *garbage collector paused* ratio shows the "
    "comparison without those passes. The profile shows the Python work per checkpoint.",
}
"""Why a figure's neograph-ext side costs more, shown above its profiles when it misses."""

METHOD = """## Method

- **Reproduce**: `make bench` (or `.venv/bin/python bench/run.py`); add
  `NEOGRAPH_EXT_PG_DSN=postgresql://...` for the PostgreSQL rows (its checkpoint
  tables are emptied first). `--only 1,3` runs some figures. The scripts are in
  `bench/`; each `bench_*.py` also runs alone and prints its rows.
- **Interleaving**: every repetition times each side once, alternating the order
  (A B, B A, A B, ...), after one warm-up repetition that is thrown away. A figure
  is the median over the repetitions (n in the table, at least 7); a ratio is the
  ratio of the two medians. Set-up (a new thread, a copy of a thread) is never timed,
  and each call's result is let go after it is checked, untimed, so that no call pays
  for freeing another's.
- **Savers**: `SqliteSaver` on a database file, and `PostgresSaver` where marked,
  as the libraries set them up. The SQLite files live in a RAM-backed directory
  when the machine has one (`/dev/shm`; `NEOGRAPH_EXT_BENCH_DIR` overrides), so a
  commit's flush is not timed: both sides of each comparison write the same
  checkpoints, and on a busy shared disk flush latency swamps the differences
  being measured.
- **Threads**: long threads come from a one-node loop graph (a node adds one to a
  counter, a conditional edge loops back until a limit). A crashed thread is one
  whose last step raised; its copies (rows copied under a new thread id) give each
  repetition a fresh one. Each copy's thread lock is taken and released once before
  it is timed: the run that wrote a real thread made its lock file, and creating one
  cost a resume about 70 µs more than opening it. The completed thread is a copy of
  the crashed one resumed to the end, all written by `run()` with its default
  `durability="sync"`.
  PostgreSQL tables are `ANALYZE`d after the threads are written: right after bulk
  inserts, the planner's plan for the saver's `list` query ran 2-7x slower in trial
  runs at 1,000 checkpoints (autovacuum analyzes on its own within about a minute).
- **Figure 3** plans with a graph whose loop node's `versions=` changed, so the
  head is not verified and `plan()` reads and walks the whole lineage. Its floor is
  one `list(saver.list(...))` of the thread's root namespace, every tuple taken and
  let go within the call, as a planner lets them go.
- **Figure 4** counts node executions on every call and checks them: 3 for the
  rewind (nodes 8-10), 10 for delete-and-rerun.
- **Figure 9** runs each graph to the end once per side on one SQLite file, under
  thread ids of the same length (LangGraph copies the thread id into metadata), and
  reads the stored metadata column of every checkpoint (`length(metadata)`, the JSON
  `SqliteSaver` writes); the added bytes are compared checkpoint by checkpoint, in
  step order. Nothing is timed. What neograph-ext adds is the stamp reference
  (`"neograph_ext": "2:<stamp id>"`) and the run mark (`"neograph_ext_run":
  "<stamp id, 16 hex>.<decision>.<input digest>"`), a fixed size whatever the graph;
  the stamp's description is stored once per stamp beside the threads.
"""

PEER = """## Peer: neograph

[neograph](https://pypi.org/project/neograph/) compiles `@node` functions into
LangGraph and, with a checkpointer, stores schema fingerprints in the graph state
(as input values) and rewinds a thread when they differ, walking
`get_state_history`. It is installed in a venv of its own (`.venv-peer`, created on
first use with the same LangGraph versions as this project's) and driven, like
neograph-ext's side, by `bench/peer_driver.py` in subprocesses: 7 rounds, each one
batch of each side, the order flipping every round; a batch times one warm-up and 3
repetitions. Both build the same 4-node pipeline (`first -> second -> third ->
fourth`, each returning a pydantic model) in their own API, on `SqliteSaver` over a
fresh file, and call their library's `run()`. neograph's per-node info logging is
set to WARNING so that console output is not timed.

neograph stores its fingerprints as part of the run's input. A resume invokes
with no input, so after a rewind the thread still carries the old fingerprints,
and every later run finds them different again and re-runs the changed nodes (row
"the next run after that rewind"). neograph-ext stamps the checkpoints the rewind
writes, so the next run finds nothing to do.
"""


if __name__ == "__main__":
    main()
