"""Which calls an entrypoint body makes, read from its code (``_call_order``): no graph
run, the cached calls hand-made. Each body is a plain function of this module, as an
``@entrypoint``'s is."""

from __future__ import annotations

from typing import Any

from langgraph.func import task
from langgraph.types import interrupt

from neograph_ext.decision._call_digest import call_digest
from neograph_ext.decision._call_order import StoredCall, call_program, judged


@task
def summ(topic: str) -> str:
    return f"summary of {topic}"


@task
def join(a: str, b: str) -> str:
    return a + b


def helper(x: str) -> str:
    return x


def literal(topics: list[str]) -> str:
    a = summ("alpha").result()
    b = summ("beta").result()
    return join(a, b).result()


def threaded(topic: str) -> str:
    """The input, then each result, handed on."""
    a = summ(topic).result()
    return join(a, topic.upper()).result()


def asking(topic: str) -> str:
    a = summ(topic).result()
    b = summ(a + str(interrupt("more?"))).result()
    return join(a, b).result()


def looped(topics: list[str]) -> str:
    summ("first").result()
    for topic in topics:
        summ(topic).result()
    return "done"


def helped(topic: str) -> str:
    summ(helper(topic)).result()
    return join("a", "b").result()


def _stored(task: str, *args: Any, value: Any = None, digest: bool = True) -> StoredCall:
    return StoredCall(task, call_digest(task, args, {}) if digest else None, value)


def _judged(body: Any, input: Any, *stored: StoredCall) -> dict[int, bool | None]:
    program = call_program(body)
    assert program is not None
    return judged(program, input, dict(enumerate(stored))).verdicts


def test_literal_calls_match_as_written_and_not_swapped() -> None:
    alpha = _stored("summ", "alpha", value="summary of alpha")
    beta = _stored("summ", "beta", value="summary of beta")
    assert _judged(literal, [], alpha, beta) == {0: True, 1: True}
    assert _judged(literal, [], beta, alpha) == {0: False, 1: False}


def test_arguments_follow_the_input_and_the_results_served() -> None:
    first = _stored("summ", "tides", value="summary of tides")
    assert _judged(threaded, "tides", first, _stored("join", "summary of tides", "TIDES")) == {
        0: True,
        1: True,
    }
    assert _judged(threaded, "waves", first)[0] is False
    # Another cached value: the next call is made with other arguments.
    other = first._replace(value="summary of waves")
    assert _judged(threaded, "tides", other, _stored("join", "summary of tides", "TIDES")) == {
        0: True,
        1: False,
    }


def test_a_value_not_known_leaves_its_call_to_be_matched_when_made() -> None:
    first = _stored("summ", "x", value="summary of x")
    second = _stored("summ", "summary of x1")
    assert _judged(asking, "x", first, second) == {0: True, 1: None}


def test_a_call_recorded_without_a_digest_is_judged_by_task_and_position() -> None:
    old = _stored("summ", "beta", digest=False)
    assert _judged(literal, [], old)[0] is True
    assert _judged(literal, [], _stored("join", digest=False))[0] is False


def test_after_a_loop_or_a_helper_calls_are_known_only_when_made() -> None:
    first = _stored("summ", "first")
    assert _judged(looped, ["a"], first, _stored("summ", "a")) == {0: True, 1: None}
    # ``helper`` may call tasks: what comes after its call is not known.
    assert _judged(helped, "x", _stored("summ", "x"), _stored("join", "a", "b")) == {
        0: None,
        1: None,
    }


def test_a_cached_call_the_code_no_longer_makes_does_not_match() -> None:
    alpha = _stored("summ", "alpha", value="summary of alpha")
    beta = _stored("summ", "beta", value="summary of beta")
    joined = _stored("join", "summary of alpha", "summary of beta")
    assert _judged(literal, [], alpha, beta, joined, _stored("summ", "gamma"))[3] is False


def test_a_body_whose_source_is_not_there_has_no_program() -> None:
    namespace: dict[str, Any] = {"summ": summ}
    exec("def made(x):\n    return summ(x).result()\n", namespace)
    assert call_program(namespace["made"]) is None
