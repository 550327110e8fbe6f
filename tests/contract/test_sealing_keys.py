"""The tenant key store (`engine.sealing.TenantKeyStore`, issue 31), in memory and on the
MongoDB-wire server: one key per tenant (the first writer wins a race), found by tenant,
deleted for exactly that tenant (another user's and the agent's own key stay), ids that need
JSON escaping kept apart; and an erasure with a sealer deletes the user's key."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import pytest

from engine.scoping import TenantFilter
from engine.sealing import TenantKeyStore, WrappedKey
from engine.upkeep.erasure import forget_user
from services.runtime import open_runtime
from services.runtime.memory import memory_stores
from tests.support.settings import make_settings

KEY = base64.b64encode(b"m" * 32).decode()
AT = datetime(2026, 1, 2, tzinfo=UTC)


def wrapped(tenant: tuple[str, str | None], kid: str) -> WrappedKey:
    return WrappedKey(tenant, kid, b"\x00wrapped-" + kid.encode(), "master1", AT)


@pytest.fixture(
    params=[
        pytest.param("memory", id="memory"),
        pytest.param("mongo", id="mongo", marks=pytest.mark.integration),
    ]
)
async def keys(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[TenantKeyStore]:
    if request.param == "memory":
        store = memory_stores().tenant_keys
        assert store is not None
        yield store
        return
    stack = request.getfixturevalue("stack")
    settings = make_settings(stack, unique("keys"), event_encryption_key=KEY)
    async with open_runtime(settings, needs=()) as rt:
        try:
            assert rt.stores.tenant_keys is not None
            yield rt.stores.tenant_keys
        finally:
            await rt.mongo.drop_database(settings.mongo.db)


async def test_one_key_per_tenant_found_and_deleted_for_that_tenant_only(
    keys: TenantKeyStore,
) -> None:
    alice, bob, agent = ("0xA", "alice"), ("0xA", "bob"), ("0xA", None)
    odd = ('0x"A', 'a|b"]')  # ids JSON must escape stay one tenant
    first = await keys.add(wrapped(alice, "k1"))
    assert first.key_id == "k1"
    assert (await keys.add(wrapped(alice, "k2"))).key_id == "k1"  # the first writer wins
    for tenant, kid in ((bob, "k3"), (agent, "k4"), (odd, "k5")):
        await keys.add(wrapped(tenant, kid))
    found = await keys.find([alice, bob, agent, odd, ("0xB", "alice")])
    assert {t: k.key_id for t, k in found.items()} == {
        alice: "k1",
        bob: "k3",
        agent: "k4",
        odd: "k5",
    }
    assert found[alice].wrapped == b"\x00wrapped-k1"
    assert found[alice].master_id == "master1"

    assert await keys.delete("0xA", "alice") == 1
    assert await keys.delete("0xA", "alice") == 0
    left = await keys.find([alice, bob, agent, odd])
    assert set(left) == {bob, agent, odd}
    assert (await keys.add(wrapped(alice, "k6"))).key_id == "k6"  # a new key after erasure


async def test_an_erasure_with_a_sealer_deletes_the_users_key_first(
    stack: object, unique: Callable[[str], str]
) -> None:
    settings = make_settings(stack, unique("shredkeys"), event_encryption_key=KEY)  # type: ignore[arg-type]
    async with open_runtime(settings, needs=()) as rt:
        try:
            assert rt.sealer is not None
            await rt.sealer.seal_many([(("0xA", "alice"), b"{}"), (("0xA", "bob"), b"{}")])
            erased = await forget_user(rt.stores.eraser, TenantFilter("0xA", "alice"), rt.sealer)
            assert erased["keys"] == 1
            assert rt.stores.tenant_keys is not None
            left = await rt.stores.tenant_keys.find([("0xA", "alice"), ("0xA", "bob")])
            assert set(left) == {("0xA", "bob")}
        finally:
            await rt.mongo.drop_database(settings.mongo.db)


async def test_an_erasure_where_no_key_is_set_still_deletes_the_users_key(
    stack: object, unique: Callable[[str], str]
) -> None:
    db = unique("shredanywhere")
    sealed = make_settings(stack, db, event_encryption_key=KEY)  # type: ignore[arg-type]
    async with open_runtime(sealed, needs=()) as rt:
        try:
            assert rt.sealer is not None
            await rt.sealer.seal_many([(("0xA", "alice"), b"{}")])
            # the items group of a process the key was not given to
            async with open_runtime(make_settings(stack, db), needs=()) as other:  # type: ignore[arg-type]
                assert other.sealer is None
                keys = other.sealer or other.stores.tenant_keys
                erased = await forget_user(other.stores.eraser, TenantFilter("0xA", "alice"), keys)
            assert erased["keys"] == 1
        finally:
            await rt.mongo.drop_database(db)
