"""What changed for one step: the nodes that ran and the channels they wrote, under
an old stamp and the current one, each change with readable field-level lines.

Rules:
- Pure: two stamps and a step's names in, frozen ``NodeChange``s out.
- A node is compared by its fingerprint first; only a changed one is broken down into
  its parts (output type, version, successors, subgraph, tool schemas, what it sends).
- A channel whose type changed is blamed on the tasks that wrote it, where known, not
  on their siblings; not at all where the value the step left in it is of a member of
  the channel's union that is the same in both types (``held``): the writer of an
  unchanged ``B`` of ``out: A | B`` wrote nothing the change touched.
- A stamp whose description is missing changes every node it covers (``UNKNOWN``).
- Diff lines come from the stamps' signatures (``_fingerprint.diff``); where those
  are missing or cannot be compared, a line names the two fingerprints instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from neograph_ext.decision._fingerprint import Signature, diff, without_storage_kind
from neograph_ext.decision._stamp import NodeStamp, Stamp, StampRef

__all__ = [
    "STORED",
    "ChangeReason",
    "NodeChange",
    "step_changes",
    "storage_kind_changes",
    "subgraph_lines",
]

STORED = "(stored value)"
"""Stands in for the node of a channel change on a checkpoint no node produced."""


class ChangeReason(StrEnum):
    """Why a node's stored results no longer count."""

    OUTPUT_TYPE = "output type"
    CHANNEL = "channel type"
    VERSION = "version"
    SUCCESSORS = "successors"
    SUBGRAPH = "subgraph"
    TOOLS = "tool schemas"
    """The argument schemas of the tools its tool calls go to."""
    TOOL_OUTPUTS = "tool output types"
    """The return types of the tools a ``ToolNode`` ran (its ``ToolMessage``s hold them)."""
    SENDS = "send argument types"
    """The input types of the nodes it may ``Send`` to: what its stored sends carry."""
    REMOVED = "removed"
    UNKNOWN = "unknown"
    """The types it ran under are not known: their stored description is missing."""
    STORED_VALUE = "stored value"
    """A value it wrote does not read back from the checkpoint as its channel's declared
    type (``_misread.misread``), though no type changed."""
    CALL = "call"
    """For an entrypoint's task: the call now made at the position of its cached result
    is another task's, or has other arguments (``_call_match``)."""


@dataclass(frozen=True)
class NodeChange:
    """One reason one node is invalidated."""

    node: str
    """The node's name."""
    reason: ChangeReason
    """What changed."""
    old: str | None
    """The stored fingerprint (or version string) of what changed."""
    new: str | None
    """The current one; None when the node or channel no longer exists."""
    diff: tuple[str, ...]
    """Readable lines, e.g. ``Analysis.score: int -> float``."""
    channel: str | None = None
    """For ``CHANNEL``: the channel whose type changed."""

    def describe(self) -> str:
        """One line naming the node and the reason, then the diff lines, indented."""
        if self.reason is ChangeReason.UNKNOWN:
            head = f"node `{self.node}`: ran under types that are not known here"
        elif self.reason in (ChangeReason.STORED_VALUE, ChangeReason.CALL):
            return "\n".join(f"node `{self.node}`: {line}" for line in self.diff)
        else:
            what = f"channel `{self.channel}` type" if self.channel else str(self.reason)
            head = f"node `{self.node}`: {what} changed"
        lines = [head]
        lines += [f"    {line}" for line in self.diff]
        return "\n".join(lines)


def step_changes(
    ran: frozenset[str],
    wrote: frozenset[str],
    old: Stamp | StampRef,
    new: Stamp,
    *,
    writers: frozenset[tuple[str, str]] | None = None,
    renames: dict[str, str] | None = None,
    held: frozenset[tuple[str, str]] = frozenset(),
) -> tuple[NodeChange, ...]:
    """The changes of one step that ran ``ran`` and wrote ``wrote`` under ``old``.

    ``writers``: ``(channel, node)`` per write, where known; ``held``: ``(channel, class
    path)`` of the values the step left in ``wrote`` that are instances of a named class
    (``Record.held``); where unknown, a changed channel counts against its writers.
    """
    if isinstance(old, StampRef):
        line = f"stamp {old.id[:12]}: its description is not stored"
        return tuple(
            NodeChange(node, ChangeReason.UNKNOWN, old.id, new.id, (line,)) for node in sorted(ran)
        )
    found: list[NodeChange] = []
    for node in sorted(ran):
        found += _node_changes(node, old, new, renames or {})
    for channel in sorted(wrote):
        before, after = old.channels.get(channel), new.channels.get(channel)
        if before == after or _storage_kind_only(old, before, new, after):
            continue
        if any(_member_kept(old, before, new, after, path) for ch, path in held if ch == channel):
            continue
        lines = _sig_diff(old, before, new, after)
        # The change belongs to the tasks that wrote the channel, not to their siblings.
        blamed = frozenset(node for wrote_to, node in writers or () if wrote_to == channel)
        found += [
            NodeChange(node, ChangeReason.CHANNEL, before, after, lines, channel=channel)
            for node in sorted(blamed & ran or ran) or (STORED,)
        ]
    return tuple(found)


