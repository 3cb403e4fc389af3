"""Garbage in checkpoint metadata, and threads that belong to another graph.

Stamps come from storage, so anything can be there. Garbage is written two ways:
through LangGraph's real write path (a plainly compiled graph of the same builder,
the garbage in its config metadata: a neograph-ext graph would put its own stamp
back), and, for values LangGraph would never write (JSON objects, lists, null), by
rewriting the metadata column of the SQLite file directly. Most garbage has the
shape of 0.1.0's stamp, a whole description in metadata, still read today. Whole
metadata columns are overwritten too (SQLite and PostgreSQL): what decodes but is not a
mapping is unverified, what the saver cannot decode is one documented error. Well-formed
stamps whose type signatures are hostile (exponential to render) must still be explained
in bounded text.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import io
import json
import logging
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import StateGraph

import neograph_ext as ne
from neograph_ext.decision import _stamp
from neograph_ext.decision._fingerprint import digest
from neograph_ext.decision._stamp import MAX_STAMP_CHARS, STAMP_KEY, read_stamp
from neograph_ext.decision._typediff import MAX_LINE, MAX_LINES
from tests.drive import Drive
from tests.graphs.pipelines import wire
from tests.graphs.signatures import chain
from tests.reliability import harness as h
from tests.reliability import worker
from tests.reliability.worker import INPUT, NODES

V2 = "c=float"
CRASH_AT = "e"
"""Writing the garbage run stops here, so the thread is left incomplete."""

Raw = Callable[[dict[str, Any]], Any]
"""Makes the stored value from the real stamp (as a dict)."""


@dataclass(frozen=True)
class Garbage:
    name: str
    make: Raw
    reason: str | None
    """``format``, ``version``, ``invalid``; None: read as no stamp at all."""
    direct: bool = False
    """Write it into the SQLite file directly (LangGraph would not write it)."""


def _j(value: Any) -> Raw:
    return lambda _: value


def _edit(change: Callable[[dict[str, Any]], None]) -> Raw:
    """The real stamp, edited, as JSON (its id is not recomputed)."""

    def make(stamp: dict[str, Any]) -> str:
        copy = json.loads(json.dumps(stamp))
        change(copy)
        return json.dumps(copy, ensure_ascii=False)

    return make


def _set(path: str, value: Any) -> Raw:
    def change(stamp: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target = stamp
        for key in parents:
            target = target[key]
        target[last] = value

    return _edit(change)


HEX = "0123456789abcdef" * 4
DEEP = 100_000
TEN_MB = 10_000_000

GARBAGE = [
    # Not a JSON object, or not a string at all: "format".
    Garbage("empty", _j(""), "format"),
    Garbage("prose", _j("not json at all"), "format"),
    Garbage("truncated", lambda s: json.dumps(s)[:-7], "format"),
    Garbage("python-repr", lambda s: repr(s), "format"),
    Garbage("json-list", _j("[1, 2, 3]"), "format"),
    Garbage("json-null", _j("null"), "format"),
    Garbage("json-number", _j("42"), "format"),
    Garbage("json-string", _j('"a string"'), "format"),
    Garbage("json-true", _j("true"), "format"),
    Garbage("nan", _j("NaN"), "format"),
    Garbage("int-too-long", _j("1" * 5_000), "format"),
    Garbage("deep-arrays", _j("[" * DEEP + "]" * DEEP), "format"),
    Garbage("deep-objects", _j('{"v":1,"x":' + '{"a":' * DEEP + "1" + "}" * DEEP + "}"), "format"),
    Garbage("10MB-string", _j("x" * TEN_MB), "format"),
    Garbage("10MB-json", lambda s: json.dumps({**s, "pad": "x" * TEN_MB}), "format"),
    Garbage("control-chars", _j("\x01\x02\x1b[31m\x7f"), "format"),
    Garbage("nul", _j("\x00"), "format", direct=True),
    Garbage("bom", _j("\ufeff{}"), "format"),
    Garbage("lone-surrogate", _j("\udc80"), "format", direct=True),
    Garbage(
        "huge-int-inside", lambda s: json.dumps(s)[:-1] + ', "n": ' + "9" * 5_000 + "}", "format"
    ),
    Garbage("number", _j(42), "format"),
    Garbage("float", _j(3.5), "format"),
    Garbage("bool", _j(True), "format"),
    Garbage("object-not-string", lambda s: s, "format", direct=True),
    Garbage("list-not-string", _j([1, "a", None]), "format", direct=True),
    Garbage(
        "nested-object", _j(json.loads('{"a":' * 200 + "1" + "}" * 200)), "format", direct=True
    ),
    Garbage("null", _j(None), None, direct=True),
    # A JSON object of an unknown format version: "version".
    Garbage("empty-object", _j("{}"), "version"),
    Garbage("v2", _set("v", 2), "version"),
    Garbage("v0", _set("v", 0), "version"),
    Garbage("v-negative", _set("v", -1), "version"),
    Garbage("v-string", _set("v", "1"), "version"),
    Garbage("v-null", _set("v", None), "version"),
    Garbage("v-list", _set("v", [1]), "version"),
    Garbage("v-object", _set("v", {"v": 1}), "version"),
    Garbage("v-infinity", _j('{"v": 1e999}'), "version"),
    Garbage("v-uppercase-key", _j('{"V": 1}'), "version"),
    # A version equal to 1 but not the integer 1 is another format.
    Garbage("v-true-tampered", _edit(lambda s: s.update(v=True, id="0" * 64)), "version"),
    Garbage("v-float-tampered", _edit(lambda s: s.update(v=1.0, id="0" * 64)), "version"),
    # The right version, the wrong shape or contents: "invalid".
    Garbage("v-only", _j('{"v": 1}'), "invalid"),
    Garbage("id-tampered", _set("id", "f" * 64), "invalid"),
    Garbage("id-uppercase", lambda s: _set("id", s["id"].upper())(s), "invalid"),
    Garbage("id-non-hex", _set("id", "z" * 64), "invalid"),
    Garbage("id-63", lambda s: _set("id", s["id"][:63])(s), "invalid"),
    Garbage("id-65", lambda s: _set("id", s["id"] + "0")(s), "invalid"),
    Garbage("id-number", _set("id", 12345), "invalid"),
    Garbage("id-fullwidth-digits", _set("id", "\uff11" * 64), "invalid"),
    Garbage("id-arabic-digits", _set("id", "\u0663" * 64), "invalid"),
    Garbage("id-nul", lambda s: _set("id", s["id"][:63] + "\x00")(s), "invalid"),
    Garbage("id-lone-surrogate-escape", _j('{"v": 1, "id": "\\udc80"}'), "invalid"),
    Garbage("fp-non-hex", _set("nodes/a/fp", "g" * 64), "invalid"),
    Garbage("fp-short", _set("nodes/a/fp", "a" * 10), "invalid"),
    Garbage("fp-number", _set("nodes/a/fp", 7), "invalid"),
    Garbage("out-number", _set("nodes/a/out", 0), "invalid"),
    Garbage("ver-number", _set("nodes/a/ver", 5), "invalid"),
    Garbage("ver-too-long", _set("nodes/a/ver", "v" * 5_000), "invalid"),
    Garbage("succ-string", _set("nodes/a/succ", "b"), "invalid"),
    Garbage("succ-numbers", _set("nodes/a/succ", [1, 2]), "invalid"),
    Garbage("nodes-list", _set("nodes", ["a", "b"]), "invalid"),
    Garbage("node-not-object", _set("nodes/a", "fp"), "invalid"),
    Garbage("node-extra-key", _set("nodes/a/exec", "__import__('os')"), "invalid"),
    Garbage("node-name-empty", _set("nodes/", {"fp": HEX}), "invalid"),
    Garbage("node-name-huge", _set("nodes/" + "n" * 2_000, {"fp": HEX}), "invalid"),
    Garbage("node-name-rtl-zwsp", _set("nodes/\u202ea\u200b", {"fp": HEX}), "invalid"),
    Garbage("node-name-emoji-nul", _set("nodes/\U0001f4a5\x00", {"fp": HEX}), "invalid"),
    Garbage("channels-string", _set("channels", "log"), "invalid"),
    Garbage("channel-number", _set("channels/log", 1), "invalid"),
    Garbage("sigs-list", _set("sigs", []), "invalid"),
    Garbage("sig-key-not-hex", _set("sigs/os.system", {}), "invalid"),
    Garbage("sig-not-object", _set("sigs/" + HEX, "os:system"), "invalid"),
    Garbage("extra-top-key", _set("__class__", "subprocess.Popen"), "invalid"),
    Garbage("missing-nodes", _edit(lambda s: s.pop("nodes")), "invalid"),
    Garbage("missing-id", _edit(lambda s: s.pop("id")), "invalid"),
    Garbage(
        "deep-sig", _set("sigs/" + HEX, json.loads('{"a":' * 500 + "1" + "}" * 500)), "invalid"
    ),
]

DIRECT = "UPDATE checkpoints SET metadata = ? WHERE thread_id = ? AND checkpoint_id = ?"


@pytest.fixture(scope="module")
def real_stamp() -> dict[str, Any]:
    code = worker.parse_code(None)
    with SqliteSaver.from_conn_string(":memory:") as saver:
        graph = worker.compiled(saver, worker.build(Path(os.devnull), code), code)
    stamp: dict[str, Any] = json.loads(graph.neograph_ext_stamp.encode())
    return stamp


@pytest.fixture
def lite(sqlite_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(sqlite_path)) as sqlite_saver:
        yield sqlite_saver


def graph_of(
    saver: BaseCheckpointSaver[Any], log: Path, code: str | None = None, **options: Any
) -> Any:
    parsed = worker.parse_code(code)
    return worker.compiled(saver, worker.build(log, parsed, **options), parsed)


def plain_of(saver: BaseCheckpointSaver[Any], log: Path, **options: Any) -> Any:
    """The same graph compiled by plain LangGraph: it writes whatever metadata it is given."""
    return worker.build(log, worker.parse_code(None), **options).compile(checkpointer=saver)


def write_garbage(saver: SqliteSaver, log: Path, thread: str, garbage: Garbage, stamp: Any) -> None:
    """Run the graph until it crashes at ``CRASH_AT``, every checkpoint carrying the garbage."""
    value = garbage.make(stamp)
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    if not garbage.direct:
        config["metadata"] = {STAMP_KEY: value}
    with pytest.raises(RuntimeError, match="crash"):
        plain_of(saver, log, crash_at=CRASH_AT).invoke(dict(INPUT), config, durability="sync")
    if garbage.direct:
        for tup in saver.list({"configurable": {"thread_id": thread}}):
            metadata = dict(tup.metadata or {})
            metadata[STAMP_KEY] = value
            row = json.dumps(metadata).encode()
            saver.conn.execute(DIRECT, (row, thread, tup.checkpoint["id"]))
        saver.conn.commit()
    stored = [
        (t.metadata or {}).get(STAMP_KEY)
        for t in saver.list({"configurable": {"thread_id": thread}})
    ]
    assert stored and all(s == value for s in stored), "the garbage did not reach the checkpoints"


def test_there_are_at_least_fifty_kinds_of_garbage() -> None:
    assert len(GARBAGE) >= 50
    assert len({g.name for g in GARBAGE}) == len(GARBAGE)


@pytest.mark.parametrize("garbage", GARBAGE, ids=[g.name for g in GARBAGE])
def test_garbage_stamps_are_unverified_never_rewound(
    garbage: Garbage,
    lite: SqliteSaver,
    real_stamp: dict[str, Any],
    log: Path,
    thread: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_garbage(lite, log, thread, garbage, real_stamp)
    kept = {t.checkpoint["id"] for t in lite.list({"configurable": {"thread_id": thread}})}
    before = h.counts(log)
    config = {"configurable": {"thread_id": thread}}
    caplog.set_level(logging.DEBUG, logger="neograph_ext")  # plan() logs at DEBUG

    # Under the same code and under changed code, garbage is never a reason to rewind.
    for code in (None, V2):
        try:
            plan = ne.plan(graph_of(lite, log, code), config)
        except ne.CheckpointSchemaError:
            continue
        assert plan.kind is ne.PlanKind.UNVERIFIED, plan
        expected = (
            f"stamp not trusted ({garbage.reason})" if garbage.reason else "written without a stamp"
        )
        assert any(expected in note for note in plan.notes), plan.notes
        assert any(expected in r.getMessage() for r in caplog.records), caplog.text

    # The run resumes as LangGraph would: the crashed node and what follows, once.
    result = ne.run(graph_of(lite, log, V2), dict(INPUT), config)

    assert h.since(log, before) == {CRASH_AT: 1, "f": 1}
    assert result["f"] == h.reference()["f"], "the garbage changed what ran"
    assert kept <= {t.checkpoint["id"] for t in lite.list({"configurable": {"thread_id": thread}})}


M = "m:Model"
SIGNATURE_GARBAGE: list[Any] = [
    {},
    {"root": None},
    {"root": 5},
    {"root": True},
    {"root": 1e308},
    {"root": ""},
    {"root": ":"},
    {"root": "x" * 100_000},
    {"root": {"a": 1}},
    {"root": [1, 2, 3]},
    {"root": [[[[[]]]]]},
    {"root": ["list"]},
    {"root": ["list", 5]},
    {"root": ["Union"]},
    {"root": ["Literal", {"a": []}]},
    {"root": ["Annotated", "int", 5]},
    {"root": M, "defs": 5},
    {"root": M, "defs": [M]},
    {"root": M, "defs": {M: 5}},
    {"root": M, "defs": {M: None}},
    {"root": M, "defs": {M: {"origin": 5, "args": 3}}},
    {"root": M, "defs": {M: {"origin": "x:y", "args": 3}}},
    {"root": M, "defs": {M: {"origin": M, "args": [M]}}},
    {"root": M, "defs": {M: {"kind": "pydantic", "fields": 5}}},
    {"root": M, "defs": {M: {"kind": "pydantic", "fields": {"x": 5}}}},
    {"root": M, "defs": {M: {"kind": "pydantic", "fields": {"x": {"t": [1], "req": "yes"}}}}},
    {"root": M, "defs": {M: {"kind": "pydantic", "fields": {"x": {"t": M, "req": True}}}}},
    {"root": M, "defs": {M: {"kind": "enum", "members": 5}}},
    {"root": M, "defs": {M: {"kind": "enum", "members": {"A": [1], "B": {"x": None}}}}},
    {"root": M, "defs": {M: {"kind": "typeddict"}}},
]
"""Type signatures of a stamp whose id matches: the id covers the fingerprints, not
the signatures kept to explain them, so these reach the code that writes diffs."""


@pytest.mark.parametrize(
    "signature", SIGNATURE_GARBAGE, ids=[f"sig-{i}" for i in range(len(SIGNATURE_GARBAGE))]
)
def test_garbage_type_signatures_never_break_planning(
    signature: Any, lite: SqliteSaver, real_stamp: dict[str, Any], log: Path, thread: str
) -> None:
    stamp = json.loads(json.dumps(real_stamp))
    out = stamp["nodes"]["c"]["out"]
    stamp["sigs"] = {out: signature}
    raw = json.dumps(stamp)
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    plain_of(lite, log).invoke(dict(INPUT), {**config, "metadata": {STAMP_KEY: raw}})

    try:
        plan = ne.plan(graph_of(lite, log, V2), config)
    except ne.CheckpointSchemaError:
        return
    # Either the stamp is trusted (its fingerprints are intact: rewind ``c``, explained
    # without field detail) or refused as a whole (unverified); never an exception.
    assert plan.kind in (ne.PlanKind.REWIND, ne.PlanKind.UNVERIFIED), plan
    if plan.kind is ne.PlanKind.REWIND:
        assert plan.invalidated_nodes == {"c"}
        assert str(plan)


def test_read_stamp_refuses_oversize_stamps_unparsed(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    real_loads = json.loads
    monkeypatch.setattr(_stamp.json, "loads", lambda s, **k: parsed.append(len(s)) or real_loads(s))

    found = read_stamp("[" * (MAX_STAMP_CHARS + 1))

    assert isinstance(found, _stamp.Unreadable) and found.reason == "format"
    assert parsed == [], "an oversize stamp was parsed"


EVIL_MODULE = "neograph_evil_probe"


def _evil_stamp(stamp: dict[str, Any], tmp_path: Path) -> str:
    """A well-formed stamp (its id matches) whose strings look like code and paths.

    Node ``c`` claims another fingerprint, so planning reads these strings to explain
    the change: the most any stamp content is ever used for.
    """
    evil = {
        "py": f"__import__('os').system('touch {tmp_path / 'pwned-system'}')",
        "import": f"{EVIL_MODULE}:Payload",
        "module": f"{EVIL_MODULE}.submodule",
        "path": str(tmp_path / "pwned-path"),
        "traversal": "../../../../etc/passwd",
        "lc": {"lc": 1, "type": "constructor", "id": [EVIL_MODULE, "Payload"], "kwargs": {}},
        "pickle": "gASVIAAAAAAAAACMBXBvc2l4lIwGc3lzdGVtlJOUjAVlY2hvIJSFlFKULg==",
    }
    sig = {
        "root": evil["import"],
        "defs": {
            evil["import"]: {
                "kind": "model",
                "fields": {name: {"type": text} for name, text in evil.items()},
            },
            evil["module"]: {"origin": evil["import"], "args": [evil["py"], evil["lc"]]},
        },
    }
    return _well_formed(stamp, sig, ver=evil["py"])


def _well_formed(stamp: dict[str, Any], sig: dict[str, Any], **node: Any) -> str:
    """The stamp with node ``c`` claiming another fingerprint and output signature ``sig``,
    its digests and id recomputed so that it is trusted."""
    copy = json.loads(json.dumps(stamp))
    sig_key = digest(sig)  # keys are the digests of the signatures: keep it consistent
    copy["sigs"][sig_key] = sig
    copy["nodes"]["c"].update(fp="d" * 64, out=sig_key, **node)
    copy["id"] = _stamp.stamp_id(
        {k: _stamp.NodeStamp.model_validate_json(json.dumps(v)) for k, v in copy["nodes"].items()},
        copy["channels"],
    )
    raw = json.dumps(copy)
    assert isinstance(read_stamp(raw), _stamp.Stamp), "the stamp must be well-formed"
    return raw


def test_stamp_strings_are_never_imported_evaluated_or_used_as_paths(
    lite: SqliteSaver,
    real_stamp: dict[str, Any],
    log: Path,
    thread: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = _evil_stamp(real_stamp, tmp_path)
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    plain_of(lite, log).invoke(dict(INPUT), {**config, "metadata": {STAMP_KEY: raw}})
    imported: list[str] = []
    opened: list[str] = []
    real_import, real_import_module, real_open = (
        builtins.__import__,
        importlib.import_module,
        io.open,
    )

    def spy_import(name: str, *args: Any, **kwargs: Any) -> Any:
        imported.append(name)
        return real_import(name, *args, **kwargs)

    def spy_import_module(name: str, *args: Any, **kwargs: Any) -> Any:
        imported.append(name)
        return real_import_module(name, *args, **kwargs)

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"stamp content evaluated: {args!r:.200}")

    graph = graph_of(lite, log, V2)
    modules = set(sys.modules)
    with monkeypatch.context() as m:
        m.setattr(builtins, "__import__", spy_import)
        m.setattr(importlib, "import_module", spy_import_module)
        m.setattr(builtins, "open", spy_open)
        m.setattr(io, "open", spy_open)
        m.setattr(builtins, "eval", forbidden)
        m.setattr(builtins, "exec", forbidden)
        m.setattr(builtins, "compile", forbidden)
        plan = ne.plan(graph, config)
        explained = str(plan)

    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    assert "__import__('os')" in explained, "the stamp's strings are shown as text"
    assert not [name for name in imported if EVIL_MODULE in name or name in ("os", "pickle")]
    assert EVIL_MODULE not in sys.modules and set(sys.modules) - modules == set()
    assert not [path for path in opened if "pwned" in path or "passwd" in path]
    assert not list(tmp_path.glob("pwned*"))


def test_a_stamp_of_deeply_nested_generics_is_explained_in_bounded_text(
    lite: SqliteSaver, real_stamp: dict[str, Any], log: Path, thread: str
) -> None:
    # 40 parametrised classes each naming the previous one twice: a few kilobytes that
    # read, in full, as 2**40 class names.
    raw = _well_formed(real_stamp, chain(40))
    assert len(raw) < 20_000
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    plain_of(lite, log).invoke(dict(INPUT), {**config, "metadata": {STAMP_KEY: raw}})
    before = h.counts(log)

    plan = ne.plan(graph_of(lite, log, V2), config)
    explained = str(plan)
    result = ne.run(graph_of(lite, log, V2), None, config)

    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"c"}
    assert "Pair[Pair[Pair[" in explained and "…" in explained, explained
    assert len(explained) < 10 * (MAX_LINES + 1) * MAX_LINE
    assert h.since(log, before) == {name: 1 for name in "cef"}
    assert result["f"] == h.reference(V2)["f"]


def _foreign_builder(log: Path) -> StateGraph[Any, Any, Any, Any]:
    builder = StateGraph(worker.State)
    for name in ("x", "y"):

        def node(state: worker.State, name: str = name) -> dict[str, Any]:
            worker.record(log, name)
            return {"log": [name]}

        builder.add_node(name, node)
    wire(builder, "x", "y")
    return builder


def test_a_thread_of_another_graph_is_refused_naming_both_graphs(
    db: str, thread: str, log: Path
) -> None:
    config = {"configurable": {"thread_id": thread}}
    with worker.open_saver(db) as saver:
        ne.run(ne.compile(_foreign_builder(log), checkpointer=saver), dict(INPUT), config)
        kept = h.checkpoint_ids(db, thread)
        before = h.counts(log)
        graph = graph_of(saver, log)

        plan = ne.plan(graph, config)
        with pytest.raises(ne.CheckpointSchemaError) as caught:
            ne.run(graph, dict(INPUT), config)

    assert plan.blocker is not None
    message = str(caught.value)
    assert "['x', 'y']" in message, message
    assert str(sorted(NODES)) in message, message
    assert h.since(log, before) == {}, "a node ran"
    assert h.checkpoint_ids(db, thread) == kept, "something was written"


@dataclass(frozen=True)
class BadMetadata:
    name: str
    stored: bytes
    """The metadata column's new content (JSON text; SQLite stores the bytes as they are)."""
    note: str | None
    """The plan's note when only older checkpoints hold it; None: they cannot be decoded."""
    postgres: bool = True
    """PostgreSQL's ``jsonb`` can hold it (not invalid JSON, nor non-UTF-8 text)."""


