"""Diffs of stored signatures take bounded work and give bounded text, whatever they hold.

A signature comes from storage. Parametrised definitions that each name the previous one
twice describe, in a few kilobytes, a type whose text is exponential in their number:
rendering it naively never ends. Work is counted by the expressions rendered, never timed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neograph_ext.decision import _typediff
from neograph_ext.decision._typediff import (
    MAX_DEPTH,
    MAX_LINE,
    MAX_LINES,
    MAX_TEXT,
    canonical_json,
    diff,
    render,
)
from tests.graphs.signatures import Signature, chain


def budget(*sigs: Signature) -> int:
    """Expressions a diff may render: a few per JSON character per depth, linear."""
    return 4 * (MAX_DEPTH + 2) * sum(len(canonical_json(sig)) for sig in sigs)


@contextlib.contextmanager
def counted(limit: int) -> Iterator[list[int]]:
    """Count the expressions rendered inside; fail fast past ``limit`` instead of hanging."""
    count = [0]

    class Counting(_typediff._Renderer):
        def _expr(self, expr: Any, depth: int) -> str:
            count[0] += 1
            if count[0] > limit:
                raise AssertionError(f"rendered more than {limit} expressions")
            return super()._expr(expr, depth)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_typediff, "_Renderer", Counting)
        yield count


def test_a_depth_40_chain_diffs_with_bounded_work_and_text() -> None:
    old, new = chain(40), chain(40, "str")
    assert len(json.dumps(old)) < 10_000, "a few kilobytes, as stored in a stamp"

    with counted(budget(old, new)) as rendered:
        lines = diff(old, new)

    assert lines == [
        f"signature changed deeper than {MAX_DEPTH} nested classes "
        "(no field-level detail available)"
    ]
    assert 0 < rendered[0] <= budget(old, new)


def test_a_change_near_the_top_of_a_deep_chain_is_shown_cut() -> None:
    old, new = chain(40), chain(40)
    top = new["defs"][new["root"]]
    top["fields"]["f0"] = {"t": "int", "req": True}

    with counted(budget(old, new)):
        lines = diff(old, new)

    assert len(lines) == 1 and len(lines[0]) <= MAX_LINE + 1, lines
    path, _, change = lines[0].partition(".f0: ")
    assert path == "Pair[Pair[Pair[Pair[" + path[20:], path[:40]
    assert change.startswith("Pair[Pair[") and change.endswith("… -> int"), change


def test_rendering_renders_each_definition_once_per_depth() -> None:
    sig = chain(40)
    renderer = _typediff._Renderer(sig["defs"], full=False, bounded=True)

    text = renderer.expr(sig["root"], 0)

    assert text.startswith("Pair[Pair[Pair[") and text.endswith("…")
    assert len(text) <= MAX_TEXT + 1
    assert 0 < len(renderer.memo) <= len(sig["defs"]) * (MAX_DEPTH + 1)
    assert renderer.expr(sig["root"], 0) == text, "rendering is deterministic"


def test_definitions_that_name_each_other_render_bounded() -> None:
    defs = {
        "m:A": {"kind": "pydantic", "fields": {}, "origin": "m:Box", "args": ["m:B", "m:B"]},
        "m:B": {"kind": "pydantic", "fields": {}, "origin": "m:Box", "args": ["m:A", "m:A"]},
    }
    text = render("m:A", defs)
    assert text.startswith("Box[Box[Box[") and len(text) <= MAX_TEXT + 1


def test_long_text_is_cut_but_full_text_for_keys_is_exact() -> None:
    members = ["Literal", *range(1_000)]
    short = render(members, {})
    assert short.startswith("Literal[0, 1, 2") and len(short) <= MAX_TEXT + 1
    assert short.endswith("…")
    # full text names parametrised definitions' keys, so digests must never depend on a cut
    assert render(members, {}, full=True) == f"Literal[{', '.join(map(str, range(1_000)))}]"


def test_deep_plain_nesting_is_cut_at_max_depth() -> None:
    expr: Any = "int"
    for _ in range(500):
        expr = ["list", expr]
    text = render(expr, {})
    assert text == "list[" * (MAX_DEPTH + 1) + "…" + "]" * (MAX_DEPTH + 1)


def test_many_changes_keep_max_lines_and_count_the_rest() -> None:
    def model(t: str) -> Signature:
        fields = {f"f{i:03}": {"t": t, "req": True} for i in range(MAX_LINES + 70)}
        return {"root": "m:M", "defs": {"m:M": {"kind": "pydantic", "fields": fields}}}

    lines = diff(model("int"), model("str"))

    assert len(lines) == MAX_LINES + 1
    assert lines[0] == "M.f000: int -> str"
    assert lines[-1] == "... and 70 more changes"


# Random well-formed signatures: the grammar of ``neograph_ext.decision._fingerprint``.
KEYS = [f"m:D{i}" for i in range(6)]
LEAVES = st.sampled_from(["int", "str", "None", "Any", "uuid:UUID", "...", *KEYS])
VALUES = st.one_of(st.integers(-3, 3), st.text("ab", max_size=2), st.booleans(), st.none())


def _exprs(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.tuples(st.just("list"), inner),
        st.tuples(st.just("dict"), inner, inner),
        st.tuples(st.just("tuple"), inner, st.just("...")),
        st.lists(inner, min_size=1, max_size=4).map(lambda m: ("Union", *m)),
        st.lists(VALUES, min_size=1, max_size=3).map(lambda v: ("Literal", *v)),
        st.tuples(st.just("Annotated"), inner, st.just({"ge": 0})),
        st.tuples(st.just("NewType"), st.just("m:Id"), inner),
        st.tuples(st.sampled_from(KEYS), inner),
        st.just(("TypeVar", "T")),
        st.just(("object", "m:Thing")),
    ).map(list)


EXPRS = st.recursive(LEAVES, _exprs, max_leaves=8)
FIELDS = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    st.fixed_dictionaries({"t": EXPRS, "req": st.booleans()}),
    max_size=3,
)
DEFS = st.one_of(
    st.fixed_dictionaries({"kind": st.sampled_from(["pydantic", "dataclass"]), "fields": FIELDS}),
    st.fixed_dictionaries(
        {
            "kind": st.just("pydantic"),
            "fields": FIELDS,
            "origin": st.just("m:Box"),
            "args": st.lists(EXPRS, min_size=1, max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {"kind": st.just("enum"), "members": st.dictionaries(st.sampled_from("XYZ"), VALUES)}
    ),
    st.fixed_dictionaries({"kind": st.just("alias"), "t": EXPRS}),
)
SMALL = st.fixed_dictionaries(
    {
        "root": st.one_of(st.sampled_from(KEYS), EXPRS),
        "defs": st.fixed_dictionaries({key: DEFS for key in KEYS}),
    }
)
CHAINS = st.builds(chain, st.integers(0, 80), st.sampled_from(["int", "str"]), st.integers(1, 3))
SIGNATURES = st.one_of(SMALL, CHAINS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=SIGNATURES, new=SIGNATURES)
def test_any_well_formed_pair_diffs_with_bounded_work_and_output(
    old: Signature, new: Signature
) -> None:
    with counted(budget(old, new)):
        lines = diff(old, new)

    assert len(lines) <= MAX_LINES + 1
    assert all(len(line) <= MAX_LINE + 1 for line in lines)
    assert (lines == []) == (canonical_json(old) == canonical_json(new))
