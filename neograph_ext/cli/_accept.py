"""``accept``: what it would write, asked before it does.

Rules:
- ``--dry-run`` reads alone (the database opened read-only) and says what ``accept``
  would write: one fork of the head, or nothing when the head is current already.
- Otherwise it asks first, by the rule every writing command shares (``_confirm``),
  unless the head is current already: then there is nothing to write.
- It copies the head's values into the fork. A value of a class GRAPH does not declare
  reads back as its fields alone (``_serde``), and would be written so: such a thread is
  refused before anything is written.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import typer
from langchain_core.runnables import RunnableConfig

from neograph_ext import ResumePlan, history
from neograph_ext.cli._boundary import CliError, reading
from neograph_ext.cli._graphs import Graph
from neograph_ext.cli._serde import declined
from neograph_ext.cli._show import console, text, to_json

__all__ = ["Preview", "preview", "report", "would"]


@dataclass(frozen=True)
class Preview:
    """What ``accept`` would do with one thread, read before anything is written."""

    plan: ResumePlan
    """The thread's plan under GRAPH now."""
    current: bool
    """Whether the head is current already (``run`` or an ``accept`` verified it against
    GRAPH's fingerprints): then nothing is written."""


def preview(graph: Graph, config: RunnableConfig, plan: ResumePlan) -> Preview:
    """What ``accept`` would write, refusing a head it could not copy faithfully."""
    thread = config["configurable"]["thread_id"]
    with reading(f"thread {thread!r}"), declined() as blocked:
        head = history(graph, config)[-1]
        graph.get_state(config)  # every value and pending write the fork would copy
    if blocked:
        names = ", ".join(sorted(blocked))
        raise CliError(
            f"thread {thread!r} holds values of classes GRAPH does not declare ({names}): "
            "they read back as their fields alone, and accept would store them so; "
            "declare them in GRAPH's state, or call neograph_ext.accept with your app's saver"
        )
    stamp = getattr(graph, "neograph_ext_stamp", None)
    current = head.verified and stamp is not None and head.stamp_id == stamp.id
    return Preview(plan, current)


def would(found: Preview) -> str:
    """What ``accept`` would write to the thread, in one sentence."""
    p = found.plan
    if found.current:
        return f"thread {p.thread_id}: its head {p.head_id} is current already; nothing to write"
    return (
        f"thread {p.thread_id}: would write one checkpoint, a fork of {p.head_id} stamped "
        f"with GRAPH's fingerprints (plan now: {p.kind}), so the next run carries on from it"
    )


def report(found: Preview, written: RunnableConfig | None, as_json: bool) -> None:
    """What was written (``written`` None: a dry run, nothing was)."""
    new_id = ((written or {}).get("configurable") or {}).get("checkpoint_id")
    wrote = written is not None and new_id != found.plan.head_id
    if as_json:
        out: dict[str, Any] = {
            "thread_id": found.plan.thread_id,
            "dry_run": written is None,
            "was": found.plan.kind,
            "head_id": found.plan.head_id,
            "current": found.current,
            "written": new_id if wrote else None,
            "plan": dataclasses.asdict(found.plan),
        }
        typer.echo(to_json(out))
    elif written is None:
        console().print(text(f"dry run: {would(found)}; nothing written"))
    elif not wrote:
        console().print(text(would(found)))
    else:
        console().print(
            text(
                f"thread {found.plan.thread_id}: accepted as written by this graph (was "
                f"{found.plan.kind}); wrote checkpoint {new_id}, a fork of {found.plan.head_id}"
                + _took(found.plan)
            )
        )


def _took(plan: ResumePlan) -> str:
    """A take-over names the newer code the thread was taken from."""
    return f"; taken over from newer code (stamp {plan.owner[:16]})" if plan.owner else ""