NESTED = 5_000
BAD_METADATA = [
    BadMetadata("int", b"42", "metadata is a int, not a mapping"),
    BadMetadata("zero", b"0", "metadata is a int, not a mapping"),
    BadMetadata("float", b"1.5", "metadata is a float, not a mapping"),
    BadMetadata("list", b'[1, "a"]', "metadata is a list, not a mapping"),
    BadMetadata("empty-list", b"[]", "metadata is a list, not a mapping"),
    BadMetadata("string", b'"text"', "metadata is a str, not a mapping"),
    BadMetadata("null", b"null", "written without a stamp"),
    BadMetadata("no-step", b'{"source": "loop"}', "written without a stamp"),
    BadMetadata("nested-arrays", b"[" * NESTED + b"]" * NESTED, None),
    BadMetadata("nested-objects", b'{"a":' * NESTED + b"1" + b"}" * NESTED, None),
    BadMetadata("non-utf8", b'{"step": 1, "source": "\xff\xfe"}', None, postgres=False),
    BadMetadata("not-json", b"not json", None, postgres=False),
    BadMetadata("truncated", b'{"step": 1, "source": "lo', None, postgres=False),
]


def _corrupt(db: str, thread: str, bad: BadMetadata, *, keep: str | None) -> None:
    """Overwrite the metadata of every checkpoint of the thread but ``keep``, in place."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(
                "UPDATE checkpoints SET metadata = %s::jsonb "
                "WHERE thread_id = %s AND checkpoint_id <> %s",
                (bad.stored.decode(), thread, keep or ""),
            )
        return
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute(
            "UPDATE checkpoints SET metadata = ? WHERE thread_id = ? AND checkpoint_id <> ?",
            (bad.stored, thread, keep or ""),
        )
        conn.commit()


def _rows(db: str, thread: str) -> set[str]:
    """The thread's checkpoint ids, read without decoding anything."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            query = "SELECT checkpoint_id FROM checkpoints WHERE thread_id = %s"
            return {row[0] for row in conn.execute(query, (thread,))}
    with contextlib.closing(sqlite3.connect(db)) as conn:
        query = "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?"
        return {row[0] for row in conn.execute(query, (thread,))}