def _node_changes(node: str, old: Stamp, new: Stamp, renames: dict[str, str]) -> list[NodeChange]:
    if node not in old.nodes:  # a task the head waits on is named as the graph names it
        node = next((was for was, now in renames.items() if now == node), node)
    before, after = old.nodes.get(node), new.nodes.get(renames.get(node, node))
    if after is None:
        fp = before.fp if before else None
        return [NodeChange(node, ChangeReason.REMOVED, fp, None, ("node removed from the graph",))]
    if before is None:
        return [NodeChange(node, ChangeReason.OUTPUT_TYPE, None, after.fp, ("node is new",))]
    if before.fp == after.fp:
        return []
    if renames:
        # Successors are fingerprinted by name: compare them as renamed.
        succ = tuple(sorted(renames.get(name, name) for name in before.succ))
        sends = {renames.get(k, k): fp for k, fp in (before.sends or {}).items()} or None
        before = before.model_copy(update={"succ": succ, "sends": sends})
    return _parts_changed(node, before, after, old, new)


def _parts_changed(
    node: str, before: NodeStamp, after: NodeStamp, old: Stamp, new: Stamp
) -> list[NodeChange]:
    found = []
    if before.out != after.out:
        lines = _sig_diff(old, before.out, new, after.out)
        found.append(NodeChange(node, ChangeReason.OUTPUT_TYPE, before.out, after.out, lines))
    if before.ver != after.ver:
        line = f"version {before.ver!r} -> {after.ver!r}"
        found.append(NodeChange(node, ChangeReason.VERSION, before.ver, after.ver, (line,)))
    if before.succ != after.succ:
        line = f"successors {list(before.succ)} -> {list(after.succ)}"
        found.append(NodeChange(node, ChangeReason.SUCCESSORS, None, None, (line,)))
    if before.sub != after.sub:
        lines = subgraph_lines(node, before, after, old, new)
        found.append(NodeChange(node, ChangeReason.SUBGRAPH, None, None, lines))
    if before.tools != after.tools:
        lines = _keyed_lines(before.tools or {}, after.tools or {}, old, new, "tool `{}` arguments")
        found.append(NodeChange(node, ChangeReason.TOOLS, None, None, lines))
    if before.outputs != after.outputs:
        lines = _keyed_lines(
            before.outputs or {}, after.outputs or {}, old, new, "tool `{}` output"
        )
        found.append(NodeChange(node, ChangeReason.TOOL_OUTPUTS, None, None, lines))
    if before.sends != after.sends:
        lines = _keyed_lines(before.sends or {}, after.sends or {}, old, new, "send to `{}`")
        found.append(NodeChange(node, ChangeReason.SENDS, None, None, lines))
    return found


