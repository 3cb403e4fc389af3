"""Planning against a thread fixture: ``plan``'s own flow, its reads served by the file.

Rules:
- The flow is ``_flow.thread_plan``, the one ``plan`` drives: the same head checks, the
  same lineage reader (``_history.lineage``) over the fixture's checkpoint tuples, the
  same ``decide``. Only the driver differs: it answers each read from the fixture, and
  planning yields nothing else.
- No database is touched: the graph planned with is a copy whose checkpointer is an
  empty in-memory saver, which nothing reads (the stamp descriptions come from the
  fixture too).
- What ``run`` would then do (``_steps.work_for``, pure) tells a plan that would raise
  (strict mode, a thread newer code owns) from one that would rewind.
- Which code is newer is the order of stamps the fixture carries (``ThreadFixture.order``,
  as the database held it at export); code it does not list counts as the newest, as
  live, so the code a CI gate checks before its deploy plans as it will once deployed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from neograph_ext._compile import compile
from neograph_ext.decision._decision import ResumePlan
from neograph_ext.decision._errors import (
    CheckpointSchemaError,
    GraphError,
    NeographExtError,
    ThreadSupersededError,
)
from neograph_ext.decision._history import lineage
from neograph_ext.decision._operations import (
    ListThread,
    LoadDescriptions,
    ReadLineage,
    ReadStampOrder,
    ReadTuple,
    ReadValues,
)
from neograph_ext.decision._policy import ResumePolicy, asked
from neograph_ext.decision._steps import work_for
from neograph_ext.drivers._drivers import Driver, Row, answered
from neograph_ext.drivers._graph import StampedGraph
from neograph_ext.drivers._thread import ThreadCall, named_checkpoint, thread_call
from neograph_ext.flows._flow import thread_plan
from neograph_ext.storage._fixtures import ThreadFixture

__all__ = ["Judged", "fixture_rows", "judged", "offline_graph", "plan_fixture"]


def fixture_rows(fixture: ThreadFixture) -> Mapping[type, Row]:
    """The rows of a driver that answers a plan flow's reads from ``fixture``: a plan flow
    reads only, and a write or an invocation would be refused (a flow bug)."""
    return {
        ReadTuple: lambda _, op: answered(fixture.tuple_at(named_checkpoint(op.config))),
        ReadLineage: lambda _, op: answered(
            lineage(fixture.tuples, op.head_id, next_nodes=op.next_nodes, described=op.described)
        ),
        ListThread: lambda _, op: answered(list(fixture.tuples)),
        LoadDescriptions: lambda _, op: answered(
            {key: stamp for key, stamp in fixture.stamps.items() if key in op.wanted}
        ),
        ReadValues: lambda _, op: answered(dict(fixture.head_values)),
        ReadStampOrder: lambda _, op: answered(fixture.order),
    }


def offline_graph(graph: object) -> Pregel[Any, Any, Any, Any]:
    """``graph`` (a builder, a graph ``compile`` made, or one plain LangGraph compiled: a
    ``create_agent`` agent, an ``@entrypoint``) with an empty in-memory saver for a
    checkpointer: planning it against fixtures reaches no database.

    Raises:
        GraphError: It is none of these.
    """
    if isinstance(graph, StampedGraph):
        # The stamp lives on the graph's class: a copy keeps it.
        return graph.copy(update={"checkpointer": InMemorySaver()})
    if isinstance(graph, StateGraph | Pregel):
        return compile(graph, checkpointer=InMemorySaver())
    raise GraphError(
        f"cannot plan a {type(graph).__name__} against fixtures: pass a StateGraph builder, "
        "a compiled graph or an @entrypoint"
    )


def plan_fixture(
    graph: object, fixture: ThreadFixture, *, resume: ResumePolicy | None = None
) -> ResumePlan:
    """What ``plan`` would return for the fixture's thread in its database, planned from
    the fixture alone.

    Args:
        graph: The current code: a ``StateGraph`` builder, a graph made by
            ``neograph_ext.compile`` (its checkpointer is never used), or one plain
            LangGraph compiled (a ``create_agent`` agent, an ``@entrypoint``).
        fixture: A thread read by ``read_fixtures``.
        resume: Plan as ``plan(..., resume=resume)`` would; by default under the graph's
            policy.

    Raises:
        GraphError: ``graph`` cannot be planned with.
        UnreadableCheckpointError: The fixture's head has metadata LangGraph cannot
            resume from.
    """
    call = _call(offline_graph(graph), fixture, resume)
    with Driver(call, fixture_rows(fixture)) as driver:
        return driver.run(thread_plan(call))


class Judged(NamedTuple):
    """A fixture planned, and what ``run`` would do with the plan."""

    plan: ResumePlan | None
    """None when planning itself raised."""
    error: NeographExtError | None
    """What ``run`` would raise (``CheckpointSchemaError``) or what planning raised."""
    carries: bool
    """Whether the policy keeps or migrates values (``keep_compatible``, ``migrations``)."""


def judged(
    graph: Pregel[Any, Any, Any, Any], fixture: ThreadFixture, resume: ResumePolicy | None = None
) -> Judged:
    """The fixture's plan and what ``run`` would raise, if anything, before any node ran.

    Args:
        graph: The current code, as ``offline_graph`` returns it.
        fixture: A thread read by ``read_fixtures``.
        resume: As for ``plan_fixture``.

    Raises:
        GraphError: ``graph`` cannot be planned with at all.
    """
    call = _call(graph, fixture, resume)
    carries = bool(call.carrying.keep or call.carrying.migrations)
    try:
        with Driver(call, fixture_rows(fixture)) as driver:
            decision = driver.run(thread_plan(call))
    except GraphError:  # the graph given cannot be planned with: no thread's verdict
        raise
    except NeographExtError as exc:
        return Judged(None, exc, carries)
    try:
        work_for(call, decision, fixture.tuple_at(None), None, {})
    except (CheckpointSchemaError, ThreadSupersededError) as exc:
        return Judged(decision, exc, carries)
    return Judged(decision, None, carries)


def _call(
    graph: Pregel[Any, Any, Any, Any], fixture: ThreadFixture, resume: ResumePolicy | None
) -> ThreadCall:
    given, _ = asked("plan", resume, None, {})
    return thread_call(graph, {"configurable": {"thread_id": fixture.thread_id}}, given)
