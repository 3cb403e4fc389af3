"""The options records and how a call's options resolve (``_policy``), without a graph."""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings
from typing import Any

import pytest

from neograph_ext import GraphError, LockPolicy, ResumePolicy
from neograph_ext.decision._policy import Asked, asked, resolve


class Profile:
    """A type a policy may name."""


def _upgrade(value: Any) -> Any:
    return value


def test_the_defaults_are_0_2_defaults() -> None:
    policy = ResumePolicy()
    assert (policy.on_change, policy.on_unverified) == ("rewind", "resume")
    assert policy.keep_compatible is False and dict(policy.migrations) == {}
    assert policy.replay_turns is False and policy.reanswer is False
    assert LockPolicy() == LockPolicy(on_busy="wait", timeout=300.0)


def test_records_are_frozen_hashable_and_keyword_only() -> None:
    policy = ResumePolicy(keep_compatible=[Profile, "notes"], migrations={"notes": _upgrade})
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.reanswer = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        policy.migrations["other"] = _upgrade  # type: ignore[index]
    with pytest.raises(TypeError):
        ResumePolicy("raise")  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        LockPolicy().timeout = 1.0  # type: ignore[misc]
    same = ResumePolicy(keep_compatible=("notes", Profile), migrations={"notes": _upgrade})
    assert policy == same and hash(policy) == hash(same)
    assert len({policy, same, ResumePolicy(), LockPolicy(), LockPolicy()}) == 3


def test_keep_compatible_is_held_as_a_frozenset_and_an_empty_one_is_false() -> None:
    assert ResumePolicy(keep_compatible=iter(["a", "b"])).keep_compatible == {"a", "b"}
    assert isinstance(ResumePolicy(keep_compatible=["a"]).keep_compatible, frozenset)
    assert ResumePolicy(keep_compatible=[]) == ResumePolicy()
    assert ResumePolicy(keep_compatible=True).keep_compatible is True


