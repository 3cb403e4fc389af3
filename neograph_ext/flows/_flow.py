"""The resume flow, written once: read the thread, decide, settle under the lock, invoke.

Each flow is an I/O-free generator, as httpx's auth flows are: it yields the operations
it needs (the records of ``_operations``) and is sent back their results. ``_run`` drives the flows,
sync or async: its two drivers perform the operations and differ by ``await`` alone.

Rules:
- Nothing here calls the saver or the graph: every read, write and invocation is an
  operation yielded, so the flow is the same for every saver and for both drivers.
- Deciding is ``_plan.decide``'s (pure), what to invoke ``_steps.work_for``'s (pure);
  the flow reads what they need and carries out what they return.
- Work happens under the thread's lock, planned again there when the thread moved while
  this call waited for it; a thread with nothing to do is never locked.
- Nothing is deleted or overwritten: carrying values and keeping tasks write forks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.pregel import Pregel

from neograph_ext.decision._call_order import CallProgram, Judged, StoredCall, judged
from neograph_ext.decision._calls import decide_calls
from neograph_ext.decision._carrying import carry_for, readable, rebuilt_channels
from neograph_ext.decision._changes import NodeChange
from neograph_ext.decision._claim import CLAIM, claimant
from neograph_ext.decision._decision import Carriable, HeadFacts, PlanKind, ResumePlan
from neograph_ext.decision._errors import GraphError, NeographExtError
from neograph_ext.decision._fork_misread import judged_fork
from neograph_ext.decision._head_state import (
    called_namespaces,
    has_interrupt,
    head_step,
    is_paused,
    output_of,
    started_input,
    waiting_nodes,
)
from neograph_ext.decision._history import Record, lineage, references, resolved, triggered
from neograph_ext.decision._inside import InnerLineage
from neograph_ext.decision._langgraph import delta_channels
from neograph_ext.decision._langgraph_calls import (
    RETURN,
    FinishedCall,
    failed_tasks,
    finished_calls,
    recorded_digest,
    returned,
)
from neograph_ext.decision._langgraph_questions import RESUME
from neograph_ext.decision._lineage_facts import verified
from neograph_ext.decision._misread import (
    head_misread,
    rebuilt_judged,
    result_misread,
    revived_as_data,
    unrevivable_tasks,
)
from neograph_ext.decision._operations import (
    Flow,
    Idle,
    Invoke,
    ListThread,
    LoadDescriptions,
    PutWrites,
    ReadInnerHeads,
    ReadLineage,
    ReadStampOrder,
    ReadSubgraphValues,
    ReadTasks,
    ReadTuple,
    ReadValues,
    Store,
    TakeLock,
    Tell,
)
from neograph_ext.decision._owed import owed_turns
from neograph_ext.decision._ownership import owner
from neograph_ext.decision._plan import decide, needs_lineage
from neograph_ext.decision._reanswer import Reanswer, reanswering
from neograph_ext.decision._stamp import Stamp, StampRef, encode_run, input_digest, read_marks
from neograph_ext.decision._steps import Due, ReplayInput, Work, is_due, work_for
from neograph_ext.decision._subgraph_misread import inner_changes, inner_misread
from neograph_ext.decision._turn import EntrypointTurn, TurnCall, turn_base, turn_of
from neograph_ext.decision._unreadable import reading, resumable
from neograph_ext.drivers._thread import ThreadCall, at_checkpoint, named_checkpoint
from neograph_ext.flows._decision_log import logged
from neograph_ext.flows._keep import fork_inside, incomplete
from neograph_ext.flows._keep_calls import kept
from neograph_ext.flows._migrate import carry

__all__ = [
    "Seen",
    "carried_forward",
    "planned",
    "read_head",
    "resumed",
    "served_plan",
    "thread_plan",
]

logger = logging.getLogger("neograph_ext")


def read_head(call: ThreadCall) -> Flow[CheckpointTuple | None]:
    """The checkpoint the call plans from: the one its config names, else the thread's
    newest, checked resumable; the parent instead of a keeping fork missing some of its
    writes (a kill cut it short: ``_keep.incomplete``)."""
    head = resumable((yield ReadTuple(call.config)), call.thread_id)
    named = named_checkpoint(call.config)
    if head is None and named is not None:
        raise GraphError(
            f"thread {call.thread_id!r} has no checkpoint {named!r}: drop checkpoint_id "
            "from the config to resume the thread's newest checkpoint"
        )
    return (yield from _restarted(head))


def _restarted(head: CheckpointTuple | None) -> Flow[CheckpointTuple | None]:
    """``head``, or the checkpoint to plan from instead: the parent of a keeping fork a
    kill left without some of its writes (``_keep.incomplete``)."""
    restart = incomplete(head)
    return head if restart is None else (yield ReadTuple(restart))


def planned(
    call: ThreadCall, head: CheckpointTuple | None, *, full: bool = False
) -> Flow[ResumePlan]:
    """The decision for ``head``: from the head alone when it decides (``needs_lineage``),
    else from its lineage, with the stamp descriptions it names and the values a carry
    would convert. ``full``: always from the lineage (``plan``)."""
    facts = yield from _facts(call, head)
    # A resumed entrypoint turn is served its cached results: they are read (and judged)
    # on its turn, which the head's facts alone do not cover.
    served = call.graph.neograph_ext_entrypoint is not None and bool(facts and facts.next_nodes)
    if facts is None or head is None or not (served or needs_lineage(facts, full=full)):
        return decide((), call.stamp, call.thread_id, head=facts)
    described = call.graph.neograph_ext_described(call.saver)
    records = yield from _lineage(call, facts, described)
    wanted = references(records, call.stamp.id)
    missing = wanted - described.keys()
    if missing:
        # Content-addressed and checked against their ids: a found one never goes stale.
        described.update((yield LoadDescriptions(missing)))
    records = resolved(records, {key: described[key] for key in wanted if key in described})
    inside = yield from _inner_lineages(call, head, facts, described)
    facts = replace(facts, new_turn=_new_turn(call, head, facts, records), inside=inside)
    holder = owner(records)
    if holder is not None and holder != call.stamp.id:
        # Other code wrote the thread last: whether it is newer decides (``_ownership``).
        release = call.graph.neograph_ext_release
        declared = (call.stamp.id, release) if release is not None else None
        facts = replace(facts, stamp_order=(yield ReadStampOrder(holder, declared)))
    if facts.replaying is not None:
        listed = yield ListThread(call.config)
        facts = replace(facts, owed=owed_turns(listed, facts.checkpoint_id, facts.replaying))
    if call.graph.neograph_ext_entrypoint is not None:
        return (yield from _entrypoint_planned(call, head, facts, records))
    carriable = yield from _carriable(call, head, facts)

    def decided(facts: HeadFacts) -> ResumePlan:
        return decide(
            records,
            call.stamp,
            call.thread_id,
            carriable,
            replay_turns=call.resume.replay_turns,
            head=facts,
            take_over=call.resume.take_over,
            reanswer=call.resume.reanswer,
        )

    plan = decided(facts)
    revival = call.graph.neograph_ext_revival
    held = head.checkpoint.get("channel_values") or {}
    deltas = partial(delta_channels, call.graph)
    return (yield from judged_fork(call.config, revival, held, facts, plan, decided, deltas))


def _entrypoint_planned(
    call: ThreadCall, head: CheckpointTuple, facts: HeadFacts, records: tuple[Record, ...]
) -> Flow[ResumePlan]:
    """The decision for an ``@entrypoint`` thread: by its turn's recorded calls."""
    turn = yield from _entrypoint_turn(call, head, facts, records)
    shape = call.graph.neograph_ext_entrypoint
    assert shape is not None  # only asked for an entrypoint
    misread_tasks = frozenset(c.task for c in turn.calls if c.task and c.misread)
    lost = unrevivable_tasks(call.graph.neograph_ext_revival, shape.returns)
    facts = replace(facts, unrevivable=facts.unrevivable | (lost & misread_tasks))
    carriable = yield from _carriable(call, head, facts)
    return decide_calls(
        turn,
        call.stamp,
        call.thread_id,
        facts,
        replay_turns=call.resume.replay_turns,
        carry=carriable,
        records=records,
        take_over=call.resume.take_over,
        unmatched_at=call.unmatched,
    )


