"""Graph specs for the oracle: a small description of a LangGraph app, and the real,
counted, deterministic graph it builds.

A spec is a list of layers run in order. A layer is one node, two parallel nodes (the
next layer joins them: ``add_edge([a, b], c)``), or a ``Fan``: a worker the layer before
sends ``Item``s to (``Send``, from a conditional edge or ``Command(goto=...)``). Every
node writes its own channel (or the shared ``out`` channel, typed as the union of its
writers' models) and appends to the ``log`` reducer (and to ``add_messages`` ``msgs``).
A node's value is built from its inputs alone, so two runs of the same spec agree.

The first node may also write one more channel of a shape found wrong after a deploy
(``Node.also``): a reducer of a union of two models (``picks``), a ``RootModel`` value
(``tags``, read by the next layer), a value every turn writes before any node reads it
(``reply``), or a reducer of ``typing.TypedDict`` items (``notes``).

Two specs with the same node names are two releases of one app: their models share a
module and qualname (``pipelines.model``), so a stored value revives as the class bound
in the process (``pipelines.deployed``), as one class exists per worker.
"""

from __future__ import annotations

import operator
import sys
import threading
import time
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt
from pydantic import BaseModel, RootModel

from tests.graphs.pipelines import MODULE, Crash, model

__all__ = [
    "ALSO",
    "Fan",
    "Node",
    "OracleTags",
    "Spec",
    "as_named",
    "build",
    "changed_nodes",
    "converted",
    "members",
    "models",
]

TYPES: Mapping[str, Callable[[int], Any]] = {
    "int": int,
    "str": str,
    "float": float,
    "list": lambda seed: [seed],
}
"""The types a model's changing field ``x`` may have, each with how a seed becomes one."""
_ITEM = 1000
"""The seeds of a fan's items are ``k * _ITEM`` apart: the first is below it."""
_ANNOTATIONS: Mapping[str, object] = {"int": int, "str": str, "float": float, "list": list[int]}
ALSO = ("union", "root", "replaced", "typeddict")
"""The shapes of ``Node.also``: the channels ``picks``, ``tags``, ``reply``, ``notes``."""
_ALSO_CHANNEL = {"union": "picks", "root": "tags", "replaced": "reply", "typeddict": "notes"}


class OracleTags(RootModel[list[str]]):
    """The ``tags`` value: a model whose data is a list, defined where it imports from."""


@dataclass(frozen=True)
class Node:
    """One node: what it returns and how it routes on."""

    name: str
    x: str = "int"
    """The type of its model's field ``x`` (a key of ``TYPES``)."""
    extra: str | None = None
    """``"required"`` or ``"optional"``: its model has a field ``y`` of that kind."""
    version: str | None = None
    """Its ``versions=`` entry (a prompt or logic change)."""
    asks: int = 0
    """How many ``interrupt()``s it asks, in order, before it returns."""
    route: str = "edge"
    """``"edge"`` (static edges), ``"cond"`` (a conditional edge) or ``"command"``
    (``Command(goto=...)``); only a layer of one node routes other than by edges."""
    shared: bool = False
    """It writes the ``out`` channel, typed as the union of all its writers' models."""
    key: str | None = None
    """The channel it writes (and its model's and log entries' name), when not its
    name: a node renamed keeps what it writes."""
    also: str | None = None
    """One more channel it writes, of a shape of ``ALSO``; the first node alone."""
    also_changed: bool = False
    """Release 2's form of that channel's classes: a required field added (to one member
    of the union; to ``reply``'s model; to the ``TypedDict`` item)."""

    @property
    def channel(self) -> str:
        return self.key or self.name


@dataclass(frozen=True)
class Fan:
    """A worker the single node of the layer before sends ``items`` ``Item``s to."""

    name: str
    items: int = 2
    x: str = "int"
    """The type of the ``Item``'s field ``x``: the ``Send`` argument's model."""


Layer = tuple[Node, ...] | Fan


