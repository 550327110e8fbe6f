"""Filter injection: operators, `$` keys, dotted paths into system fields and operator objects
as values are rejected by `parse_filters` with a message naming the key; whatever it accepts
becomes MongoDB clauses with plain values (or `$in` of plain values) on allowlisted paths,
never on a tenant or system path. (The allowlist's table-driven cases live in
tests/unit/test_filters.py; these are the attacks and the property.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import InputRejected
from engine.filters import (
    PATH_PREFIXES,
    SYSTEM_OWNED,
    TENANT_PATHS,
    TOP_LEVEL_PATHS,
    mongo_clauses,
    parse_filters,
)
from schemas.inputs import context_request
from schemas.scope import Scope, ScopeError

ATTACKS: list[tuple[dict[str, Any], str]] = [
    ({"$where": "sleep(1000)"}, "operator"),
    ({"$where": "function() { return true; }"}, "operator"),
    ({"$or": [{"agentWallet": "0xB"}]}, "operator"),
    ({"$expr": {"$eq": [1, 1]}}, "operator"),
    ({"agentWallet": {"$ne": None}}, "object value"),
    ({"agentWallet": {"$exists": True}}, "object value"),
    ({"userAddress": {"$regex": ".*"}}, "object value"),
    ({"userAddress": {"$in": ["u1", "u2"]}}, "object value"),
    ({"user_id": {"$gt": ""}}, "object value"),
    ({"threadId": {"$nin": []}}, "object value"),
    ({"metadata.app_id": {"$where": "1"}}, "object value"),
    ({"metadata.app_id": ["a", {"$ne": 1}]}, "object value"),
    ({"metadata.status": "deleted"}, "system-owned"),
    ({"metadata.status": ["active", "deleted", "superseded"]}, "system-owned"),
    ({"metadata.factHash": "x"}, "system-owned"),
    ({"metadata.layer.x": "x"}, "system-owned"),
    ({"embedding": [0.1, 0.2]}, "not a filterable field"),
    ({"_id": "fact_1"}, "not a filterable field"),
    ({"_id.x": 1}, "not a filterable field"),
    ({"agentWallet.x": "0xB"}, "not a filterable field"),
    ({"userAddress.length": 0}, "not a filterable field"),
    ({"content": "secret"}, "not a filterable field"),
    ({"decayScore": 1}, "not a filterable field"),
    ({"messages.content": "x"}, "not a filterable field"),
    ({"metadata.$where": "1"}, "segment"),
    ({"metadata.a.$ne": 1}, "segment"),
    ({"metadata..app_id": 1}, "segment"),
    ({"metadata.app_id\x00": 1}, "segment"),
    ({"metadata.\u202eapp": 1}, "segment"),
    ({"metadata.a b": 1}, "segment"),
    ({"metadata.ﬀ": 1}, "segment"),
]


@pytest.mark.parametrize(("raw", "reason"), ATTACKS, ids=[repr(a[0])[:60] for a in ATTACKS])
def test_injection_attempts_are_rejected_naming_the_key(raw: dict[str, Any], reason: str) -> None:
    with pytest.raises(InputRejected, match=reason) as caught:
        parse_filters(raw)
    [key] = raw
    assert repr(key)[:60].strip("'") in str(caught.value) or repr(key)[:20] in str(caught.value)


@pytest.mark.parametrize(("raw", "reason"), ATTACKS[:8])
def test_attacks_survive_scope_parsing_and_are_caught_before_any_read(
    raw: dict[str, Any], reason: str
) -> None:
    """The scope keeps `filters` raw (reference §1.1); the read path's parse rejects them."""
    request = context_request({"agentWallet": "0xA", "query": "q", "filters": raw})
    with pytest.raises(InputRejected, match=reason):
        parse_filters(request.scope.filters)


SYSTEM_PATHS = ["metadata.status", "metadata.factHash", "metadata.layer", "embedding", "_id"]
segment = st.one_of(
    st.sampled_from(["metadata", "app_id", "status", "$where", "$ne", "", "_id", "x", "a-b"]),
    st.text(st.characters(exclude_categories=()), max_size=8),
)
keys = st.one_of(
    st.sampled_from([*TOP_LEVEL_PATHS, "appId", "app_id", "user_id", "hai_id", *SYSTEM_PATHS]),
    st.lists(segment, min_size=1, max_size=5).map(".".join),
)
plain = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.floats(),
    st.text(max_size=600),
)
operators = st.sampled_from(["$ne", "$regex", "$where", "$gt", "$in", "$exists", "$expr"])
values = st.recursive(
    plain,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(operators, st.text(max_size=5)), children, max_size=3),
    ),
    max_leaves=8,
)


def operator_free(value: object) -> bool:
    if isinstance(value, Mapping):
        return False
    if isinstance(value, list | tuple):
        return all(not isinstance(v, list | tuple | Mapping) for v in value)
    return True


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, values, max_size=6))
def test_whatever_parses_becomes_plain_clauses_on_allowlisted_paths(raw: dict[str, Any]) -> None:
    try:
        filters = parse_filters(raw)
    except InputRejected as exc:
        reason = str(exc)
    else:
        reason = ""
    if reason:
        assert reason.startswith("filters")
        return
    for path, _ in filters:
        assert "$" not in path
        assert path in TOP_LEVEL_PATHS or path.startswith(PATH_PREFIXES)
        assert not any(path == p or path.startswith(p + ".") for p in SYSTEM_OWNED)
    clauses = mongo_clauses(filters)
    for path, clause in clauses.items():
        assert path not in TENANT_PATHS  # the scope's tenant filter owns these
        if isinstance(clause, dict):
            assert list(clause) == ["$in"]
            assert operator_free(clause["$in"])
        else:
            assert operator_free(clause)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(keys, values, max_size=4))
def test_a_scope_carrying_filters_never_changes_its_tenant(raw: dict[str, Any]) -> None:
    try:
        scope = Scope.parse({"agentWallet": "0xA", "userAddress": "u1", "filters": raw})
    except ScopeError:
        return  # e.g. a control character in a key: rejected whole
    assert (scope.agent_wallet, scope.user_address) == ("0xA", "u1")