def _lineage(
    call: ThreadCall, facts: HeadFacts, described: Mapping[str, Stamp]
) -> Flow[tuple[Record, ...]]:
    """The head's lineage: read light where a reader knows the saver, else listed."""
    head_id, next_nodes = facts.checkpoint_id, facts.next_nodes
    records: tuple[Record, ...] | None = yield ReadLineage(
        call.config, head_id, next_nodes, described
    )
    if records is not None:
        return records
    listed = yield ListThread(call.config)
    with reading(call.thread_id):
        return lineage(listed, head_id, next_nodes=next_nodes, described=described)


def _inner_lineages(
    call: ThreadCall, head: CheckpointTuple, facts: HeadFacts, described: dict[str, Stamp]
) -> Flow[tuple[InnerLineage, ...]]:
    """The lineage of the namespace of each unfinished subgraph the head waits on, at any
    depth, when other code wrote the head (``_inside`` judges them)."""
    subgraphs = {name for name, node in call.stamp.nodes.items() if node.sub is not None}
    waits = facts.next_nodes & subgraphs
    stamp, _ = read_marks(head.metadata)
    if not waits or (isinstance(stamp, Stamp | StampRef) and stamp.id == call.stamp.id):
        return ()
    found: list[InnerLineage] = []
    heads = yield ReadInnerHeads(head.config, frozenset(waits))
    for inner in heads:
        listed = list((yield ListThread(call.config, inner.namespace)))
        with reading(call.thread_id):
            records = lineage(
                listed, inner.checkpoint_id, next_nodes=inner.next_nodes, described=described
            )
        found.append(
            InnerLineage(
                inner.path,
                inner.namespace,
                records,
                inner.next_nodes,
                tasks=inner.tasks,
                answered=_answered(listed, records),
                delta=_delta_inside(call.graph, inner.path),
            )
        )
    found += yield from _tool_called(call, head, waits - {h.path[0] for h in heads}, described)
    resolved_found = []
    for inner_lineage in found:
        missing = references(inner_lineage.records, call.stamp.id) - described.keys()
        if missing:
            described.update((yield LoadDescriptions(missing)))
        records = resolved(inner_lineage.records, described)
        resolved_found.append(replace(inner_lineage, records=records))
    return tuple(resolved_found)