@dataclass(frozen=True)
class Spec:
    """One release of an app."""

    layers: tuple[Layer, ...]
    messages: bool = False
    """Every node also appends an ``AIMessage`` (with a fixed id) to ``add_messages``."""
    renames: tuple[tuple[str, str], ...] = ()
    """``compile(renames=...)``: old node name -> new, for nodes this release renamed."""

    def nodes(self) -> list[Node | Fan]:
        return [n for layer in self.layers for n in members(layer)]

    def named(self, name: str) -> Node | Fan:
        (found,) = [n for n in self.nodes() if n.name == name]
        return found

    def versions(self) -> dict[str, str]:
        return {n.name: n.version for n in self.nodes() if isinstance(n, Node) and n.version}

    def with_node(self, which: str, **changes: Any) -> Spec:
        """This spec with node ``which`` changed."""

        def edit(layer: Layer) -> Layer:
            if isinstance(layer, Fan):
                return replace(layer, **changes) if layer.name == which else layer
            return tuple(replace(n, **changes) if n.name == which else n for n in layer)

        return replace(self, layers=tuple(edit(layer) for layer in self.layers))

    def renamed(self, old: str, new: str, *, declared: bool = True) -> Spec:
        """This spec with node ``old`` renamed ``new``, writing what it wrote; the rename
        given to ``compile`` (``renames=``) when ``declared``."""
        node = self.named(old)
        assert isinstance(node, Node), "a fan is not renamed"
        spec = self.with_node(old, name=new, key=node.channel)
        return replace(spec, renames=(*self.renames, (old, new))) if declared else spec


def models(spec: Spec) -> dict[str, type[BaseModel]]:
    """Per node (and per fan, its ``Item``), the model of its value."""
    made: dict[str, type[BaseModel]] = {}
    for n in spec.nodes():
        fields: dict[str, Any] = {"seed": (int, ...), "x": (_ANNOTATIONS[n.x], ...)}
        if isinstance(n, Node) and n.extra:
            fields["y"] = (int, ...) if n.extra == "required" else (int | None, None)
        made[n.name] = model(f"Oracle_{n.channel if isinstance(n, Node) else n.name}", **fields)
    return made


def changed_nodes(old: Spec, new: Spec) -> set[str]:
    """The nodes of ``old`` whose stored work ``new`` makes stale: what they wrote
    changed (its model, or a ``versions`` entry), or where they route (a node inserted or
    removed after them); a fan's sender too, when the ``Item`` it sends changed. Named
    as in ``old``: a node renamed with ``renames=`` is the same node, one renamed
    without it a node removed and another inserted."""
    was = {now: before for before, now in new.renames}
    kept = {n.name for n in old.nodes()} & {was.get(n.name, n.name) for n in new.nodes()}
    stale: set[str] = set()
    for spec in (old, new):
        for i, layer in enumerate(spec.layers):
            if i and any(was.get(n.name, n.name) not in kept for n in members(layer)):
                stale |= {was.get(m.name, m.name) for m in members(spec.layers[i - 1])} & kept
    for i, layer in enumerate(new.layers):
        for now in members(layer):
            name = was.get(now.name, now.name)
            if name not in kept:
                continue
            before = old.named(name)
            if before != as_named(now, before):
                stale.add(name)
                if isinstance(now, Fan):
                    stale |= {was.get(m.name, m.name) for m in members(new.layers[i - 1])}
    return stale


def as_named(now: Node | Fan, before: Node | Fan) -> Node | Fan:
    """``now`` as ``before`` named it (and its channel): equal when only renamed."""
    if isinstance(now, Node) and isinstance(before, Node):
        return replace(now, name=before.name, key=before.key)
    return now


def members(layer: Layer) -> tuple[Node | Fan, ...]:
    return (layer,) if isinstance(layer, Fan) else layer


