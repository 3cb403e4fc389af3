"""Run LangGraph's own test suite plainly and through ``neograph_ext.compile``; compare.

Drop-in fidelity means a graph compiled by neograph-ext behaves exactly like one
compiled by LangGraph. LangGraph's sdist ships its ``tests/``; this script fetches
the sdist of the installed version and runs those tests three times from that one
checkout (memory and SQLite savers: ``NO_DOCKER=true`` keeps PostgreSQL, Redis and
the dev server out): plainly (``baseline``), with every ``StateGraph.compile`` routed
through ``neograph_ext.compile`` (``wrapped``, ``route_compile.py``), and routed with
``auto_resume=True`` (``auto_resume``: every plain root call plans first, as a server
deployment does). Each routed pass is compared with the baseline test by test.

A test that passes plainly and fails in a routed pass is a behavioural difference,
unless ``metadata_only.txt`` lists it and its failure is still an ``==`` whose
operands are equal without neograph-ext's metadata keys (``record_outcomes.py``
recognises those). In the auto-resume pass, a behavioural difference is also excused
when ``auto_resume_exceptions.txt`` lists it with its reason: a deliberate, documented
choice. The exit status is 1 on any unexcused behavioural difference, any
metadata-only difference not listed, and any stale list entry (a listed test that no
longer differs). ``--write-list`` rewrites the metadata-only list from the wrapped
pass's metadata-only differences and never lists anything else.

Only the sdist's ``tests/`` is unpacked, so the installed ``langgraph`` (the one
neograph-ext runs against) is what the tests import.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from suites import SUITES, Suite, unpacked

__all__ = ["main"]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = ROOT / ".compat"
LIST_FILE = SUITES[0].metadata_only
EXCEPTIONS_FILE = SUITES[0].exceptions
# Kept in step with route_compile.AUTO_RESUME_ENV (a plugin, not importable here).
AUTO_RESUME_ENV = "NEOGRAPH_EXT_COMPAT_AUTO_RESUME"
ROUTED_PASSES = ("wrapped", "auto_resume")
# The second order each pass runs in: shuffle.py's seed (the first is the suite's own).
SHUFFLED = 38
# Kept in step with record_outcomes.METADATA_ONLY_MARK (a plugin, not importable here).
METADATA_ONLY_MARK = "NEOGRAPH_EXT_METADATA_ONLY"
# Kept in step with route_compile.WRITTEN_REASON (a plugin that patches LangGraph on import).
WRITTEN = "written type differs from the declared one"
PASSED = frozenset({"passed", "xfailed"})
FAILED = frozenset({"failed", "error"})
# Seconds a test of LangGraph's suite may take: far above its slowest.
TEST_TIMEOUT = 120
# Seconds a whole pass may take: several times a pass on a loaded machine, so a stalled
# run (pytest-xdist itself, outside any test) fails in minutes, not at CI's limit.
PASS_TIMEOUT = 900


@dataclass(frozen=True)
class Pass:
    """One run of the suite."""

    name: str
    """``baseline`` (LangGraph's compile), ``wrapped`` (neograph_ext.compile) or
    ``auto_resume`` (neograph_ext.compile with ``auto_resume=True``)."""
    results: dict[str, dict[str, Any]]
    """Node id -> ``{"outcome", "text", "seconds"}`` as record_outcomes.py writes it."""
    seconds: float
    """Wall-clock time of the pytest process."""


class Stalled(Exception):
    """A pass ran past ``PASS_TIMEOUT`` and was stopped; the message ends its log."""


def _baseline(tree: Path, targets: Sequence[str], workers: int, label: str, **how: Any) -> Pass:
    """The plain pass, run once more if it stalls: it never loads neograph-ext, so a stall is
    the suite's own, not a difference (a routed pass that stalls fails the run)."""
    try:
        return _run_pass("baseline", tree, targets, workers, label, **how)
    except Stalled as stalled:
        print(f"{stalled}; running it once more", flush=True)
        return _run_pass("baseline", tree, targets, workers, label, **how)


def _run_pass(
    name: str,
    tree: Path,
    targets: Sequence[str],
    workers: int,
    label: str,
    suite: Suite = SUITES[0],
    order: int = 0,
) -> Pass:
    """One pass of ``suite`` over ``targets``, in its own order (0) or shuffled by ``order``."""
    record = CACHE / "results" / f"{label}-{name}.json"
    record.unlink(missing_ok=True)
    plugins = [*suite.plugins, "-p", "record_outcomes", "-p", "shuffle"]
    if name in ROUTED_PASSES:
        plugins += ["-p", "route_compile"]
    command = [
        sys.executable, "-m", "pytest",
        "-c", str(tree / "pyproject.toml"), "--rootdir", str(tree),
        "-p", "no:cacheprovider", *plugins, "--compat-order", str(order),
        *(f"--deselect={nodeid}" for nodeid in suite.deselected),
        "--compat-record", str(record),
        # Its addopts minus --full-trace (pages of frames per failure) and durations.
        "-o", "addopts=--strict-markers --strict-config",
        # Full assertion diffs: the failure text is what the list is judged by.
        "-o", "verbosity_assertions=2",
        "-q", "--no-header",
        # A test that hangs fails alone (its stacks in the log) and is judged like any failure.
        "--timeout", str(TEST_TIMEOUT),
        *(["-n", str(workers)] if workers > 1 else []),
        *targets,
    ]  # fmt: skip
    env = {
        **os.environ,
        "NO_DOCKER": "true",
        AUTO_RESUME_ENV: "true" if name == "auto_resume" else "",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    log = CACHE / "results" / f"{label}-{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"[compat] {name} pass: pytest log in {log.relative_to(ROOT)}", flush=True)
    started = time.monotonic()
    with log.open("w") as out:
        # Its own process group, so a stalled pass is stopped with its xdist workers.
        child = subprocess.Popen(
            command, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            child.wait(PASS_TIMEOUT)
        except subprocess.TimeoutExpired as expired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-40:])
            raise Stalled(
                f"{tail}\n[compat] the {name} pass stalled: stopped after {PASS_TIMEOUT} s"
            ) from expired
    seconds = time.monotonic() - started
    if not record.exists():
        sys.exit(f"[compat] the {name} pass wrote no results; see {log}")
    return Pass(name, json.loads(record.read_text()), seconds)


def _read_list(path: Path = LIST_FILE) -> dict[str, str]:
    """A checked-in list: node id -> reason."""
    entries: dict[str, str] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        if line.strip() and not line.lstrip().startswith("#"):
            nodeid, _, reason = line.partition("  # ")
            entries[nodeid.strip()] = reason.strip()
    return entries


def _is_metadata_only(text: str) -> bool:
    """Whether a failure is a failed ``==`` that only neograph-ext's metadata keys break."""
    return any(line.startswith("E") and METADATA_ONLY_MARK in line for line in text.splitlines())


def _cause(nodeid: str, text: str) -> str:
    """A one-line signature of a failure: where it failed and its first error line."""
    errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    errors = [e for e in errors if e] or text.strip().splitlines()[:1]
    # "assert False" alone says little; the line after it names what was checked.
    first = " | ".join(errors[:2]) if errors and len(errors[0]) < 40 else "".join(errors[:1])
    first = re.sub(r"0x[0-9a-f]+|[0-9a-f]{8}-[0-9a-f-]{27}", "…", first)
    return f"{_location(nodeid, text)}: {first}"[:120]


def _stamp_where(text: str) -> str:
    """The paths of the stamp in a metadata-only failure, as record_outcomes.py names them."""
    for line in text.splitlines():
        if METADATA_ONLY_MARK in line and "(at " in line:
            return "stamp at " + line.rsplit("(at ", 1)[1].rstrip(")")
    return "stamp in metadata"


def _location(nodeid: str, text: str) -> str:
    """Where the test failed: the last ``path:line:`` of the traceback inside tests/."""
    hits = re.findall(r"^(tests/[\w/.]+\.py:\d+):", text, flags=re.MULTILINE)
    return hits[-1] if hits else nodeid.split("::")[0]


def _tally(results: dict[str, dict[str, Any]]) -> str:
    counts = Counter(entry["outcome"] for entry in results.values())
    return ", ".join(f"{counts[k]} {k}" for k in sorted(counts, key=lambda k: -counts[k]))


def _write_list(
    metadata_only: dict[str, str],
    behavioural: dict[str, str],
    ran: set[str],
    listed: dict[str, str],
    path: Path = LIST_FILE,
) -> None:
    # Entries for tests outside this run's selection are kept as they are.
    kept = {nodeid: reason for nodeid, reason in listed.items() if nodeid not in ran}
    entries = {**kept, **metadata_only}
    header = (
        "# Tests that fail through neograph_ext.compile only because they compare\n"
        "# metadata exactly: the failing `==` holds once the `neograph_ext` metadata keys are\n"
        "# removed. Regenerate with `make compat-list`; it lists nothing else.\n"
        "# Format: <node id>  # <reason>\n"
    )
    body = "".join(f"{nodeid}  # {reason}\n" for nodeid, reason in sorted(entries.items()))
    # Behavioural differences are never entries; naming them here keeps the draft honest.
    footer = "".join(
        f"#   {nodeid}  -- {_cause(nodeid, text)}\n" for nodeid, text in behavioural.items()
    )
    if footer:
        footer = (
            "\n# Not listed: behavioural differences in the run that wrote this file"
            " (to be fixed, never listed):\n" + footer
        )
    path.write_text(header + body + footer)
    print(f"[compat] wrote {len(entries)} entries to {path.relative_to(ROOT)}")


@dataclass(frozen=True)
class Comparison:
    """One routed pass against the baseline."""

    routed: Pass
    behavioural: dict[str, str]
    """Node id -> failure text: passes plainly, fails routed, not metadata-only."""
    excused: dict[str, str]
    """Behavioural differences the pass's exceptions list names (node id -> reason)."""
    metadata_only: dict[str, str]
    """Node id -> the reason a list entry gives it."""
    unlisted: list[str]
    """Metadata-only differences ``metadata_only.txt`` does not list."""
    stale: list[str]
    """List entries (of either list) that no longer differ."""
    gained: list[str]
    """Tests that fail plainly and pass routed."""
    flaky: list[str] = field(default_factory=list)
    """Behavioural differences that passed when run again (``_confirmed``)."""

    @property
    def failed(self) -> bool:
        return bool(self.behavioural or self.unlisted or self.stale)


def _compare(
    baseline: Pass,
    routed: Pass,
    listed: dict[str, str],
    exceptions: dict[str, str],
    whole: bool,
) -> Comparison:
    """``routed`` judged against ``baseline``; ``whole``: the run covered the whole suite,
    so an entry for a test that no longer exists is stale too."""
    ran = set(baseline.results) | set(routed.results)
    behavioural: dict[str, str] = {}
    excused: dict[str, str] = {}
    metadata_only: dict[str, str] = {}
    unlisted: list[str] = []
    for nodeid, before in sorted(baseline.results.items()):
        module = routed.results.get(nodeid.split("::")[0], {"text": "not run"})
        after = routed.results.get(nodeid, {"outcome": "missing", "text": module["text"]})
        if before["outcome"] not in PASSED or after["outcome"] in PASSED:
            continue
        if _is_metadata_only(after["text"]):
            location = _location(nodeid, after["text"])
            metadata_only[nodeid] = f"`==` at {location}: {_stamp_where(after['text'])}"
            if nodeid not in listed:
                unlisted.append(nodeid)
        elif nodeid in exceptions:
            excused[nodeid] = exceptions[nodeid]
        else:
            behavioural[nodeid] = after["text"] or after["outcome"]
    differing = metadata_only.keys() | behavioural.keys() | excused.keys()
    # The wrapped pass owns the metadata-only list (--write-list writes it from there);
    # the auto-resume pass owns its exceptions.
    owned = exceptions if routed.name == "auto_resume" else listed
    stale = sorted(
        nodeid for nodeid in owned if nodeid not in differing and (nodeid in ran or whole)
    )
    gained = sorted(
        nodeid
        for nodeid, after in routed.results.items()
        if after["outcome"] in PASSED and baseline.results.get(nodeid, {}).get("outcome") in FAILED
    )
    return Comparison(routed, behavioural, excused, metadata_only, unlisted, stale, gained)


def _confirmed(
    comparison: Comparison, tree: Path, workers: int, label: str, **how: Any
) -> Comparison:
    """``comparison`` once its behavioural differences ran a second time in the same
    pass: one that passes then (a timing test of LangGraph's suite that missed its window
    on a busy machine) is reported as flaky, not counted; one that fails again stays."""
    if not comparison.behavioural:
        return comparison
    again = _run_pass(comparison.routed.name, tree, sorted(comparison.behavioural), workers,
                      f"{label}-again", **how)  # fmt: skip
    flaky = {
        nodeid
        for nodeid in comparison.behavioural
        if again.results.get(nodeid, {}).get("outcome") in PASSED
    }
    behavioural = {k: v for k, v in comparison.behavioural.items() if k not in flaky}
    return replace(comparison, behavioural=behavioural, flaky=sorted(flaky))


def _report(comparison: Comparison, label: str) -> None:
    routed = comparison.routed
    count = sum(entry.get("routed", 0) for entry in routed.results.values())
    functional = [e for e in routed.results.values() if e.get("entrypoints")]
    passed = sum(1 for e in routed.results.values() if e["outcome"] in PASSED)
    print(
        f"  {routed.name:<11}: {passed} pass  ({_tally(routed.results)})  {routed.seconds:.0f} s"
        f"  ({count} compiles routed through neograph_ext.compile, of which "
        f"{sum(e['entrypoints'] for e in functional)} @entrypoint graphs in "
        f"{len(functional)} tests)"
    )
    logged = [entry.get("readback", []) for entry in routed.results.values()]
    warned = [[r for r in reasons if r != WRITTEN] for reasons in logged]
    why = Counter(reason for reasons in warned for reason in reasons)
    print(
        f"    read-back warnings       : {sum(map(bool, warned))} tests compile a type whose "
        f"values cannot read back ({', '.join(f'{n} {r}' for r, n in why.most_common()) or 'none'})"
    )
    print(
        f"    written-type warnings    : {sum(WRITTEN in reasons for reasons in logged)} tests "
        "run a node that writes another type than it declares"
    )
    behavioural = comparison.behavioural
    print(f"    behavioural differences  : {len(behavioural)}")
    if routed.name == "auto_resume":
        excused = len(comparison.excused)
        print(f"    listed exceptions        : {excused}")
    print(
        f"    metadata-only differences: {len(comparison.metadata_only)}"
        f" ({len(comparison.unlisted)} not listed)"
    )
    print(f"    stale list entries       : {len(comparison.stale)}")
    if comparison.flaky:
        print(f"    failed once, passed again: {len(comparison.flaky)} (not counted)")
        for nodeid in comparison.flaky[:5]:
            print(f"    FLAKY       {nodeid}")
    if comparison.gained:
        print(
            f"    fail plainly, pass routed: {len(comparison.gained)}"
            f" (look: {comparison.gained[0]} ...)"
        )
    causes = Counter(_cause(nodeid, text) for nodeid, text in behavioural.items())
    for cause, n in causes.most_common(8):
        print(f"      {n:4d} x {cause}")
    for nodeid in list(behavioural)[:8]:
        print(f"    BEHAVIOURAL {nodeid}")
    for nodeid in comparison.unlisted[:5]:
        print(f"    UNLISTED    {nodeid}")
    for nodeid in comparison.stale[:5]:
        print(f"    STALE       {nodeid}")
    details = CACHE / "results" / f"{label}-{routed.name}-differences.txt"
    with details.open("w") as out:
        for kind, group in (
            ("BEHAVIOURAL", behavioural),
            ("EXCUSED", comparison.excused),
            ("METADATA-ONLY", comparison.metadata_only),
        ):
            for nodeid in group:
                text = routed.results.get(nodeid, {}).get("text", "")
                out.write(f"===== {kind} {nodeid}\n{text}\n\n")
    print(f"    failure texts: {details.relative_to(ROOT)}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the passes, print the summary; 0 when the routed graphs behave the same."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--selection", choices=("full", "ci"), default="full",
        help="the whole suites, or each suite's fixed subset (suites.py)",
    )  # fmt: skip
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (1: none)")
    parser.add_argument(
        "--passes", nargs="+", choices=ROUTED_PASSES, default=list(ROUTED_PASSES),
        help="the routed passes to run after the baseline (default: both)",
    )  # fmt: skip
    parser.add_argument(
        "--suites", nargs="+", choices=[s.name for s in SUITES], default=[s.name for s in SUITES],
        help="the suites to run (default: all); pytest ids given are of the first",
    )  # fmt: skip
    parser.add_argument(
        "--orders", type=int, choices=(1, 2), default=2,
        help="run every pass in the suite's own order, then (2) shuffled",
    )  # fmt: skip
    parser.add_argument(
        "--write-list", action="store_true",
        help="rewrite the metadata-only lists from the wrapped pass's metadata-only differences",
    )  # fmt: skip
    parser.add_argument("pytest_targets", nargs="*", help="override the selection's test ids")
    args = parser.parse_args(argv)
    if args.write_list and "wrapped" not in args.passes:
        parser.error("--write-list needs the wrapped pass")
    started = time.monotonic()
    failed = False
    for suite in (s for s in SUITES if s.name in args.suites):
        for order in (0, SHUFFLED)[: args.orders]:
            failed |= _run_suite(suite, order, args)
    print(f"\nneograph-ext compat: every suite and order: {time.monotonic() - started:.0f} s")
    return 1 if failed else 0


def _run_suite(suite: Suite, order: int, args: argparse.Namespace) -> bool:
    """The baseline and routed passes of ``suite`` in one order, compared and reported;
    whether any comparison failed."""
    tree = unpacked(suite, CACHE)
    whole_suite = list(suite.ci) if args.selection == "ci" and suite.ci else [suite.tests]
    targets = args.pytest_targets or whole_suite
    selection = args.selection if not args.pytest_targets else "custom"
    label = f"{suite.name}-{selection}-{'own' if not order else f'shuffled{order}'}"
    how: dict[str, Any] = {"suite": suite, "order": order}
    started = time.monotonic()
    baseline = _baseline(tree, targets, args.workers, label, **how)
    routed = [_run_pass(name, tree, targets, args.workers, label, **how) for name in args.passes]
    for one in routed:
        if not any(entry.get("routed", 0) for entry in one.results.values()):
            message = f"[compat] the {one.name} pass routed no compile through neograph_ext.compile"
            if not args.pytest_targets:
                sys.exit(message)
            print(message + " (these tests compile no StateGraph)")

    listed = _read_list(suite.metadata_only)
    exceptions = _read_list(suite.exceptions)
    whole = args.selection == "full" and not args.pytest_targets
    comparisons = [_compare(baseline, one, listed, exceptions, whole) for one in routed]
    comparisons = [_confirmed(c, tree, args.workers, label, **how) for c in comparisons]

    ran = set(baseline.results).union(*(one.results for one in routed))
    passed = sum(1 for e in baseline.results.values() if e["outcome"] in PASSED)
    print()
    print(
        f"neograph-ext compat: {suite.distribution} "
        f"{importlib.metadata.version(suite.distribution)} tests ({suite.tests}), selection "
        f"{selection}, {'its own order' if not order else f'shuffled (seed {order})'} "
        f"({len(ran)} tests, memory + SQLite savers, {len(suite.deselected)} deselected)"
    )
    print(f"  baseline   : {passed} pass  ({_tally(baseline.results)})  {baseline.seconds:.0f} s")
    for comparison in comparisons:
        _report(comparison, label)
    print(f"  all passes : {time.monotonic() - started:.0f} s")

    if args.write_list and not order:
        wrapped = next(c for c in comparisons if c.routed.name == "wrapped")
        _write_list(wrapped.metadata_only, wrapped.behavioural, ran, listed, suite.metadata_only)
        return any(c.behavioural for c in comparisons)
    return any(c.failed for c in comparisons)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Stalled as stalled:
        sys.exit(str(stalled))