def _answered(listed: Sequence[CheckpointTuple], records: Sequence[Record]) -> bool:
    """Whether a question was answered in the latest invocation of the namespace whose
    checkpoints are ``listed`` and lineage ``records``: a ``__resume__`` write on one of
    them since its latest ``input`` checkpoint."""
    sources = [record.source for record in records]
    start = len(sources) - 1 - sources[::-1].index("input") if "input" in sources else 0
    ids = {record.checkpoint_id for record in records[start:]}
    return any(
        channel == RESUME
        for tup in listed
        if tup.config["configurable"].get("checkpoint_id") in ids
        for _, channel, _ in tup.pending_writes or ()
    )


def _delta_inside(graph: Pregel[Any, Any, Any, Any], path: Sequence[str]) -> frozenset[str]:
    """The ``DeltaChannel`` channels of the compiled subgraph that runs at ``path``
    (``get_subgraphs``); none when one along it is not found so (a graph a node's code
    calls)."""
    found = graph
    for name in path:
        sub = dict(found.get_subgraphs(namespace=name)).get(name)
        if not isinstance(sub, Pregel):
            return frozenset()
        found = sub
    return frozenset(delta_channels(found))


def _tool_called(
    call: ThreadCall, head: CheckpointTuple, nodes: frozenset[str], described: dict[str, Stamp]
) -> Flow[list[InnerLineage]]:
    """The namespaces of graphs that the pending task of each of ``nodes`` calls where
    LangGraph's ``get_state`` does not look (a tool's body: a deep agent's ``task``):
    under the task's namespace all the same, and resumed from there. An agent that wrote
    them names itself (``lc_agent_name``)."""
    if not nodes:
        return []
    tasks = [t for t in (yield ReadTasks(head.config)) if t.name in nodes]
    found: list[InnerLineage] = []
    for task in tasks:
        if sum(t.name == task.name for t in tasks) > 1:
            continue  # which of them a change touches is not told: re-run as a whole
        namespace = f"{task.name}:{task.id}"
        listed = list((yield ListThread(call.config, namespace)))
        if not listed:
            continue
        newest = max(listed, key=lambda t: t.config["configurable"]["checkpoint_id"])
        waiting = triggered(newest.checkpoint)
        with reading(call.thread_id):
            records = lineage(
                listed,
                newest.config["configurable"]["checkpoint_id"],
                next_nodes=waiting,
                described=described,
            )
        agent = newest.metadata.get("lc_agent_name")
        called = agent if isinstance(agent, str) else None
        found.append(
            InnerLineage(
                (task.name,),
                namespace,
                records,
                waiting,
                called,
                nested=False,
                answered=_answered(listed, records),
            )
        )
    return found