@dataclass
class Counted:
    """What a built graph did: executions per node; which node crashes, and the events
    its crash waits on (new ones each time it is armed, for the run about to start)."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.crash: str | None = None
        self.finished: defaultdict[str, threading.Event] = defaultdict(threading.Event)
        self.returned = threading.Semaphore(0)

    def arm(self, crash: str | None) -> None:
        """From now on ``crash`` raises ``Crash`` once its siblings finished; for a fan,
        its first item does, once the other items finished."""
        self.crash = crash
        self.finished = defaultdict(threading.Event)
        self.returned = threading.Semaphore(0)


def _state(spec: Spec, made: Mapping[str, type[BaseModel]]) -> type:
    fields: dict[str, Any] = {"doc": str, "log": Annotated[list[str], operator.add]}
    if any(isinstance(n, Fan) for n in spec.nodes()):
        fields["results"] = Annotated[list[str], operator.add]
    if spec.messages:
        fields["msgs"] = Annotated[list[AnyMessage], add_messages]
    shared = [made[n.name] for n in spec.nodes() if isinstance(n, Node) and n.shared]
    if shared:
        union: Any = shared[0]
        for writer in shared[1:]:
            union = union | writer
        fields["out"] = union
    for n in spec.nodes():
        if isinstance(n, Node) and not n.shared:
            fields[n.channel] = made[n.name]
        if isinstance(n, Node) and n.also:
            fields[_ALSO_CHANNEL[n.also]] = _also_type(n)
    return TypedDict("OracleState", fields, total=False)  # type: ignore[operator]


def _also_classes(n: Node) -> dict[str, Any]:
    """The classes of ``n.also``'s channel, by name, as the release ``n`` is of defines
    them; bound in their module, as a deploy does (one version of a class per process)."""
    more: dict[str, Any] = {"score": (int, ...)} if n.also_changed else {}
    made: dict[str, Any] = {}
    if n.also == "union":
        made = {"A": model("Oracle_PickA", text=(str, ...), **more)}
        made["B"] = model("Oracle_PickB", text=(str, ...))
    elif n.also == "root":
        made = {"tags": OracleTags}
    elif n.also == "replaced":
        made = {"reply": model("Oracle_Reply", seed=(int, ...), **more)}
    elif n.also == "typeddict":
        keys = {"text": str, "score": int} if n.also_changed else {"text": str}
        note = TypedDict("Oracle_Note", keys)  # type: ignore[operator]
        note.__module__ = MODULE
        made = {"note": note}
    module = sys.modules.setdefault(MODULE, types.ModuleType(MODULE))
    for cls in made.values():
        if cls is not OracleTags:
            setattr(module, cls.__name__, cls)
    return made


def _also_type(n: Node) -> Any:
    made = list(_also_classes(n).values())
    if n.also in ("union", "typeddict"):  # a reducer of the items
        item: Any = made[0] | made[1] if n.also == "union" else made[0]
        return Annotated[list[item], operator.add]
    return made[0]


def _also_update(n: Node, doc: str, seed: int) -> dict[str, Any]:
    """What ``n`` writes to its ``also`` channel; each item tagged with its turn's input
    and its class (``final`` keeps the last turn's; ``converted`` finds a changed class)."""
    made = _also_classes(n)
    more = {"score": seed} if n.also_changed else {}
    if n.also == "union":
        picks = [made["A"](text=f"{doc}/A:{seed}", **more), made["B"](text=f"{doc}/B:{seed}")]
        return {"picks": picks}
    if n.also == "root":
        return {"tags": OracleTags([doc, str(seed)])}
    if n.also == "replaced":
        return {"reply": made["reply"](seed=seed, **more)}
    return {"notes": [made["note"](text=f"{doc}/note:{seed}", **more)]}


def converted(values: Mapping[str, Any]) -> list[str]:
    """The items of ``picks`` stored as another member of the union than their own."""
    return [
        f"{type(item).__name__}:{item.text}"
        for item in values.get("picks", ())
        if not type(item).__name__.endswith(item.text.split("/")[-1].split(":")[0])
    ]


def build(spec: Spec, counted: Counted) -> StateGraph[Any, Any, Any, Any]:
    """The graph ``spec`` describes, counting into ``counted``."""
    made = models(spec)
    schema = _state(spec, made)
    builder = StateGraph(schema)
    layers = spec.layers
    for i, layer in enumerate(layers):
        after = layers[i + 1] if i + 1 < len(layers) else None
        if isinstance(layer, Fan):
            builder.add_node(layer.name, _worker(layer, counted, made[layer.name]))
            continue
        reads = _channels(layers[i - 1]) if i else []
        siblings = [n.name for n in layer]
        for n in layer:
            goto = _goto(after, made) if n.route == "command" else None
            fn = _node(n, spec, counted, made[n.name], reads, siblings, goto)
            if goto is not None:  # where it may go, as LangGraph reads it (and stamps it)
                fn.__annotations__ = {"return": Command[Literal[tuple(_names(after))]]}  # type: ignore[misc]
            elif n.also == "replaced":  # reads the input alone, writes ``reply`` each call
                written = "out" if n.shared else n.channel
                reply = {"reply": _also_type(n), written: schema.__annotations__[written]}
                fn.__annotations__ = {
                    "state": TypedDict("OracleInput", {"doc": str}, total=False),  # type: ignore[operator]
                    "return": TypedDict("OracleReplies", reply),  # type: ignore[operator]
                }
            builder.add_node(n.name, fn)
    for name in _names(layers[0]):
        builder.add_edge(START, name)
    for i, layer in enumerate(layers):
        after = layers[i + 1] if i + 1 < len(layers) else None
        names = _names(layer)
        route = layer[0].route if isinstance(layer, tuple) and len(layer) == 1 else "edge"
        if route == "cond" or isinstance(after, Fan):
            builder.add_conditional_edges(names[0], _goto(after, made), _names(after))
        elif route == "edge":
            for target in _names(after):
                builder.add_edge(names if len(names) > 1 and target != END else names[0], target)
            for name in names[1:] if after is None else ():
                builder.add_edge(name, END)
    return builder


def _names(layer: Layer | None) -> list[str]:
    return [m.name for m in members(layer)] if layer is not None else [END]


def _channels(layer: Layer) -> list[str]:
    found = [m.channel if isinstance(m, Node) else m.name for m in members(layer)]
    return found + ["tags" for m in members(layer) if isinstance(m, Node) and m.also == "root"]


def _goto(after: Layer | None, made: Mapping[str, type[BaseModel]]) -> Any:
    """Where a node routes on: the next layer, or a ``Send`` per item of a fan."""

    def route(state: Any) -> Any:
        if isinstance(after, Fan):
            item = made[after.name]
            seeds = [len(state.get("doc", "")) + _ITEM * k for k in range(after.items)]
            return [Send(after.name, item(seed=s, x=TYPES[after.x](s))) for s in seeds]
        return _names(after)

    return route


def _seed(state: Mapping[str, Any], reads: list[str]) -> int:
    seed = len(state.get("doc", ""))
    for name in reads:
        value = state.get(name)
        # ``tags`` read as the model it was written as (a list lacks ``root``).
        seed += len(value.root) if name == "tags" else int(getattr(value, "seed", 0) or 0)
    return seed


def _node(
    n: Node,
    spec: Spec,
    counted: Counted,
    made: type[BaseModel],
    reads: list[str],
    siblings: list[str],
    goto: Any,
) -> Callable[[Any], Any]:
    def fn(state: Any) -> Any:
        counted.runs[n.name] += 1
        try:
            answers = [str(interrupt(f"{n.channel}?{k}")) for k in range(n.asks)]
            if counted.crash == n.name:
                _after_siblings(n.name, siblings, counted)
                raise Crash(n.name)
        finally:
            counted.finished[n.name].set()
        seed = _seed(state, reads) + sum(map(len, answers))
        fields: dict[str, Any] = {"seed": seed, "x": TYPES[n.x](seed)}
        if n.extra == "required":
            fields["y"] = seed
        update: dict[str, Any] = {
            "out" if n.shared else n.channel: made(**fields),
            "log": [f"{state.get('doc')}/{n.channel}:{seed}:{','.join(answers)}"],
        }
        if n.also:
            update.update(_also_update(n, str(state.get("doc")), seed))
        if spec.messages:
            update["msgs"] = [AIMessage(content=n.channel, id=f"{n.channel}-{state.get('doc')}")]
        if goto is not None:
            return Command(update=update, goto=goto(state))
        return update

    fn.__name__ = n.name
    return fn


def _after_siblings(name: str, siblings: list[str], counted: Counted) -> None:
    """Crash once the parallel siblings finished (and LangGraph stored their writes), so
    that the crash cuts short this task alone."""
    others = [counted.finished[other] for other in siblings if other != name]
    if others:
        assert all(event.wait(10) for event in others), "a sibling never finished"
        time.sleep(0.1)


def _worker(fan: Fan, counted: Counted, carries: type[BaseModel]) -> Callable[[Any], Any]:
    def fn(item: Any) -> dict[str, Any]:
        counted.runs[fan.name] += 1
        if counted.crash == fan.name and item.seed < _ITEM:  # the first item
            for _ in range(fan.items - 1):
                assert counted.returned.acquire(timeout=10), "the other items never finished"
            time.sleep(0.1)
            raise Crash(fan.name)
        counted.returned.release()
        return {"results": [f"{item.seed % _ITEM}/{fan.name}:{type(item).__name__}:{item.x!r}"]}

    fn.__name__ = fan.name
    # What a ``Send`` carries, as LangGraph reads a node's input schema.
    fn.__annotations__ = {"item": carries, "return": dict[str, Any]}
    return fn