STORED_IN = [
    pytest.param(
        bad,
        kind,
        id=f"{bad.name}-{kind}",
        marks=(pytest.mark.postgres,) if kind == "postgres" else (),
    )
    for bad in BAD_METADATA
    for kind in ("sqlite", "postgres")
    if kind == "sqlite" or bad.postgres  # PostgreSQL's jsonb cannot hold the others
]


@pytest.mark.parametrize("where", ["every-checkpoint", "all-but-the-head"])
@pytest.mark.parametrize(("bad", "db"), STORED_IN, indirect=["db"])
def test_metadata_that_is_not_a_mapping_is_unverified_or_one_documented_error(
    drive: Drive, bad: BadMetadata, where: str, db: str, thread: str, log: Path
) -> None:
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    with worker.open_saver(db) as saver:
        with pytest.raises(RuntimeError, match="crash"):
            graph_of(saver, log, crash_at=CRASH_AT).invoke(dict(INPUT), config, durability="sync")
        head = saver.get_tuple(config)
    assert head is not None
    _corrupt(db, thread, bad, keep=head.checkpoint["id"] if where == "all-but-the-head" else None)
    kept, before = _rows(db, thread), h.counts(log)

    with drive.opened(lambda: worker.open_saver(db), lambda: worker.aopen_saver(db)) as saver:
        if where == "every-checkpoint" or bad.note is None:
            # Nothing to resume from: one error, naming the thread and the way out.
            for call in (
                lambda: drive.plan(graph_of(saver, log), config),
                lambda: drive.run(graph_of(saver, log), dict(INPUT), config),
            ):
                with pytest.raises(ne.UnreadableCheckpointError) as caught:
                    call()
                message = str(caught.value)
                assert repr(thread) in message and "new thread_id" in message, message
            assert h.since(log, before) == {}, "a node ran"
            assert _rows(db, thread) == kept, "something was written"
            return

        plan = drive.plan(graph_of(saver, log), config)
        assert plan.kind is ne.PlanKind.UNVERIFIED, plan
        assert any(bad.note in note for note in plan.notes), plan.notes
        # The head is intact: the run resumes as LangGraph would, from the crash.
        result = drive.run(graph_of(saver, log), dict(INPUT), config)

    assert h.since(log, before) == {CRASH_AT: 1, "f": 1}
    assert result["f"] == h.reference()["f"]
    assert kept <= _rows(db, thread)