def thread_plan(call: ThreadCall) -> Flow[ResumePlan]:
    """What ``run`` would do with the call's thread, from its whole lineage (``plan``)."""
    head = yield from read_head(call)
    plan = yield from planned(call, head, full=True)
    finished = head is not None and not plan.next_nodes and not has_interrupt(head)
    if call.given is None and finished and plan.kind in (PlanKind.REWIND, PlanKind.MIGRATE):
        plan = replace(plan, notes=(*plan.notes, _FOR_THE_STORED_RESULT))
    return logged(call.saver, call.thread_id, plan, level=logging.DEBUG)


_FOR_THE_STORED_RESULT = (
    "planned for the stored result (no input); plan(graph, config, input=...) plans a new turn"
)
"""Why a finished thread's plan rewinds although the next new turn may not: a new input
starts a turn for which the finished turns are history (docs/long-lived-threads.md)."""


class Seen(NamedTuple):
    """What a call read and decided before it took the thread's lock."""

    newest: CheckpointTuple | None
    """The thread's newest checkpoint, when the call names another one (``_followed``)."""
    head: CheckpointTuple | None
    """The checkpoint planned from (``read_head``)."""
    plan: ResumePlan


def served_plan(call: ThreadCall) -> Flow[tuple[Seen | None, CheckpointTuple | None]]:
    """For a plain call on a graph that resumes (``_auto_resume``): what the call saw
    (None for a thread with no checkpoint), for ``resumed`` to go on from, and the head
    the call starts from, as LangGraph reads it."""
    newest = yield from _newest(call)
    head = resumable((yield ReadTuple(call.config)), call.thread_id)
    if head is None:
        return None, None
    start = yield from _restarted(head)
    return Seen(newest, start, (yield from planned(call, start))), head


def _newest(call: ThreadCall) -> Flow[CheckpointTuple | None]:
    """The thread's newest checkpoint, when the call names a checkpoint (``_followed``)."""
    named = named_checkpoint(call.config)
    return (yield ReadTuple(at_checkpoint(call.config, None))) if named else None


def resumed(
    call: ThreadCall, input: Any, kwargs: Mapping[str, Any], seen: Seen | None = None
) -> Flow[Any]:
    """Run or resume the call's thread as ``run`` documents it; sends back ``run``'s
    result. ``seen``: what the call already read and decided (``served_plan``), planned
    again only if the thread moved before the lock was taken."""
    if seen is None:
        newest = yield from _newest(call)
        head = yield from read_head(call)
        seen = Seen(newest, head, (yield from planned(call, head)))
    newest, head, plan = seen
    work = _logged_work(call, plan, head, input, kwargs)
    if not work.invocations and work.carry is None:
        yield Tell(plan)
        return (yield from _idle(call, call.config, work))
    yield TakeLock()
    call, work, plan = yield from _settled(call, newest, head, work, plan, input, kwargs)
    yield Tell(plan)
    if not work.invocations:
        return (yield from _idle(call, at_checkpoint(call.config, None), work))
    yield Store(call.graph.neograph_ext_save, call.graph.neograph_ext_asave, (call.saver,))
    result = None
    for step in work.invocations:
        if step.when is not Due.ALWAYS and not is_due(
            step.when, call.graph, (yield ReadTuple(step.config))
        ):
            continue
        value, mark = step.input, step.mark
        if isinstance(value, ReplayInput):
            value, mark = _replayed(call, value, (yield ReadTuple(value.config)))
        if isinstance(value, Reanswer):
            sent = yield from reanswering(value, call.graph.nodes, step.config, mark, work.kwargs)
            result = sent[0] if sent else result
            continue
        if step.keep is not None:
            yield from kept(call, *step.keep, step.upto, mark)
        if step.inner:
            yield from fork_inside(step.inner, call.stamp, mark)
        if step.claim is not None:
            yield PutWrites(*step.claim, CLAIM)
        result = yield Invoke(value, step.config, mark, work.kwargs)
    return result


