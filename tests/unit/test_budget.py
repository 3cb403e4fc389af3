"""The ledger's arithmetic, without a graph: caps checked before the spend they limit,
turns, merging stored copies (never lower), the estimate of a rewind, the wire format."""

from __future__ import annotations

import pytest

from neograph_ext.budget import Budget, Ledger, Spend
from neograph_ext.decision._budget import decode_ledger, encode_ledger, estimated, merged


def _spent(ledger: Ledger, calls: int, tokens: int, node: str = "model") -> Ledger:
    for _ in range(calls):
        ledger = ledger.call_started(node).call_ended(node, tokens)
    return ledger


def test_a_model_call_that_would_pass_the_cap_is_refused_before_it_starts() -> None:
    budget = Budget(max_model_calls=2)
    ledger = _spent(Ledger().new_turn(), 1, 5)
    assert ledger.exceeded(budget, "call") is None
    ledger = _spent(ledger, 1, 5)
    exceeded = ledger.exceeded(budget, "call")
    assert exceeded is not None
    assert (exceeded.cap, exceeded.limit, exceeded.spent.model_calls) == ("max_model_calls", 2, 2)
    assert ledger.exceeded(budget, "step") is None  # supersteps are not capped


def test_tokens_stop_the_next_call_once_the_cap_is_reached() -> None:
    budget = Budget(max_tokens=25)
    ledger = _spent(Ledger(), 2, 10)
    assert ledger.exceeded(budget, "call") is None  # 20 < 25: one more call may start
    ledger = _spent(ledger, 1, 10)  # and may pass the cap: tokens are known afterwards
    exceeded = ledger.exceeded(budget, "call")
    assert exceeded is not None and exceeded.cap == "max_tokens"
    assert exceeded.spent.tokens == 30


def test_supersteps_count_once_each() -> None:
    budget = Budget(max_supersteps=2)
    ledger = Ledger().step_started()
    assert ledger.exceeded(budget, "step") is None
    ledger = ledger.step_started()
    exceeded = ledger.exceeded(budget, "step")
    assert exceeded is not None and exceeded.spent.supersteps == 2


def test_per_turn_caps_count_the_current_turn_only() -> None:
    thread, turn = Budget(max_model_calls=3), Budget(max_model_calls=3, per="turn")
    ledger = _spent(Ledger().new_turn(), 3, 1).new_turn()
    assert ledger.exceeded(thread, "call") is not None
    assert ledger.exceeded(turn, "call") is None
    ledger = _spent(ledger, 3, 1)
    exceeded = ledger.exceeded(turn, "call")
    assert exceeded is not None and exceeded.per == "turn"
    assert exceeded.spent == Spend(0, 3, 3)
    assert ledger.total == Spend(0, 6, 6)
    assert ledger.turns == (Spend(0, 3, 3), Spend(0, 3, 3))


def test_merging_stored_copies_never_lowers_a_count() -> None:
    older = _spent(Ledger().new_turn(), 5, 10)
    # A write made from an older copy (say, a resume that read before the last writes).
    stale = _spent(Ledger().new_turn(), 2, 10, node="other")
    result = merged([older, stale])
    assert result.total == Spend(0, 5, 50)
    assert result.turns == (Spend(0, 5, 50),)
    assert result.nodes["model"] == Spend(0, 5, 50)
    assert result.nodes["other"] == Spend(0, 2, 20)
    assert merged([stale, older]).total == Spend(0, 5, 50)


def test_a_node_execution_restarts_its_last_spend() -> None:
    ledger = _spent(Ledger(), 2, 10, node="review").node_started("review")
    ledger = _spent(ledger, 1, 10, node="review")
    assert ledger.nodes["review"] == Spend(0, 1, 10)
    assert ledger.total == Spend(0, 3, 30)


def test_the_estimate_of_a_rewind_sums_the_rerun_nodes_last_spend() -> None:
    ledger = _spent(_spent(Ledger(), 1, 10, node="draft"), 2, 10, node="review")
    cost = estimated(ledger, [("review", 2), ("publish", 3), ("review", 4)])
    assert cost == Spend(3, 4, 40)  # publish never recorded anything


def test_the_ledger_round_trips_compactly() -> None:
    ledger = _spent(Ledger().new_turn().step_started(), 3, 12, node="model").new_turn()
    raw = encode_ledger(ledger)
    assert decode_ledger(raw) == ledger
    assert len(raw) < 100


@pytest.mark.parametrize(
    "raw",
    [
        None,
        3,
        "",
        "not json",
        "[]",
        '{"v": 2}',
        '{"v":1,"t":[1,2],"u":[],"n":{}}',
        '{"v":1,"t":[1,2,-3],"u":[],"n":{}}',
        '{"v":1,"t":[0,0,0],"u":[],"n":{"a":[1]}}',
    ],
)
def test_a_stored_ledger_that_is_not_one_is_not_read(raw: object) -> None:
    assert decode_ledger(raw) is None


@pytest.mark.parametrize(
    "kwargs",
    [{"max_tokens": -1}, {"max_model_calls": 1.5}, {"max_supersteps": True}, {"per": "run"}],
)
def test_a_bad_budget_is_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="Budget"):
        Budget(**kwargs)  # type: ignore[arg-type]