def test_a_caller_mapping_changed_later_does_not_change_the_policy() -> None:
    given = {"notes": _upgrade}
    policy = ResumePolicy(migrations=given)
    given["other"] = _upgrade
    assert set(policy.migrations) == {"notes"}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ResumePolicy(on_change="later"), "on_change must be 'rewind' or 'raise'"),
        (lambda: ResumePolicy(on_unverified="skip"), "on_unverified must be 'resume' or 'raise'"),
        (lambda: ResumePolicy(keep_compatible="notes"), r"keep_compatible=\{'notes'\}"),
        (lambda: ResumePolicy(keep_compatible=[1]), "names types and channel names, not 1"),
        (lambda: ResumePolicy(migrations=[_upgrade]), "migrations takes a mapping"),
        (lambda: ResumePolicy(migrations={1: _upgrade}), "names a type or channel, not 1"),
        (lambda: ResumePolicy(migrations={"notes": "v2"}), r"migrations\['notes'\] must be"),
        (lambda: LockPolicy(on_busy="later"), "on_busy must be 'wait' or 'raise'"),
        (lambda: LockPolicy(timeout=-1), r"lock_timeout\) must be a number of seconds >= 0"),
        (lambda: LockPolicy(timeout=math.nan), "not nan"),
        (lambda: LockPolicy(timeout="5"), "not '5'"),
        (lambda: LockPolicy(timeout=True), "not True"),
    ],
)
def test_a_bad_value_fails_where_the_record_is_built(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


GRAPH = ResumePolicy(keep_compatible=True), LockPolicy(timeout=5.0)
"""A graph's policies, as ``compile`` stores them."""


def _quiet(function: str, kwargs: dict[str, Any], **given: Any) -> tuple[Asked, dict[str, Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return asked(function, given.get("resume"), given.get("lock"), kwargs)


def test_without_options_a_call_runs_under_the_graph_records_themselves() -> None:
    call, rest = _quiet("run", {"durability": "exit"})
    assert rest == {"durability": "exit"}
    resume, lock = resolve(call, *GRAPH)
    assert resume is GRAPH[0] and lock is GRAPH[1]


def test_a_call_record_replaces_the_graph_record_whole() -> None:
    mine = ResumePolicy(reanswer=True)
    resume, lock = resolve(asked("run", mine, None, {})[0], *GRAPH)
    assert resume is mine and resume.keep_compatible is False  # not the graph's True
    assert lock is GRAPH[1]
    resume, lock = resolve(asked("astream", None, LockPolicy(on_busy="raise"), {})[0], *GRAPH)
    assert resume is GRAPH[0] and lock == LockPolicy(on_busy="raise")


@pytest.mark.parametrize(
    ("function", "keyword", "value", "expected"),
    [
        ("run", "auto_resume", False, (ResumePolicy(keep_compatible=True, on_change="raise"),)),
        ("run", "auto_resume", True, (GRAPH[0],)),
        ("arun", "reanswer", True, (ResumePolicy(keep_compatible=True, reanswer=True),)),
        ("stream", "replay_turns", True, (ResumePolicy(keep_compatible=True, replay_turns=True),)),
        (
            "astream",
            "strict_unverified",
            True,
            (ResumePolicy(keep_compatible=True, on_unverified="raise"),),
        ),
        ("run", "on_busy", "raise", (None, LockPolicy(on_busy="raise", timeout=5.0))),
        ("run", "lock_timeout", 1.5, (None, LockPolicy(timeout=1.5))),
        ("plan", "replay_turns", True, (ResumePolicy(keep_compatible=True, replay_turns=True),)),
        ("compile", "keep_compatible", ["notes"], (ResumePolicy(keep_compatible={"notes"}),)),
        (
            "compile",
            "migrations",
            {"notes": _upgrade},
            (ResumePolicy(migrations={"notes": _upgrade}),),
        ),
    ],
)
def test_a_0_2_keyword_sets_its_one_field_on_the_graph_record(
    function: str, keyword: str, value: Any, expected: tuple[Any, ...]
) -> None:
    call, rest = _quiet(function, {keyword: value, "durability": "exit"})
    assert rest == {"durability": "exit"}
    base = (ResumePolicy(), LockPolicy()) if function == "compile" else GRAPH
    resume, lock = resolve(call, *base)
    assert resume == (expected[0] if expected[0] is not None else base[0])
    assert lock == (expected[1] if len(expected) > 1 else base[1])


@pytest.mark.parametrize(
    ("function", "kwargs", "message"),
    [
        (
            "run",
            {"on_busy": "raise"},
            "run(..., on_busy='raise') is deprecated: pass lock=LockPolicy(on_busy='raise')",
        ),
        (
            "arun",
            {"auto_resume": False},
            "arun(..., auto_resume=False) is deprecated: pass "
            "resume=ResumePolicy(on_change='raise')",
        ),
        (
            "stream",
            {"reanswer": True, "lock_timeout": 2, "strict_unverified": True},
            "stream(..., reanswer=True, lock_timeout=2, strict_unverified=True) is deprecated: "
            "pass resume=ResumePolicy(reanswer=True, on_unverified='raise'), "
            "lock=LockPolicy(timeout=2)",
        ),
        (
            "aplan",
            {"replay_turns": True},
            "aplan(..., replay_turns=True) is deprecated: pass "
            "resume=ResumePolicy(replay_turns=True)",
        ),
        (
            "compile",
            {"keep_compatible": True, "migrations": {"a": _upgrade}},
            "compile(..., keep_compatible=True, migrations=...) is "
            "deprecated: pass resume=ResumePolicy(keep_compatible=True, migrations=...)",
        ),
    ],
)
def test_the_warning_names_the_exact_replacement(
    function: str, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.warns(DeprecationWarning) as caught:
        asked(function, None, None, kwargs)
    assert [str(w.message) for w in caught] == [message]


def _public_run(**kwargs: Any) -> Asked:
    """Stands in for a public function: it calls ``asked`` itself."""
    return asked("run", None, None, kwargs)[0]


def test_the_warning_points_at_the_caller_of_the_public_function() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        _public_run(reanswer=True)
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)


DEFAULTS = [
    ("run", {"auto_resume": True}),
    ("arun", {"reanswer": False}),
    ("stream", {"replay_turns": False}),
    ("astream", {"strict_unverified": False}),
    ("run", {"on_busy": "wait", "lock_timeout": 300}),
    ("plan", {"replay_turns": False}),
    ("compile", {"keep_compatible": False, "migrations": None}),
]


@pytest.mark.parametrize(("function", "kwargs"), DEFAULTS)
def test_a_0_2_keyword_given_its_default_says_nothing(
    function: str, kwargs: dict[str, Any]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        call, rest = asked(function, ResumePolicy(), LockPolicy(), kwargs)
    assert call.keywords == () and rest == {}
    assert resolve(call, *GRAPH) == (ResumePolicy(), LockPolicy())  # the call's records


def test_a_0_2_keyword_given_1_for_true_is_no_default() -> None:
    with pytest.warns(DeprecationWarning, match="reanswer=0"):
        asked("run", None, None, {"reanswer": 0})


def test_new_spellings_warn_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asked("run", ResumePolicy(), LockPolicy(), {"durability": "sync"})
        asked("compile", ResumePolicy(), None, {"interrupt_before": ["a"]})


@pytest.mark.parametrize(
    ("function", "kwargs", "given", "message"),
    [
        (
            "run",
            {"reanswer": True},
            {"resume": ResumePolicy()},
            r"run\(\.\.\., reanswer=True\) and run\(\.\.\., resume=ResumePolicy\(\.\.\.\)\) "
            r"both set ResumePolicy\.reanswer: drop reanswer and pass "
            r"resume=ResumePolicy\(reanswer=True, \.\.\.\)",
        ),
        (
            "astream",
            {"lock_timeout": 3},
            {"lock": LockPolicy()},
            r"both set LockPolicy\.timeout: drop lock_timeout and pass "
            r"lock=LockPolicy\(timeout=3, \.\.\.\)",
        ),
        (
            "compile",
            {"keep_compatible": True},
            {"resume": ResumePolicy()},
            r"ResumePolicy\.keep_compatible",
        ),
    ],
)
def test_a_0_2_keyword_with_the_record_that_covers_it_is_an_error_naming_both(
    function: str, kwargs: dict[str, Any], given: dict[str, Any], message: str
) -> None:
    call, _ = _quiet(function, kwargs, **given)
    with pytest.raises(GraphError, match=message):
        resolve(call, ResumePolicy(), LockPolicy())


def test_a_0_2_keyword_of_the_other_record_mixes_freely() -> None:
    call, _ = _quiet("run", {"on_busy": "raise"}, resume=ResumePolicy(reanswer=True))
    assert resolve(call, *GRAPH) == (
        ResumePolicy(reanswer=True),
        LockPolicy(on_busy="raise", timeout=5.0),
    )


def test_a_bad_0_2_value_is_the_record_error() -> None:
    call, _ = _quiet("run", {"on_busy": "later"})
    with pytest.raises(ValueError, match="on_busy must be 'wait' or 'raise', not 'later'"):
        resolve(call, *GRAPH)


def test_a_record_of_the_wrong_kind_is_refused() -> None:
    with pytest.raises(
        GraphError, match=r"run\(\.\.\., resume=\.\.\.\) takes a neograph_ext\.ResumePolicy"
    ):
        asked("run", True, None, {})  # type: ignore[arg-type]
    with pytest.raises(GraphError, match=r"lock=LockPolicy\(\)"):
        asked("run", None, ResumePolicy(), {})  # type: ignore[arg-type]