def _idle(call: ThreadCall, config: RunnableConfig, work: Work) -> Flow[Any]:
    """A call with nothing to invoke: a stream replays the thread (and ends here); ``run``
    returns the result, rebuilt from the head when it can be, else read as LangGraph
    rebuilds the state."""
    yield Idle(config, work.kwargs)
    if work.stored is not None:
        return work.stored[0]
    return output_of(call.graph, (yield ReadValues(config)))


def _settled(
    call: ThreadCall,
    newest: CheckpointTuple | None,
    head: CheckpointTuple | None,
    work: Work,
    plan: ResumePlan,
    input: Any,
    kwargs: Mapping[str, Any],
) -> Flow[tuple[ThreadCall, Work, ResumePlan]]:
    """What to invoke, once the thread's lock is held, and the decision it carries out:
    planned again only when the thread moved while this call waited for the lock
    (``_followed``, ``_moved``); a plan that carries values first writes the fork that
    carries them, then is planned again from it (the fork is the thread's newest: it is
    resumed, finished tasks and interrupts kept, rather than forked again)."""
    locked = yield from _followed(call, newest)
    if locked is not call or _moved(head, (yield ReadTuple(call.config))):
        head = yield from read_head(locked)
        plan = yield from planned(locked, head)
        work = _logged_work(locked, plan, head, input, kwargs)
    if work.carry is not None:
        # What a new turn keeps by default is validated as a kept value is.
        kept = replace(call.carrying, keep=call.carrying.keep | work.carry.migrated)
        written = yield from carry(locked, locked.config, work.carry, kept)
        logger.info(
            "thread %r: wrote checkpoint %s carrying the values on",
            call.thread_id,
            (written.get("configurable") or {}).get("checkpoint_id"),
        )
        locked = locked._replace(config=at_checkpoint(locked.config, None))
        head = yield from read_head(locked)
        work = work_for(locked, (yield from planned(locked, head)), head, input, kwargs)
    return locked, work, plan


def _logged_work(
    call: ThreadCall,
    plan: ResumePlan,
    head: CheckpointTuple | None,
    input: Any,
    kwargs: Mapping[str, Any],
) -> Work:
    """What to invoke for ``plan`` (``work_for``), the decision logged with what carrying
    it out warns of: once per decision the call acts on, the plan of the fork a carry
    writes aside (it continues what was decided)."""
    try:
        work = work_for(call, plan, head, input, kwargs)
    except NeographExtError:
        logged(call.saver, call.thread_id, plan)
        raise
    logged(call.saver, call.thread_id, plan, work.warnings)
    return work


def _followed(call: ThreadCall, newest: CheckpointTuple | None) -> Flow[ThreadCall]:
    """The call to plan under the lock: itself, or the same call on the newest checkpoint.

    A run from a named checkpoint is a deliberate fork. But when, while this run waited
    for the lock, the thread's newest checkpoint moved to a new branch off the named
    one, another run made that fork meanwhile: this one continues from the newest
    checkpoint instead, so concurrent runs from one checkpoint fork it once, not once
    each. A thread that moved along an older branch is forked from the named one.
    """
    named = named_checkpoint(call.config)
    if newest is None or named is None:
        return call
    latest = at_checkpoint(call.config, None)
    now = yield ReadTuple(latest)
    if now is None or not _moved(newest, now):
        return call
    tuples = yield ListThread(call.config)
    path = [record.checkpoint_id for record in lineage(tuples, now.checkpoint["id"])]
    if named not in path[:-1]:
        return call
    branch = path[path.index(named) + 1]
    known = {record.checkpoint_id for record in lineage(tuples, newest.checkpoint["id"])}
    return call if branch in known else call._replace(config=latest)


def _moved(planned: CheckpointTuple | None, now: CheckpointTuple | None) -> bool:
    """Whether the thread changed between planning and taking its lock (another process
    may have worked on it meanwhile)."""
    if planned is None or now is None:
        return planned is not now
    return planned.checkpoint["id"] != now.checkpoint["id"] or len(
        planned.pending_writes or ()
    ) != len(now.pending_writes or ())


