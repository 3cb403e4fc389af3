"""Property tests: the digest is a function of the signature, and the diff agrees with it.

Types are generated from recipes (nested tuples) so that one recipe can be built
twice into distinct but identical types, or built with its members in another order.
"""

from __future__ import annotations

import datetime
import json
import typing
from typing import Any, Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import create_model

from neograph_ext.decision._fingerprint import diff, digest, fingerprint_type, signature

LEAVES: dict[str, object] = {
    "int": int,
    "str": str,
    "float": float,
    "bool": bool,
    "bytes": bytes,
    "None": None,
    "Any": Any,
    "datetime": datetime.datetime,
}

literal_values = st.one_of(
    st.integers(-3, 3), st.text(alphabet="ab1", max_size=2), st.booleans(), st.none()
)
field_names = st.from_regex(r"f_[a-z]{1,3}", fullmatch=True)


def _composite(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    fields = st.dictionaries(field_names, st.tuples(inner, st.booleans()), max_size=4)
    return st.one_of(
        st.tuples(st.just("list"), inner),
        st.tuples(st.just("set"), st.sampled_from(["int", "str", "bytes"])),
        st.tuples(st.just("dict"), inner),
        st.tuples(st.just("tuple"), st.lists(inner, max_size=3).map(tuple)),
        st.tuples(st.just("tuple..."), inner),
        st.tuples(st.just("optional"), inner),
        st.tuples(st.just("union"), inner, inner),
        st.tuples(st.just("literal"), st.lists(literal_values, min_size=1, max_size=4).map(tuple)),
        st.tuples(st.just("model"), fields.map(lambda d: tuple(sorted(d.items())))),
    )


recipes = st.recursive(st.sampled_from(sorted(LEAVES)), _composite, max_leaves=12)


def build(recipe: Any, *, reverse: bool = False, path: str = "M") -> Any:
    """Make the type a recipe describes; ``reverse`` flips every order that must not matter."""
    if isinstance(recipe, str):
        return LEAVES[recipe]
    head, *args = recipe
    if head == "model":
        fields = {
            name: (build(sub, reverse=reverse, path=f"{path}_{i}"), ... if required else None)
            for i, (name, (sub, required)) in enumerate(args[0])
        }
        if reverse:
            fields = dict(reversed(fields.items()))
        return create_model(path, __module__="generated", __qualname__=path, **fields)
    if head == "literal":
        values = tuple(reversed(args[0])) if reverse else args[0]
        return Literal[values]
    if head == "tuple":
        inner = [build(arg, reverse=reverse, path=f"{path}{i}") for i, arg in enumerate(args[0])]
        return tuple[tuple(inner)] if inner else tuple[()]
    parts = [build(arg, reverse=reverse, path=f"{path}{i}") for i, arg in enumerate(args)]
    if head == "list":
        return list[parts[0]]  # type: ignore[valid-type]
    if head == "set":
        return set[parts[0]]  # type: ignore[valid-type]
    if head == "dict":
        return dict[str, parts[0]]  # type: ignore[valid-type]
    if head == "tuple...":
        return tuple[parts[0], ...]  # type: ignore[valid-type]
    if head == "optional":
        return typing.Optional[parts[0]]  # noqa: UP045
    members = tuple(reversed(parts)) if reverse else tuple(parts)
    return typing.Union[members]  # noqa: UP007


relaxed = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


@relaxed
@given(recipes)
def test_equal_structures_have_equal_signatures_and_digests(recipe: Any) -> None:
    first, second = build(recipe), build(recipe, reverse=True)
    assert signature(first) == signature(second)
    assert fingerprint_type(first) == fingerprint_type(second)


@relaxed
@given(recipes, recipes)
def test_digest_and_diff_agree_with_signature_equality(left: Any, right: Any) -> None:
    old, new = signature(build(left)), signature(build(right))
    same = json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)
    assert (digest(old) == digest(new)) is same
    assert (diff(old, new) == []) is same


@relaxed
@given(recipes)
def test_signature_round_trips_and_diffs_empty_with_itself(recipe: Any) -> None:
    sig = signature(build(recipe))
    loaded = json.loads(json.dumps(sig))
    assert loaded == sig
    assert digest(loaded) == digest(sig)
    assert diff(sig, sig) == []
    assert diff(loaded, signature(build(recipe))) == []
