"""`secantus_updates.remembered_path_checks`: the server's check of an update's operator paths,
remembered by the update's shape, answers exactly as the check itself, refusals included."""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from secantus import update as secantus_update
from secantus.update import UpdateError

from services.ops.stack.secantus_updates import remembered_path_checks

UPDATES: list[dict[str, Any]] = [
    {"$set": {"a": 1, "b.c": 2}, "$inc": {"n": 1}},
    {"$set": {"a": 9, "b.c": "x"}, "$inc": {"n": 5}},  # the same shape, other values
    {"$set": {"a": 1}, "$inc": {"a.b": 1}},  # a path and its prefix
    {"$set": {"a.b": 1}, "$inc": {"a": 1}},
    {"$set": {"a": 1}, "$inc": {"a": 1}},  # one path twice
    {"$rename": {"a": "b"}, "$set": {"b": 1}},  # a rename's destination taken
    {"$rename": {"a": "c"}, "$set": {"b": 1}},  # the same operators and fields, another one
    {"$rename": {"a": "a"}},  # a self-rename is not a conflict here
    {"$push": {"ctx": {"$each": [1, 2], "$slice": -12}}, "$setOnInsert": {"s": 1}},
    {"$push": {"ctx": {"$each": [3], "$slice": -3}}, "$setOnInsert": {"s": 2}},
    {"$set": 1},  # not a document: only the name is checked
    {"$unset": {"x": ""}, "$currentDate": {"y": True}},
]
REFUSED: list[dict[str, Any]] = [
    {"$nope": {"a": 1}},  # unknown modifier (9)
    {"$set": {"": 1}},  # empty path (56)
    {"$set": {"a..b": 1}},  # an empty field name (56)
    {"$set": {"a": 1, "b": 2}, "$nope": {"x": 1}},
]


@pytest.fixture
def remembered() -> Callable[[Mapping[str, Any]], tuple[str, str] | None]:
    module = types.SimpleNamespace(_validate_update_paths=secantus_update._validate_update_paths)
    remembered_path_checks(module)
    check: Callable[[Mapping[str, Any]], tuple[str, str] | None] = module._validate_update_paths
    assert check is not secantus_update._validate_update_paths
    return check


def test_every_update_gets_the_checks_own_answer_first_time_and_again(
    remembered: Callable[[Mapping[str, Any]], tuple[str, str] | None],
) -> None:
    expected = [secantus_update._validate_update_paths(u) for u in UPDATES]
    assert any(e is not None for e in expected)
    assert any(e is None for e in expected)
    for _ in range(3):
        assert [remembered(u) for u in UPDATES] == expected


@pytest.mark.parametrize("refused", REFUSED)
def test_a_refused_update_is_refused_every_time_with_the_same_code(
    remembered: Callable[[Mapping[str, Any]], tuple[str, str] | None], refused: dict[str, Any]
) -> None:
    with pytest.raises(UpdateError) as original:
        secantus_update._validate_update_paths(refused)
    for _ in range(2):
        with pytest.raises(UpdateError) as again:
            remembered(refused)
        assert (again.value.code, str(again.value)) == (original.value.code, str(original.value))


def test_a_conflict_is_named_as_the_update_names_it(
    remembered: Callable[[Mapping[str, Any]], tuple[str, str] | None],
) -> None:
    # the answer names the update's own paths, which a shape fixes
    assert remembered({"$set": {"a.b": 1}, "$inc": {"a.b.c": 1}}) == ("a.b.c", "a.b")
    assert remembered({"$set": {"a.b": 7}, "$inc": {"a.b.c": 2}}) == ("a.b.c", "a.b")
    assert remembered({"$set": {"q.b": 1}, "$inc": {"q.b.c": 1}}) == ("q.b.c", "q.b")