def subgraph_lines(
    node: str, before: NodeStamp, after: NodeStamp, old: Stamp, new: Stamp
) -> tuple[str, ...]:
    """Field-level lines for a change inside a subgraph, each with its path (``write >
    inner > channel `outline```); inner nodes whose change no digest explains (a
    version, successors) are named alone."""
    inner_old, inner_new = before.inner or {}, after.inner or {}
    lines: list[str] = []
    explained: set[str] = set()
    for key in sorted(set(inner_old) | set(inner_new)):
        if inner_old.get(key) == inner_new.get(key):
            continue
        *path, leaf = key.split("/")
        explained.add(path[0] if path else leaf)
        if leaf.startswith("channel:"):
            where, what = [node, *path], f"channel `{leaf.removeprefix('channel:')}` type"
        elif leaf.startswith("tool:"):
            where, what = [node, *path[:-1]], f"node `{path[-1]}`: tool `{leaf[5:]}` arguments"
        elif leaf.startswith("output:"):
            where, what = [node, *path[:-1]], f"node `{path[-1]}`: tool `{leaf[7:]}` output"
        else:
            where, what = [node, *path[:-1]], f"node `{path[-1]}`: output type"
        lines.append(f"{' > '.join(where)}: {what} changed")
        diff_lines = _sig_diff(old, inner_old.get(key), new, inner_new.get(key))
        lines += [f"    {line}" for line in diff_lines]
    inner_before, inner_after = before.sub or {}, after.sub or {}
    for name in sorted(set(inner_before) | set(inner_after)):
        # A sub-agent's digests are keyed ``agent/inner``: explained by its agent.
        explained_by = name.split("/", 1)[0]
        if inner_before.get(name) != inner_after.get(name) and explained_by not in explained:
            lines.append(f"{node} > {name}: changed")
    return tuple(lines)


def _keyed_lines(
    before: dict[str, str], after: dict[str, str], old: Stamp, new: Stamp, label: str
) -> tuple[str, ...]:
    lines: list[str] = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            lines.append(f"{label.format(key)} changed")
            lines += [
                f"    {line}" for line in _sig_diff(old, before.get(key), new, after.get(key))
            ]
    return tuple(lines)


def storage_kind_changes(old: Stamp, new: Stamp) -> tuple[str, ...]:
    """The channels of ``old`` that changed only their LangGraph channel class in ``new``
    (``_storage_kind_only``), sorted: not changes, but a plan says what LangGraph does."""
    return tuple(
        channel
        for channel in sorted(old.channels.keys() & new.channels.keys())
        if old.channels[channel] != new.channels[channel]
        and _storage_kind_only(old, old.channels[channel], new, new.channels[channel])
    )


def _member_kept(old: Stamp, before: str | None, new: Stamp, after: str | None, path: str) -> bool:
    """Whether class ``path`` is a member of the channel's type in both stamps, defined
    the same in both: a value of it fits the new type as it fitted the old."""
    old_sig = old.sigs.get(before) if before else None
    new_sig = new.sigs.get(after) if after else None
    if old_sig is None or new_sig is None:
        return False
    old_sig, new_sig = without_storage_kind(old_sig), without_storage_kind(new_sig)
    if path not in _members(old_sig) or path not in _members(new_sig):
        return False
    return _defined(old_sig, path) == _defined(new_sig, path)


def _members(sig: Signature) -> tuple[object, ...]:
    """The members of a signature's top-level union (the type itself when not one)."""
    root = sig.get("root")
    return tuple(root[1:]) if isinstance(root, list) and root[:1] == ["Union"] else (root,)


def _defined(sig: Signature, key: str) -> dict[str, object]:
    """The defs of ``sig`` that ``key`` reaches: what a value of that class is made of."""
    defs = sig.get("defs", {})
    found: dict[str, object] = {}
    todo = [key]
    while todo:
        name = todo.pop()
        if name in found or name not in defs:
            continue
        found[name] = defs[name]
        todo += [text for text in _strings(defs[name]) if text in defs]
    return found


def _strings(data: object) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for value in data.values() for s in _strings(value)]
    if isinstance(data, list):
        return [s for item in data for s in _strings(item)]
    return []


def _storage_kind_only(old: Stamp, before: str | None, new: Stamp, after: str | None) -> bool:
    """Whether a channel changed only its LangGraph channel class (``without_storage_kind``),
    which LangGraph reads across: a plain reducer channel and a ``DeltaChannel``."""
    old_sig = old.sigs.get(before) if before else None
    new_sig = new.sigs.get(after) if after else None
    if old_sig is None or new_sig is None:
        return False
    return without_storage_kind(old_sig) == without_storage_kind(new_sig)


def _sig_diff(old: Stamp, before: str | None, new: Stamp, after: str | None) -> tuple[str, ...]:
    if before is None:
        return ("type now declared",) if after else ()
    if after is None:
        return ("type no longer declared",)
    old_sig, new_sig = old.sigs.get(before), new.sigs.get(after)
    fallback = (f"fingerprint {before[:12]} -> {after[:12]}",)
    if old_sig is None or new_sig is None:
        return fallback
    try:
        lines = tuple(diff(old_sig, new_sig))
    except Exception:
        return fallback
    return lines or fallback
