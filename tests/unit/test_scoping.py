"""Tenant rules: the namespace chain of the cache and the read filter of the stores."""

from __future__ import annotations

from typing import Any

import pytest

from engine.records import ScopeFields
from engine.scoping import (
    GLOBAL_NAMESPACE,
    NAMESPACE_PREFIX,
    TenantFilter,
    namespace_chain,
    scope_fields,
    scope_key,
    tenant_filter,
)
from schemas.scope import Scope


def scope(**kw: Any) -> Scope:
    return Scope.parse({"agentWallet": "0xAbC", **kw})


def row(
    agent: str = "0xAbC",
    user: str | None = None,
    thread: str | None = None,
    mode: str | None = None,
    hai: str | None = None,
) -> ScopeFields:
    return ScopeFields(
        agent_wallet=agent, user_address=user, thread_id=thread, mode=mode, hai_id=hai
    )


# --- namespace_chain -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"mode": "global", "userAddress": "U1", "threadId": "T9"},
        {"mode": "local", "haiId": "H", "userAddress": "U", "threadId": "T"},
    ],
)
def test_namespace_chain_never_contains_the_global_key_fixes_16_1(kw: dict[str, Any]) -> None:
    chain = namespace_chain(scope(**kw))
    assert GLOBAL_NAMESPACE not in chain
    assert all(key.startswith(NAMESPACE_PREFIX + "a:") for key in chain)


def test_namespace_chain_runs_agent_mode_hai_user_thread() -> None:
    chain = namespace_chain(scope(mode="local", haiId="H", userAddress="U1", threadId="T9"))
    assert chain == [
        "memory:ns:a:0xAbC:m:_:h:_:u:_:t:_",
        "memory:ns:a:0xAbC:m:local:h:_:u:_:t:_",
        "memory:ns:a:0xAbC:m:local:h:H:u:_:t:_",
        "memory:ns:a:0xAbC:m:local:h:H:u:U1:t:_",
        "memory:ns:a:0xAbC:m:local:h:H:u:U1:t:T9",
    ]


def test_namespace_chain_reference_example_without_lower_casing() -> None:
    # reference §8.3's example, minus the lower-casing (§16.20) and the global key (§16.1)
    chain = namespace_chain(scope(mode="global", userAddress="U1", threadId="T9"))
    assert chain == [
        "memory:ns:a:0xAbC:m:_:h:_:u:_:t:_",
        "memory:ns:a:0xAbC:m:global:h:_:u:_:t:_",
        "memory:ns:a:0xAbC:m:global:h:_:u:U1:t:_",
        "memory:ns:a:0xAbC:m:global:h:_:u:U1:t:T9",
    ]


def test_namespace_chain_skips_absent_levels() -> None:
    chain = namespace_chain(scope(threadId="T"))
    assert chain == ["memory:ns:a:0xAbC:m:_:h:_:u:_:t:_", "memory:ns:a:0xAbC:m:_:h:_:u:_:t:T"]


def test_agent_only_chain_is_one_key() -> None:
    assert namespace_chain(scope()) == ["memory:ns:a:0xAbC:m:_:h:_:u:_:t:_"]


def test_namespace_chain_keeps_case_fixes_16_20() -> None:
    upper = namespace_chain(Scope.parse({"agentWallet": "0xAbC", "userAddress": "Ux"}))
    lower = namespace_chain(Scope.parse({"agentWallet": "0xabc", "userAddress": "ux"}))
    assert set(upper).isdisjoint(lower)


def test_scope_key_uri_encodes_colons_so_parts_cannot_collide() -> None:
    assert scope_key("a:b") == "a:a%3Ab:m:_:h:_:u:_:t:_"
    # without encoding, agent "x:m:y" would be confused with agent "x" in mode "y"
    assert scope_key("x:m:y") != scope_key("x", "y")


def test_scope_key_encodes_other_reserved_characters() -> None:
    assert scope_key("A", user="u/1 é", thread="t?x") == "a:A:m:_:h:_:u:u%2F1%20%C3%A9:t:t%3Fx"


# --- tenant_filter / TenantFilter.admits ---------------------------------------------------


def test_scope_without_user_admits_only_user_less_rows_fixes_16_3() -> None:
    where = tenant_filter(scope(), durable=True)
    assert where.user_address is None
    assert where.admits(row())
    assert not where.admits(row(user="U1"))
    assert not where.admits(row(user="U2"))


def test_scope_with_user_admits_only_that_users_rows() -> None:
    where = tenant_filter(scope(userAddress="U1"), durable=True)
    assert where.admits(row(user="U1"))
    assert not where.admits(row(user="U2"))
    assert not where.admits(row())


def test_agent_always_matches_exactly_and_case_sensitively() -> None:
    where = tenant_filter(scope(), durable=True)
    assert not where.admits(row(agent="0xabc"))
    assert not where.admits(row(agent="other"))


def test_durable_filter_ignores_the_thread() -> None:
    where = tenant_filter(scope(userAddress="U", threadId="T1"), durable=True)
    assert where.thread_id is None
    assert where.admits(row(user="U", thread="T1"))
    assert where.admits(row(user="U", thread="T2"))
    assert where.admits(row(user="U"))


def test_thread_scoped_filter_constrains_the_thread() -> None:
    where = tenant_filter(scope(userAddress="U", threadId="T1"), durable=False)
    assert where.admits(row(user="U", thread="T1"))
    assert not where.admits(row(user="U", thread="T2"))
    assert not where.admits(row(user="U"))


def test_thread_scoped_filter_without_thread_admits_every_thread() -> None:
    where = tenant_filter(scope(userAddress="U"), durable=False)
    assert where.admits(row(user="U", thread="T1"))
    assert where.admits(row(user="U", thread="T2"))


def test_mode_and_hai_constrain_only_when_set() -> None:
    loose = tenant_filter(scope(), durable=True)
    assert loose.admits(row(mode="global"))
    assert loose.admits(row(mode="local", hai="H"))
    assert loose.admits(row())

    by_mode = tenant_filter(scope(mode="global"), durable=True)
    assert by_mode.admits(row(mode="global"))
    assert not by_mode.admits(row(mode="local", hai="H"))

    by_hai = tenant_filter(scope(mode="local", haiId="H1"), durable=True)
    assert by_hai.admits(row(mode="local", hai="H1"))
    assert not by_hai.admits(row(mode="local", hai="H2"))
    assert not by_hai.admits(row(mode="global", hai="H1"))


def test_tenant_filter_copies_the_scope() -> None:
    where = tenant_filter(
        scope(mode="local", haiId="H", userAddress="U", threadId="T"), durable=False
    )
    assert where == TenantFilter(
        agent_wallet="0xAbC", user_address="U", mode="local", hai_id="H", thread_id="T"
    )


def test_scope_fields_prefers_the_explicit_thread() -> None:
    s = scope(userAddress="U", threadId="T")
    assert scope_fields(s).thread_id == "T"
    assert scope_fields(s, "S-1").thread_id == "S-1"
    assert scope_fields(s).scope_id == "0xAbC"
    assert scope_fields(scope(mode="local", haiId="H")).scope_id == "H"


def test_a_global_read_sees_mode_less_rows_fixes_16_12() -> None:
    by_mode = tenant_filter(scope(mode="global"), durable=True)
    assert by_mode.admits(row())
    local = tenant_filter(scope(mode="local", haiId="H"), durable=True)
    assert not local.admits(row())
    assert not local.admits(row(mode="global"))
