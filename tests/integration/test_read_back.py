"""Values that do not read back from a checkpoint as they were written, though no type
changed: found at compile time, on resume, and (opt-in) as they are written.

A local class cannot be imported even by the process that wrote it, so its tests run in
one process on every saver; a class of ``__main__`` and strict msgpack need a writer
and a resumer in processes of their own (``readback_app``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Overwrite
from pydantic import BaseModel, create_model

import neograph_ext as ne
from neograph_ext.decision._langgraph import MSGPACK_ALLOWLIST
from tests.drive import SYNC_ONLY, Drive, Saver

APP = Path(__file__).with_name("readback_app.py")
ROOT = APP.parents[2]


class Crash(RuntimeError):
    """``publish`` failing, as a process dying mid-run."""


class Kept(BaseModel):
    """An importable model: it reads back as itself."""

    text: str


def make(
    saver: BaseCheckpointSaver[Any],
    runs: Counter[str],
    *,
    crash: bool = False,
    local: bool = True,
    pydantic_state: bool = False,
    **options: Any,
) -> Any:
    """``write -> publish``, the model ``write`` stores defined inside this factory (as
    factories and tests do) unless ``local`` is False."""

    class Draft(BaseModel):
        text: str

    model = Draft if local else Kept

    # Functional syntax: the channel types are this call's.
    S = TypedDict("S", {"draft": model, "out": str}, total=False)  # type: ignore[misc]  # noqa: UP013
    P = create_model("P", draft=(model | None, None), out=(str | None, None))

    def write(state: Any) -> dict[str, Any]:
        runs["write"] += 1
        return {"draft": model(text="hello")}

    def publish(state: Any) -> dict[str, Any]:
        runs["publish"] += 1
        if crash:
            raise Crash("publish")
        draft = state.draft if isinstance(state, BaseModel) else state["draft"]
        return {"out": f"{type(draft).__name__}:{getattr(draft, 'text', None)}"}

    builder = StateGraph(P if pydantic_state else S)
    builder.add_sequence([write, publish]).add_edge(START, "write")
    return ne.compile(builder, checkpointer=saver, **options)


def crashed(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, **options: Any
) -> None:
    with pytest.raises(Crash):
        drive.run(make(saver, Counter(), crash=True, **options), {}, config)


def test_a_local_class_is_rewound_to_its_writer_on_resume(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashed(drive, saver, config)
    graph = make(saver, runs)
    plan = drive.plan(graph, config)
    assert plan.kind is ne.PlanKind.REWIND and plan.invalidated_nodes == {"write"}
    assert "node `write`: stored value of `draft` does not read back as `Draft`: got `dict`" in (
        str(plan)
    )
    result = drive.run(graph, None, config)
    assert result["out"] == "Draft:hello"  # without the check: 'dict:None'
    assert runs == Counter({"write": 1, "publish": 1})
    assert drive.plan(graph, config).kind is ne.PlanKind.UP_TO_DATE


def test_strict_mode_raises_naming_the_value(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    crashed(drive, saver, config)
    with pytest.raises(ne.CheckpointSchemaError) as caught:
        drive.run(make(saver, runs), None, config, resume=ne.ResumePolicy(on_change="raise"))
    assert caught.value.invalidated_nodes == {"write"}
    assert "stored value of `draft` does not read back as `Draft`: got `dict`" in str(caught.value)
    assert runs == Counter()


@SYNC_ONLY  # compile's own check: no driver runs
def test_compile_warns_once_per_type_and_strict_compile_raises(
    saver: BaseCheckpointSaver[Any], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="neograph_ext"):
        make(saver, Counter())
    warned = [r.getMessage() for r in caplog.records if "will not read back" in r.getMessage()]
    assert len(warned) == 1
    assert "make.<locals>.Draft" in warned[0] and "channel `draft`" in warned[0]
    assert "local class" in warned[0] and "top level of an importable module" in warned[0]
    with pytest.raises(ne.GraphError, match="local class"):
        make(saver, Counter(), resume=ne.ResumePolicy(on_change="raise"))


def test_no_false_alarm_for_values_that_read_back(
    drive: Drive, saver: Saver, config: RunnableConfig, caplog: pytest.LogCaptureFixture
) -> None:
    other: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-p"}
    }
    with caplog.at_level("WARNING", logger="neograph_ext"):
        crashed(drive, saver, config, local=False)
        crashed(drive, saver, other, pydantic_state=True)  # a local class, coerced on read
        for where, options in ((config, {"local": False}), (other, {"pydantic_state": True})):
            runs: Counter[str] = Counter()
            graph = make(saver, runs, **options)
            assert drive.plan(graph, where).kind is ne.PlanKind.CONTINUE
            assert drive.run(graph, None, where)["out"] in ("Kept:hello", "Draft:hello")
            assert runs == Counter({"publish": 1})  # write was not re-run
    assert not [r for r in caplog.records if "read back" in r.getMessage()]


def test_verify_writes_fails_the_step_before_its_writes_are_saved(
    drive: Drive, saver: BaseCheckpointSaver[Any], config: RunnableConfig, runs: Counter[str]
) -> None:
    graph = make(saver, runs, attach=[ne.WriteChecks(readback=True)])
    with pytest.raises(ne.WriteReadbackError) as caught:
        drive.run(graph, {}, config)
    message = str(caught.value)
    assert (
        "node `write` wrote to channel `draft`" in message and "Draft came back as dict" in message
    )
    assert runs == Counter({"write": 1})  # publish never ran
    stored = saver.get_tuple(config)
    assert stored is not None and "draft" not in stored.checkpoint["channel_values"]
    # An importable model passes; the saver given to compile stays the graph's own.
    kept: Counter[str] = Counter()
    other: RunnableConfig = {
        "configurable": {"thread_id": f"{config['configurable']['thread_id']}-k"}
    }
    checked = make(saver, kept, local=False, attach=[ne.WriteChecks(readback=True)])
    assert drive.run(checked, {}, other)["out"] == "Kept:hello"
    assert kept == Counter({"write": 1, "publish": 1}) and checked.checkpointer is saver


def test_a_value_other_than_the_declared_type_is_logged_once_per_node_and_process(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    graph = declaring(saver, runs)  # no verify_writes: every stamped graph checks
    with caplog.at_level("WARNING", logger="neograph_ext"):
        for n in range(2):
            drive.run(graph, {}, _thread(config, n))
        drive.invoke(graph.with_config(tags=["copy"]), {}, _thread(config, 2))  # a copy, plain call
    assert runs == Counter({"wrong": 3, "right": 3})
    assert _declared_logs(caplog) == [WRONG]
    # Only logged: the value is stored as LangGraph stores it.
    stored = saver.get_tuple(_thread(config, 1))
    assert stored is not None and stored.checkpoint["channel_values"]["draft"] == {"text": "dict"}


def test_verify_writes_also_judges_the_items_a_value_holds(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:
    graph = declaring(saver, runs, attach=[ne.WriteChecks(readback=True)])
    with caplog.at_level("WARNING", logger="neograph_ext"):
        for n in range(2):
            drive.run(graph, {}, _thread(config, n))
    assert runs == Counter({"wrong": 2, "right": 2})
    assert _declared_logs(caplog) == [
        WRONG,
        "node `right` declares `Kept` for `drafts` but wrote a `dict`: the fingerprint "
        "stamped for it describes the declared type, not what is stored; fix the annotation "
        "(or output_types) or the value (logged once per node and process)",
    ]


def test_a_reducers_update_is_judged_by_its_class_and_overwrite_is_unwrapped(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:

    def chat(state: Reduced) -> DeclaresReduced:
        runs["chat"] += 1
        # add_messages takes a tuple for a message: an update, not the channel's value.
        return {"messages": [("user", "hi")], "draft": Overwrite(Kept(text="k"))}  # type: ignore[list-item, typeddict-item]

    def wrong(state: Reduced) -> DeclaresReduced:
        runs["wrong"] += 1
        return {"draft": Overwrite({"text": "dict"})}  # type: ignore[typeddict-item]

    builder = StateGraph(Reduced).add_sequence([chat, wrong]).add_edge(START, "chat")
    with caplog.at_level("WARNING", logger="neograph_ext"):
        drive.run(
            ne.compile(builder, checkpointer=saver, attach=[ne.WriteChecks(readback=True)]),
            {},
            config,
        )
    assert runs == Counter({"chat": 1, "wrong": 1})
    assert _declared_logs(caplog) == [WRONG]


def test_no_log_for_a_key_a_pydantic_state_validates(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:

    def coerced(state: Validated) -> DeclaresKept:
        runs["coerced"] += 1
        return {"draft": {"text": "validated into a Kept on read"}}  # type: ignore[typeddict-item]

    builder = StateGraph(Validated).add_node(coerced).add_edge(START, "coerced")
    with caplog.at_level("WARNING", logger="neograph_ext"):
        drive.run(ne.compile(builder, checkpointer=saver), {}, config)
    assert runs == Counter({"coerced": 1}) and _declared_logs(caplog) == []


class Report(BaseModel):
    class Part(BaseModel):  # the serializer looks it up as `<module>.Part`: not found
        text: str

    parts: list[Part] = []


class Parts(TypedDict, total=False):
    part: Report.Part
    out: str


def test_a_nested_class_is_found_at_compile_time_and_rewound_on_resume(
    drive: Drive,
    saver: BaseCheckpointSaver[Any],
    config: RunnableConfig,
    caplog: pytest.LogCaptureFixture,
    runs: Counter[str],
) -> None:

    def write(state: Parts) -> dict[str, Any]:
        runs["write"] += 1
        return {"part": Report.Part(text="hello")}

    def publish(state: Parts) -> dict[str, Any]:
        runs["publish"] += 1
        if runs["publish"] == 1:
            raise Crash("publish")
        return {"out": type(state["part"]).__name__}

    builder = StateGraph(Parts).add_sequence([write, publish]).add_edge(START, "write")
    with caplog.at_level("WARNING", logger="neograph_ext"):
        graph = ne.compile(builder, checkpointer=saver)
    [warning] = [r.getMessage() for r in caplog.records if "will not read back" in r.getMessage()]
    assert "Report.Part" in warning and f"`{__name__}.Part` does not import it" in warning
    with pytest.raises(Crash):
        drive.run(graph, {}, config)
    assert drive.run(graph, None, config)["out"] == "Part"
    assert runs == Counter({"write": 2, "publish": 2})


class Loose(TypedDict, total=False):
    draft: Any
    kept: Any
    drafts: Any


class DeclaresKept(TypedDict, total=False):
    draft: Kept


class DeclaresKepts(TypedDict, total=False):
    kept: Kept
    drafts: list[Kept]


def _latest(old: Any, new: Any) -> Any:
    return new


class Reduced(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    draft: Annotated[Any, _latest]


class DeclaresReduced(TypedDict, total=False):
    messages: list[AnyMessage]
    draft: Kept


class Validated(BaseModel):
    draft: Kept | None = None


WRONG = (
    "node `wrong` declares `Kept` for `draft` but wrote a `dict`: the fingerprint stamped "
    "for it describes the declared type, not what is stored; fix the annotation (or "
    "output_types) or the value (logged once per node and process)"
)


def declaring(saver: BaseCheckpointSaver[Any], runs: Counter[str], **options: Any) -> Any:
    """``wrong -> right``: ``wrong`` declares a ``Kept`` and writes a dict; ``right``
    writes its declared ``Kept``, and dicts where it declares ``list[Kept]`` (a list,
    the right class: only ``verify_writes`` looks at the items)."""

    def wrong(state: Loose) -> DeclaresKept:
        runs["wrong"] += 1
        return {"draft": {"text": "dict"}}  # type: ignore[typeddict-item]

    def right(state: Loose) -> DeclaresKepts:
        runs["right"] += 1
        return {"kept": Kept(text="k"), "drafts": [{"text": "dict"}]}  # type: ignore[list-item]

    builder = StateGraph(Loose).add_sequence([wrong, right]).add_edge(START, "wrong")
    return ne.compile(builder, checkpointer=saver, **options)


def _thread(config: RunnableConfig, n: int) -> RunnableConfig:
    return {"configurable": {"thread_id": f"{config['configurable']['thread_id']}-{n}"}}


def _declared_logs(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "but wrote a" in r.getMessage()]


# Writer and resumer in processes of their own.


def _app(
    role: str, spec: str, thread: str, *flags: str, script: bool = False, strict: bool = False
) -> dict[str, Any]:
    command = (
        [sys.executable, str(APP)]
        if script
        else [
            sys.executable,
            "-c",
            "from tests.integration.readback_app import main; main()",
        ]
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    if strict:
        env["LANGGRAPH_STRICT_MSGPACK"] = "true"
    done = subprocess.run(
        [*command, role, spec, thread, *flags],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


# The tests on ``spec`` run one way: their subject is what a process of its own reads
# (strict msgpack, a class of ``__main__``), and ``readback_app`` runs the sync driver.
@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'readback.sqlite'}"
    return f"postgres:{request.getfixturevalue('pg_dsn')}"


@pytest.mark.slow
def test_strict_msgpack_an_any_channel_holding_a_model(spec: str, config: RunnableConfig) -> None:
    thread = str(config["configurable"]["thread_id"])
    wrote = _app("write", spec, thread, "untyped", strict=True)
    assert wrote["runs"] == {"write": 1, "publish": 1} and "Crash" in wrote["error"]
    if not MSGPACK_ALLOWLIST:  # langgraph-checkpoint 3 has no strict msgpack: it reads back
        assert not [w for w in wrote["warnings"] if "read back" in w]
        strict = _app("strict", spec, thread, "untyped", strict=True)
        assert strict["out"] == "Draft:hello" and strict["runs"] == {"publish": 1}
        return
    [warning] = [w for w in wrote["warnings"] if "will not read back" in w]
    assert "readback_app.Draft" in warning and "node `write` output" in warning
    assert "allowlist" in warning and "allowed_msgpack_modules" in warning
    strict = _app("strict", spec, thread, "untyped", strict=True)
    assert "CheckpointSchemaError" in strict["error"] and strict["runs"] == {}
    assert "stored value of `draft` does not read back as `Draft`: got `dict`" in strict["error"]
    resumed = _app("resume", spec, thread, "untyped", strict=True)
    assert resumed["out"] == "Draft:hello" and resumed["runs"] == {"write": 1, "publish": 1}
    # The same value, without strict msgpack, reads back: no warning, no rewind.
    plain = _app("write", spec, f"{thread}-plain", "untyped")
    assert not [w for w in plain["warnings"] if "read back" in w]
    again = _app("resume", spec, f"{thread}-plain", "untyped")
    assert again["out"] == "Draft:hello" and again["runs"] == {"publish": 1}


@pytest.mark.slow
def test_strict_msgpack_verify_writes_fails_the_step(spec: str, config: RunnableConfig) -> None:
    thread = str(config["configurable"]["thread_id"])
    verified = _app("verify", spec, thread, "untyped", strict=True)
    if not MSGPACK_ALLOWLIST:  # langgraph-checkpoint 3 has no strict msgpack: it reads back
        assert "error" not in verified and verified["runs"] == {"write": 1, "publish": 1}
        return
    assert (
        "WriteReadbackError" in verified["error"] and "Draft came back as dict" in verified["error"]
    )
    assert verified["runs"] == {"write": 1}


@pytest.mark.slow
def test_a_main_class_is_rewound_or_converted(spec: str, config: RunnableConfig) -> None:
    thread = str(config["configurable"]["thread_id"])
    for name in (thread, f"{thread}-keep"):
        wrote = _app("write", spec, name, script=True)
        assert wrote["module"] == "__main__" and "Crash" in wrote["error"]
        assert not [w for w in wrote["warnings"] if "__main__" in w]
        [note] = [line for line in wrote["info"] if "__main__.Draft" in line]
        assert "running script's own class" in note and "docs/read-back.md" in note
    # Imported by its module path, the resumer cannot revive `__main__.Draft`.
    rewound = _app("resume", spec, thread)
    assert rewound["out"] == "Draft:hello" and rewound["runs"] == {"write": 1, "publish": 1}
    converted = _app("resume", spec, f"{thread}-keep", "keep")
    assert converted["plan"].startswith("migrate")
    assert converted["out"] == "Draft:hello" and converted["runs"] == {"publish": 1}
