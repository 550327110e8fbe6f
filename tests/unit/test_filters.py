"""The caller-filter allowlist (reference §1.3) with its fixes (§16.26): strict parsing, per-layer
relevance, the scope always winning, and the Mongo clauses agreeing with the in-memory check."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import InputRejected
from engine.filters import (
    LAYERS,
    Filters,
    conflicts_with_scope,
    matches,
    mongo_clauses,
    narrow,
    parse_filters,
    tenant_fields,
)
from engine.scoping import TenantFilter


def pairs(raw: dict[str, Any]) -> dict[str, Any]:
    return dict(parse_filters(raw).pairs)


# --- aliases and paths ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("appId", "metadata.app_id"),
        ("app_id", "metadata.app_id"),
        ("hai_id", "haiId"),
        ("user_id", "userAddress"),
        ("thread_id", "threadId"),
    ],
)
def test_aliases_map_to_canonical_paths(key: str, path: str) -> None:
    assert pairs({key: "v"}) == {path: "v"}


@pytest.mark.parametrize(
    "path",
    [
        "agentWallet",
        "userAddress",
        "threadId",
        "mode",
        "haiId",
        "scopeKind",
        "scopeId",
        "source",
        "metadata.app_id",
        "metadata.type",
        "metadata.topic-1",
        "metadata.a.b.c",
        "workingMemory.state.step",
        "workingMemory.entities.person",
    ],
)
def test_allowed_paths(path: str) -> None:
    assert pairs({path: "v"}) == {path: "v"}


def test_an_alias_and_its_canonical_key_must_agree() -> None:
    assert pairs({"user_id": "u", "userAddress": "u"}) == {"userAddress": "u"}
    with pytest.raises(InputRejected, match="userAddress"):
        parse_filters({"user_id": "u", "userAddress": "v"})


def test_none_and_empty_mean_no_filters() -> None:
    assert parse_filters(None) == Filters()
    assert not parse_filters({})
    assert len(parse_filters({"source": "fact", "metadata.x": 1})) == 2


def test_pairs_are_sorted_so_equal_filters_are_equal() -> None:
    a = parse_filters({"source": ["fact", "session"], "metadata.x": 1})
    b = parse_filters({"metadata.x": 1, "source": ["session", "fact", "session"]})
    assert a == b
    assert a.paths == ("metadata.x", "source")
    assert hash(a) == hash(b)


# --- rejections --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "key", "reason"),
    [
        ({"$where": "1"}, "$where", "operator"),
        ({"$or": [{"a": 1}]}, "$or", "operator"),
        ({"userAddress": {"$ne": None}}, "userAddress", r"\$ne"),
        ({"metadata.x": {"$regex": ".*"}}, "metadata.x", "object value"),
        ({"metadata.x": {"$where": "sleep(1)"}}, "metadata.x", "object value"),
        ({"metadata.status": "deleted"}, "metadata.status", "system-owned"),
        ({"metadata.status.x": "y"}, "metadata.status.x", "system-owned"),
        ({"metadata.factHash": "h"}, "metadata.factHash", "system-owned"),
        ({"metadata.layer": "graph"}, "metadata.layer", "system-owned"),
        ({"metadata..x": 1}, "metadata..x", "segment"),
        ({"metadata.$x": 1}, "metadata.$x", "segment"),
        ({"metadata.": 1}, "metadata.", "segment"),
        ({"metadata.x\n": 1}, "metadata.x\\n", "segment"),
        ({"metadata." + "x" * 65: 1}, "metadata.", "segment"),
        ({"metadata.a.b.c.d": 1}, "metadata.a.b.c.d", "segments"),
        ({"workflow_wallet": "w"}, "workflow_wallet", "not a filterable field"),
        ({"agent_id": "w"}, "agent_id", "not a filterable field"),
        ({"metadata": "x"}, "metadata", "not a filterable field"),
        ({"workingMemory.context": "x"}, "workingMemory.context", "not a filterable field"),
        ({"workingMemory.state": "x"}, "workingMemory.state", "not a filterable field"),
        ({"content": "x"}, "content", "not a filterable field"),
        ({"embedding": [1.0]}, "embedding", "not a filterable field"),
    ],
)
def test_rejected_keys_name_the_key(raw: dict[str, Any], key: str, reason: str) -> None:
    with pytest.raises(InputRejected, match=reason) as caught:
        parse_filters(raw)
    assert key in str(caught.value)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"$in": ["a"]}, "object value"),
        ([], "empty list"),
        (["a", {"$ne": 1}], "object value"),
        (["a", ["b"]], "nested list"),
        (list(range(101)), "longer than 100"),
        ("x" * 513, "longer than 512"),
        (float("nan"), "non-finite"),
        (float("inf"), "non-finite"),
        (2**63, "64-bit"),
        (b"bytes", "unsupported type"),
        ({1, 2}, "unsupported type"),
    ],
)
def test_rejected_values(value: object, reason: str) -> None:
    with pytest.raises(InputRejected, match=reason) as caught:
        parse_filters({"metadata.x": value})
    assert "metadata.x" in str(caught.value)


@pytest.mark.parametrize(
    "value",
    ["", "x" * 512, 0, -(2**63), 2**63 - 1, 1.5, True, False, None, ["a", 1, None, True]],
)
def test_accepted_values(value: object) -> None:
    (only,) = parse_filters({"metadata.x": value}).pairs
    expected = tuple(value) if isinstance(value, list) else value
    got = only[1]
    if isinstance(expected, tuple):
        assert isinstance(got, tuple)
        assert sorted(map(repr, got)) == sorted(map(repr, expected))
    else:
        assert got == expected
        assert type(got) is type(expected)


def test_list_values_are_deduplicated_keeping_bool_apart_from_numbers() -> None:
    ((_, value),) = parse_filters({"metadata.x": [1, 1.0, True, "1", None, None]}).pairs
    assert isinstance(value, tuple)
    assert len(value) == 4  # 1 == 1.0 in BSON, but True and "1" are different values
    assert None in value
    assert "1" in value
    assert any(v is True for v in value)


def test_non_mapping_and_too_many_keys_are_rejected() -> None:
    with pytest.raises(InputRejected, match="object"):
        parse_filters(["a"])  # type: ignore[arg-type]
    with pytest.raises(InputRejected, match="at most 32"):
        parse_filters({f"metadata.k{i}": i for i in range(33)})
    with pytest.raises(InputRejected, match="not a string"):
        parse_filters({1: "x"})  # type: ignore[dict-item]


# --- per-layer relevance -----------------------------------------------------------------

EVERYTHING = parse_filters(
    {
        "userAddress": "u",
        "scopeId": "s",
        "source": "fact",
        "metadata.app_id": "app",
        "workingMemory.state.step": 2,
        "workingMemory.entities.person": "ada",
    }
)


@pytest.mark.parametrize(
    ("layer", "kept"),
    [
        (
            "working",
            {"userAddress", "scopeId", "workingMemory.state.step", "workingMemory.entities.person"},
        ),
        ("scene", {"userAddress", "scopeId", "metadata.app_id"}),
        ("vectors", {"userAddress", "scopeId", "source", "metadata.app_id"}),
        ("graph", {"userAddress", "scopeId", "source", "metadata.app_id"}),
        ("patterns", {"userAddress", "scopeId", "metadata.app_id"}),
        ("archives", {"userAddress", "scopeId", "metadata.app_id"}),
    ],
)
def test_applies_to_keeps_only_the_filters_a_layer_can_honour_fixes_16_26(
    layer: str, kept: set[str]
) -> None:
    assert set(EVERYTHING.applies_to(layer).paths) == kept


def test_a_working_memory_filter_does_not_empty_the_other_layers_fixes_16_26() -> None:
    only_working = parse_filters({"workingMemory.state.step": 2})
    assert only_working.applies_to("working")
    for layer in set(LAYERS) - {"working"}:
        assert not only_working.applies_to(layer)
        assert mongo_clauses(only_working.applies_to(layer)) == {}


def test_applies_to_rejects_unknown_layers() -> None:
    with pytest.raises(InputRejected, match="layer"):
        EVERYTHING.applies_to("skills")


# --- the scope wins ---------------------------------------------------------------------

USERLESS = TenantFilter(agent_wallet="agent-1", user_address=None)
LOCAL = TenantFilter(agent_wallet="agent-1", user_address="u1", mode="local", hai_id="h1")


def test_tenant_fields_list_only_constrained_paths() -> None:
    assert tenant_fields(USERLESS) == {"agentWallet": "agent-1", "userAddress": None}
    assert tenant_fields(LOCAL) == {
        "agentWallet": "agent-1",
        "userAddress": "u1",
        "mode": "local",
        "haiId": "h1",
    }


@pytest.mark.parametrize(
    ("raw", "where", "conflict"),
    [
        ({"agentWallet": "agent-2"}, USERLESS, True),
        ({"agentWallet": "agent-1"}, USERLESS, False),
        ({"agentWallet": ["agent-1", "agent-2"]}, USERLESS, False),
        ({"agentWallet": ["agent-2", "agent-3"]}, USERLESS, True),
        ({"user_id": "someone"}, USERLESS, True),  # a user-less scope cannot reach a user's rows
        ({"userAddress": None}, USERLESS, False),
        ({"userAddress": "u2"}, LOCAL, True),
        ({"userAddress": "u1"}, LOCAL, False),
        ({"mode": "global"}, LOCAL, True),
        ({"mode": "local", "hai_id": "h1"}, LOCAL, False),
        ({"hai_id": "h2"}, LOCAL, True),
        ({"mode": "global"}, USERLESS, False),  # open path: narrows, does not conflict
        ({"agentWallet": "Agent-1"}, USERLESS, True),  # ids are case-sensitive
        ({"userAddress": 1}, LOCAL, True),
        ({"metadata.app_id": "x", "source": "fact"}, LOCAL, False),
    ],
)
def test_scope_conflicts(raw: dict[str, Any], where: TenantFilter, conflict: bool) -> None:
    filters = parse_filters(raw)
    assert conflicts_with_scope(filters, tenant_fields(where)) is conflict
    assert (narrow(where, filters) is None) is conflict


def test_a_conflicting_filter_empties_the_read() -> None:
    rows = [
        {"agentWallet": "agent-1", "userAddress": None, "metadata": {"app_id": "x"}},
        {"agentWallet": "agent-2", "userAddress": None, "metadata": {"app_id": "x"}},
    ]
    filters = parse_filters({"agentWallet": "agent-2", "metadata.app_id": "x"})
    where = narrow(USERLESS, filters)
    assert where is None  # the caller returns [] without querying
    # and the clauses alone could never have widened the read to agent-2
    assert "agentWallet" not in mongo_clauses(filters)
    assert sum(matches(filters, row) for row in rows) == 2  # tenant paths are not its business


def test_narrow_folds_open_tenant_paths_into_the_tenant_filter() -> None:
    assert narrow(USERLESS, Filters()) is USERLESS
    assert narrow(USERLESS, parse_filters({"userAddress": None})) is USERLESS
    narrowed = narrow(USERLESS, parse_filters({"mode": "local", "hai_id": "h9", "thread_id": "t"}))
    assert narrowed == TenantFilter(
        agent_wallet="agent-1", user_address=None, mode="local", hai_id="h9", thread_id="t"
    )
    assert narrow(USERLESS, parse_filters({"threadId": ["t"]})) == TenantFilter(
        agent_wallet="agent-1", user_address=None, thread_id="t"
    )


@pytest.mark.parametrize("value", [["t1", "t2"], None, 3])
def test_narrow_rejects_what_a_tenant_filter_cannot_hold(value: object) -> None:
    with pytest.raises(InputRejected, match="threadId"):
        narrow(USERLESS, parse_filters({"threadId": value}))


# --- Mongo clauses and the in-memory twin ------------------------------------------------


def test_mongo_clauses_shapes_and_leaves_tenant_paths_out() -> None:
    filters = parse_filters(
        {
            "agentWallet": "agent-1",
            "user_id": "u",
            "mode": "global",
            "hai_id": "h",
            "thread_id": "t",
            "source": ["session", "fact"],
            "app_id": "app",
            "scopeKind": "global",
        }
    )
    assert mongo_clauses(filters) == {
        "metadata.app_id": "app",
        "scopeKind": "global",
        "source": {"$in": ["fact", "session"]},
    }


DOCS: list[dict[str, Any]] = [
    {"_id": 1, "source": "fact", "metadata": {"app_id": "a", "n": 1, "flag": True}},
    {"_id": 2, "source": "session", "metadata": {"app_id": "b", "n": 1.0, "flag": 1}},
    {"_id": 3, "source": "fact", "metadata": {"app_id": None, "tags": ["x", "y"]}},
    {"_id": 4, "source": "knowledge", "metadata": {}},
    {"_id": 5},
    {"_id": 6, "metadata": {"tags": []}},
    {"_id": 7, "metadata": {"items": [{"k": "v"}, {"j": 1}]}},
    {"_id": 8, "metadata": {"items": []}},
    {"_id": 9, "metadata": {"items": [{"k": ["v", "w"]}]}},
    {"_id": 10, "metadata": 5},
    {"_id": 11, "metadata": {"tags": [None]}},
    {"_id": 12, "metadata": {"n": "1", "flag": False}},
    {"_id": 13, "metadata": {"items": [1, 2], "tags": [["x"]]}},
    {"_id": 14, "workingMemory": {"state": {"step": 2}, "entities": {"person": ["ada", "bo"]}}},
]

# Expected ids: what a MongoDB server returns for `find(mongo_clauses(filters))` over DOCS
# (null matches missing fields, arrays match by element, arrays of subdocuments are
# traversed, an empty array matches nothing, bool is not a number, 1 == 1.0).
TABLE: list[tuple[dict[str, Any], list[int]]] = [
    ({"metadata.app_id": "a"}, [1]),
    ({"metadata.app_id": None}, [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]),
    ({"metadata.app_id": ["a", None]}, [1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]),
    ({"metadata.n": 1}, [1, 2]),
    ({"metadata.n": 1.0}, [1, 2]),
    ({"metadata.n": True}, []),
    ({"metadata.n": "1"}, [12]),
    ({"metadata.flag": True}, [1]),
    ({"metadata.flag": 1}, [2]),
    ({"metadata.flag": False}, [12]),
    ({"metadata.tags": "x"}, [3]),
    ({"metadata.tags": None}, [1, 2, 4, 5, 7, 8, 9, 10, 11, 12, 14]),
    ({"metadata.tags": ["y", "z"]}, [3]),
    ({"metadata.items.k": "v"}, [7, 9]),
    ({"metadata.items.k": "w"}, [9]),
    ({"metadata.items.k": None}, [1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 14]),
    ({"metadata.items.j": [1, "q"]}, [7]),
    ({"source": ["fact", "knowledge"]}, [1, 3, 4]),
    ({"source": "fact", "metadata.app_id": "a"}, [1]),
    ({"workingMemory.state.step": 2}, [14]),
    ({"workingMemory.entities.person": "bo"}, [14]),
    ({"agentWallet": "nobody", "metadata.app_id": "a"}, [1]),  # tenant paths: not matched here
]


@pytest.mark.parametrize(("raw", "expected"), TABLE, ids=[str(raw) for raw, _ in TABLE])
def test_matches_follows_mongodb_semantics_on_a_table_of_docs(
    raw: dict[str, Any], expected: list[int]
) -> None:
    """`expected` is what the server returns for `find(mongo_clauses(filters))`; the same
    comparison runs against the real server in tests/integration/test_atlas_vectors.py."""
    filters = parse_filters(raw)
    assert [d["_id"] for d in DOCS if matches(filters, d)] == expected