def _facts(call: ThreadCall, head: CheckpointTuple | None) -> Flow[HeadFacts | None]:
    """What ``decide`` needs to know of the head: read from its tuple and the graph; of
    the DeltaChannels a resume hands to nodes, their values as LangGraph rebuilds them;
    and from the checkpoints of the subgraphs it waits on that declare classes stored by
    path."""
    if head is None:
        return None
    stamp, mark = read_marks(head.metadata)  # a mapping: ``resumable`` checked it
    waits = waiting_nodes(call.graph, head)
    revival = call.graph.neograph_ext_revival
    judged = rebuilt_judged(revival, delta_channels(call.graph)) if waits else frozenset()
    values = (yield ReadValues(head.config)) if judged else {}
    rebuilt = {ch: values[ch] for ch in judged if ch in values}
    misread = head_misread(revival, head, bool(waits), rebuilt)
    inner: tuple[NodeChange, ...] = ()
    stored = {**(head.checkpoint.get("channel_values") or {}), **rebuilt}
    lost = frozenset(
        ch for ch in revival.unrevivable & misread.keys() if revived_as_data(stored.get(ch))
    )
    subgraphs = waits & revival.subgraphs.keys()
    if subgraphs:
        held = yield ReadSubgraphValues(head.config, frozenset(subgraphs))
        found, lost_inside = inner_misread(revival.subgraphs, held)
        inner, lost = inner_changes(found), lost | lost_inside
    return HeadFacts(
        head.checkpoint["id"],
        waits,
        paused=is_paused(call.graph, head),
        verified=verified(stamp, mark.verified, call.stamp) and not _claimed_away(call, head),
        replaying=mark.replaying,
        misread=misread,
        unrevivable=lost,
        inner=inner,
        step=head_step(call.graph, head) if waits else None,
        uncovered=(yield from _uncovered(call, head)),
    )


def _uncovered(call: ThreadCall, head: CheckpointTuple) -> Flow[dict[str, str]]:
    """Of the namespaces a graph called from a stopped node's code would have written
    (``called_namespaces``), those that hold a checkpoint: a graph no stamp describes."""
    found: dict[str, str] = {}
    for node, namespace in called_namespaces(call.graph, head).items():
        config: RunnableConfig = {
            "configurable": {"thread_id": call.thread_id, "checkpoint_ns": namespace}
        }
        held = yield ReadTuple(config)
        # A reader that keeps no namespaces (an exported thread) answers with the root's.
        if held is not None and held.config["configurable"].get("checkpoint_ns") == namespace:
            found[node] = namespace
    return found


def _new_turn(
    call: ThreadCall, head: CheckpointTuple, facts: HeadFacts, records: tuple[Record, ...]
) -> bool:
    """Whether the call starts a new turn (``HeadFacts.new_turn``): the head's run
    completed and the input given is not the one its turn started with (as ``work_for``
    tells a new turn: by the run mark's digest, else the input checkpoint's)."""
    if call.given is None or facts.next_nodes or has_interrupt(head):
        return False
    started = started_input(head) or next(
        (r.input for r in reversed(records) if r.source == "input"), None
    )
    return started != call.given


def _claimed_away(call: ThreadCall, head: CheckpointTuple) -> bool:
    """Whether other code claimed the head last (``_claim``): its lineage then decides."""
    return claimant(head.pending_writes or ()) not in (None, call.stamp.id)


def _entrypoint_turn(
    call: ThreadCall, head: CheckpointTuple, facts: HeadFacts, records: tuple[Record, ...]
) -> Flow[EntrypointTurn]:
    """The latest turn of an entrypoint thread: its cached task results are on its base
    (``_turn.turn_base``): the head while it runs, an ancestor once it finished."""
    shape = call.graph.neograph_ext_entrypoint
    assert shape is not None  # only asked for an entrypoint
    complete = not facts.next_nodes
    base_id = turn_base(records, complete=complete) or head.checkpoint["id"]
    base = head
    if base_id != head.checkpoint["id"]:
        base = (yield ReadTuple(at_checkpoint(call.config, base_id))) or head
    step = base.metadata.get("step", -1)
    step = step if isinstance(step, int) else -1
    writes = base.pending_writes or ()
    found = finished_calls(base.checkpoint, step, shape.name, shape.tasks, writes)
    # Only the head is claimed: a turn that still runs has it for its base.
    claims = records[-1].claims if records and base is head else ()
    ran_under = {task: claim.stamp for claim in claims for task in claim.tasks}
    matched = _matched(shape.program, base, found)
    calls = tuple(
        TurnCall(
            c.position,
            c.task,
            _result_misread(shape.returns, c),
            ran_under.get(c.task_id),
            matched.verdicts.get(c.position, True),
        )
        for c in found
    )
    failed = failed_tasks(base.checkpoint, step, shape.name, shape.tasks, writes)
    return turn_of(
        records,
        shape.name,
        (base.checkpoint["id"], step),
        calls,
        complete=complete,
        failed=failed,
        made=matched.made,
    )


