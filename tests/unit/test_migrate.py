"""The pure parts of carrying stored values: options resolved to channels, validation."""

from __future__ import annotations

from typing import Any, NotRequired

import pytest

from neograph_ext.decision._carrying import carry_for, carrying, readable, rebuilt_channels
from tests.graphs.chat import ProfileV1, ProfileV2, ProfileV3

TYPES: dict[str, object] = {"profile": ProfileV2 | None, "summary": str}


def test_options_resolve_to_channels_by_type_or_name() -> None:
    options = carrying(TYPES, keep_compatible=[ProfileV2], migrations={"summary": str})
    assert options.keep == {"profile"} and set(options.migrations) == {"summary"}
    assert options.migrations["summary"][0] == "migrations[summary]"
    assert carrying(TYPES, keep_compatible=True).keep == {"profile", "summary"}


@pytest.mark.parametrize("key", ["nope", ProfileV3])
def test_an_unknown_channel_or_type_is_refused(key: Any) -> None:
    with pytest.raises(ValueError, match="keep"):
        carrying(TYPES, keep_compatible=[key])


def test_a_revived_instance_is_validated_again_not_trusted() -> None:
    options = carrying(TYPES, keep_compatible=True)
    fits = ProfileV2.model_construct(who="Ada")  # the new default fills `tone`
    broken = ProfileV2.model_construct(who=3)  # what the serializer may build unvalidated
    assert carry_for(options, frozenset({"profile"}), {"profile": fits}).compatible == {"profile"}
    assert not carry_for(options, frozenset({"profile"}), {"profile": broken}).compatible
    assert carry_for(options, frozenset({"profile"}), {"profile": {"who": "Ada"}}).compatible


def test_a_migration_comes_before_keeping_and_needs_a_stored_value() -> None:
    options = carrying(TYPES, keep_compatible=True, migrations={ProfileV2: dict})
    carry = carry_for(options, frozenset({"profile"}), {"profile": ProfileV1(who="Ada")})
    assert carry.migrated == {"profile"} and not carry.compatible
    assert not carry_for(options, frozenset({"profile"}), {}).migrated


def test_only_carried_delta_channels_are_read_as_langgraph_rebuilds_them() -> None:
    options = carrying({**TYPES, "log": list[str]}, migrations={"profile": dict})
    assert rebuilt_channels(options, {"profile", "log"}) == {"profile"}
    assert rebuilt_channels(carrying(TYPES), {"profile"}) == frozenset()
    # Between snapshots a DeltaChannel has no entry in ``channel_values``.
    stored = {"summary": "s", "log": ["stale"]}
    rebuilt = {"profile": {"who": "Ada"}, "summary": "rebuilt", "log": ["a"]}
    values = readable(stored, rebuilt, frozenset({"profile"}))
    assert values == {"summary": "s", "log": ["stale"], "profile": {"who": "Ada"}}
    carry = carry_for(options, frozenset({"profile"}), values)
    assert carry.migrated == {"profile"}
    assert not carry_for(options, frozenset({"profile"}), stored).migrated


def test_a_typeddict_qualifier_is_no_type_to_validate_against() -> None:
    """LangChain agents declare their state keys ``NotRequired[X]``: carried as ``X``."""
    options = carrying({"profile": NotRequired[ProfileV2]}, keep_compatible=[ProfileV2])
    assert options.keep == {"profile"}
    carry = carry_for(options, frozenset({"profile"}), {"profile": {"who": "Ada"}})
    assert carry.compatible == {"profile"}


def test_a_json_schema_channel_keeps_no_stored_value() -> None:
    """A structured response declared as a JSON schema has no type to validate by."""
    schema = {"title": "W", "type": "object", "properties": {"t": {"type": "number"}}}
    options = carrying({"structured_response": schema}, keep_compatible=True)
    values = {"structured_response": {"t": 1}}
    assert not carry_for(options, frozenset({"structured_response"}), values).compatible
