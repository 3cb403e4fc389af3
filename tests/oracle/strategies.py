"""``hypothesis`` strategies for the oracle's cases: an app (``Spec``), what a release
changed in it, and where release 1 stopped. Everything shrinks toward one plain node,
no change, no stop: a failure is reported in its smallest form."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from neograph_ext import ResumePolicy
from tests.oracle.oracle import Case
from tests.oracle.spec import ALSO, TYPES, Fan, Layer, Node, Spec, changed_nodes, members

__all__ = ["cases", "specs"]

_NAMES = "abcdefgh"
REANSWER = ResumePolicy(reanswer=True)


@st.composite
def _node(draw: st.DrawFn, name: str, *, alone: bool) -> Node:
    return Node(
        name,
        x=draw(st.sampled_from(sorted(TYPES, key="int".__ne__))),
        asks=draw(st.integers(0, 2)),
        route=draw(st.sampled_from(("edge", "cond", "command"))) if alone else "edge",
        shared=draw(st.booleans()) if alone else False,
    )


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    """An app of one to four layers: nodes, parallel pairs (joined after), fans."""
    layers: list[Layer] = []
    names = iter(_NAMES)
    for i in range(draw(st.integers(1, 4))):
        sender = i > 0 and _single(layers[-1])
        shape = draw(st.sampled_from(("node", "pair", "fan") if sender else ("node", "pair")))
        if shape == "fan":
            layers.append(Fan(next(names), items=draw(st.integers(1, 3))))
        else:
            size = 1 if shape == "node" else 2
            layers.append(tuple(draw(_node(next(names), alone=size == 1)) for _ in range(size)))
    # Now and then, the first node also writes a channel of a shape found wrong after a
    # deploy (unless it routes by ``Command``: its return type is the ``Command``).
    first = layers[0][0]
    also = draw(st.sampled_from((*[None] * 8, *ALSO)))
    if also and first.route != "command":
        layers[0] = (replace(first, also=also), *layers[0][1:])
    return Spec(tuple(layers), messages=draw(st.booleans()))


def _single(layer: Layer) -> bool:
    return isinstance(layer, tuple) and len(layer) == 1


def _valid(spec: Spec) -> bool:
    """A fan's sender is one node; a pair routes by edges; the first layer is no fan."""
    layers = spec.layers
    if not layers or isinstance(layers[0], Fan):
        return False
    return all(
        not isinstance(layer, Fan) or _single(layers[i - 1]) for i, layer in enumerate(layers)
    )


@st.composite
def _changed(draw: st.DrawFn, spec: Spec) -> Spec:
    """Release 2: ``spec`` with one change, or none (the control)."""
    nodes = spec.nodes()
    target = draw(st.sampled_from(nodes))
    change = draw(
        st.sampled_from(
            ("none", "retype", "required", "optional", "version", "insert", "remove", "rename")
        )
    )
    first = spec.layers[0][0]
    # What it also writes changes, unless a ``RootModel`` (whose shape is read back as it
    # is).
    if isinstance(first, Node) and first.also not in (None, "root") and draw(st.booleans()):
        return spec.with_node(first.name, also_changed=True)
    if change == "retype":
        return spec.with_node(target.name, x=draw(st.sampled_from(sorted(set(TYPES) - {target.x}))))
    if isinstance(target, Node) and change in ("required", "optional"):
        return spec.with_node(target.name, extra=change)
    if isinstance(target, Node) and change == "version":
        return spec.with_node(target.name, version="v2")
    first = target in members(spec.layers[0])
    if isinstance(target, Node) and change == "rename":
        # Renamed without ``renames=``, a node is removed and another inserted: not first.
        declared = first or draw(st.booleans())
        renamed = spec.renamed(target.name, f"{target.name}2", declared=declared)
        if draw(st.booleans()):  # and changed: retyped
            return renamed.with_node(f"{target.name}2", x="str" if target.x != "str" else "int")
        return renamed
    at = spec.layers.index(_layer_of(spec, target.name))
    if change == "insert":
        layers = (*spec.layers[: at + 1], (Node("n"),), *spec.layers[at + 1 :])
        return _or(replace(spec, layers=layers), spec)
    if change == "remove" and at > 0:
        return _or(replace(spec, layers=spec.layers[:at] + spec.layers[at + 1 :]), spec)
    return spec


def _layer_of(spec: Spec, name: str) -> Layer:
    (layer,) = [x for x in spec.layers if name in _names(x)]
    return layer


def _names(layer: Layer) -> set[str]:
    return {m.name for m in members(layer)}


def _or(spec: Spec, fallback: Spec) -> Spec:
    return spec if _valid(spec) else fallback


@st.composite
def cases(draw: st.DrawFn, *, turns: int = 2) -> Case:
    """A thread's story: an app, release 2 of it, and where release 1 stopped."""
    old = draw(specs())
    new = draw(_changed(old))
    crash = draw(st.none() | st.sampled_from([n.name for n in old.nodes()]))
    answered = draw(st.integers(0, 3).map(lambda n: 99 if n == 3 else n))
    return Case(
        old,
        new,
        crash=crash,
        answered=answered,
        turns=draw(st.integers(1, turns)),
        resume=draw(st.sampled_from((None, REANSWER))),
        by_id=draw(st.booleans()),
        # When the last turn finished, release 2 may run the next turn instead.
        next_turn=crash is None and answered == 99 and draw(st.booleans()),
    )


def known_failure(case: Case) -> str | None:
    """The row of ``test_rows`` a case is an instance of, while that row still fails
    (its strict xfail names why): the generated suite checks every other case."""
    if case.resume is not None and case.resume.reanswer:
        replaced = {n.key for n in case.new.nodes() if isinstance(n, Node) and n.key}
        replaced -= dict(case.new.renames).keys()  # declared with ``renames=``: kept
        if any(isinstance(n, Node) and n.asks and n.name in replaced for n in case.old.nodes()):
            return "test_an_asking_node_replaced_under_reanswer_takes_the_answer"
    # Answers keyed by id to a node asking twice: its last is lost on SQLite and
    # PostgreSQL once the task finished.
    keyed = case.resume is not None and case.resume.reanswer and case.by_id
    if (
        keyed
        and case.answered > 1
        and any(isinstance(n, Node) and n.asks > 1 for n in case.old.nodes())
    ):
        return "test_reanswer_gives_again_an_answer_keyed_by_id_to_a_task_that_finished"
    # A node renamed with ``renames=`` that asks, re-run by a rewind because it changed
    # (on the in-memory saver).
    stale = changed_nodes(case.old, case.new)
    for before, _ in case.new.renames:
        node = case.old.named(before)
        if isinstance(node, Node) and node.asks and before in stale:
            return "test_a_renamed_asking_node_that_changed_is_asked_again"
    return None