def _matched(
    program: CallProgram | None, base: CheckpointTuple, found: tuple[FinishedCall, ...]
) -> Judged:
    """Per cached call, whether the code makes it again (``_call_order.judged``), the body
    followed from the turn's input; unknown without a program, but for a call that
    recorded no digest, which is judged as before."""
    stored = {
        c.position: StoredCall(c.task, recorded_digest(c.writes), returned(c.writes))
        for c in found
        if c.task is not None
    }
    if program is None:
        return Judged({i: None for i, c in stored.items() if c.digest is not None}, ())
    given = (base.checkpoint.get("channel_values") or {}).get("__start__")
    return judged(program, given, stored)


def _result_misread(returns: Mapping[str, object], call: FinishedCall) -> str | None:
    """Whether the call's cached result reads back as its task's declared return type."""
    if call.task is None or call.task not in returns:
        return None
    value = next(v for ch, v in call.writes if ch == RETURN)
    return result_misread(call.task, returns[call.task], value)


def _carriable(call: ThreadCall, head: CheckpointTuple, facts: HeadFacts) -> Flow[Carriable | None]:
    """Which changed channels the call's policy may carry, given the head's values
    (``_carrying.carry_for``); None when the options carry nothing, and then the graph's
    nodes are not read while planning. A new turn keeps what still validates whatever
    the policy: its earlier turns are history (``HeadFacts.new_turn``)."""
    options = call.carrying
    if facts.new_turn:
        options = replace(options, keep=options.keep | options.types.keys())
    if not (options.keep or options.migrations):
        return None
    channels = rebuilt_channels(options, delta_channels(call.graph))
    rebuilt = (yield ReadValues(head.config)) if channels else {}
    values = readable(head.checkpoint.get("channel_values", {}), rebuilt, channels)
    # A converted value of a type that cannot be revived would not read back either.
    return lambda candidates: carry_for(
        options, candidates - (facts.unrevivable & facts.misread.keys()), values
    )


def _replayed(
    call: ThreadCall, replay: ReplayInput, stored: CheckpointTuple | None
) -> tuple[Any, str]:
    """The input and run mark of a replayed turn, read from its input checkpoint."""
    if stored is None:
        raise GraphError(
            f"thread {call.thread_id!r}: the input checkpoint of a turn to replay is gone "
            f"({replay.config['configurable'].get('checkpoint_id')}); nothing after it was "
            "replayed"
        )
    value = stored.checkpoint["channel_values"].get("__start__")
    logger.info(
        "thread %r: replaying the input of the turn that started at checkpoint %s",
        call.thread_id,
        stored.checkpoint["id"],
    )
    # The digest the turn recorded, not the stored value's: LangGraph may store the input
    # after a node changed it (an async saver serialises later; ``add_messages`` sets
    # message ids), and the same input sent again must still be the same turn.
    given = read_marks(stored.metadata)[1].input or input_digest(value)
    return value, encode_run(call.stamp, PlanKind.REWIND, given, replay.source)


def carried_forward(call: ThreadCall) -> Flow[tuple[bool, ResumePlan]]:
    """A fleet upgrade's step (``upgrade_threads``): under the thread's lock, what a
    resume does before it invokes anything (plan, and write the carry its work starts
    with, ``_settled``), and nothing after; sends back whether it carried and the plan
    the next resume will make. False: the thread had nothing to carry (any more)."""
    yield TakeLock()
    head = yield from read_head(call)
    decision = yield from planned(call, head)
    work = work_for(call, decision, head, None, {})
    if work.carry is None:
        return False, decision
    locked, _, _ = yield from _settled(call, None, head, work, decision, None, {})
    latest = locked._replace(config=at_checkpoint(locked.config, None))
    return True, (yield from planned(latest, (yield from read_head(latest))))
