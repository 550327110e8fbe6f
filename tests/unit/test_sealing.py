"""Sealed events (issue 31, `engine.sealing`) on the in-memory key store: an envelope holds no
plaintext and opens only for its tenant; erasing the tenant's key makes its events `gone`
(skipped, not errors); a master-key rotation keeps every key unwrappable; a batch of clear
and sealed records opens each as it is."""

from __future__ import annotations

import base64
import json
import os

import pytest

from engine.adapters.memory.tenant_keys import InMemoryTenantKeys
from engine.sealing import MAGIC, EventSealer, envelope, is_sealed
from engine.upkeep.archive_seal import ArchiveKeys

CANARY = b"canary-7f3a the user's secret words"
ALICE = ("0xAgent", "alice")
BOB = ("0xAgent", "bob")


def event(text: bytes, tenant: tuple[str, str | None] = ALICE) -> bytes:
    scope = {"agentWallet": tenant[0], "userAddress": tenant[1]}
    return json.dumps({"event_id": "e1", "scope": scope, "content": text.decode()}).encode()


def sealer(store: InMemoryTenantKeys | None = None, *keys: bytes) -> EventSealer:
    master = keys or (os.urandom(32),)
    return EventSealer(ArchiveKeys(master[0], master[1:]), store or InMemoryTenantKeys())


async def test_an_envelope_hides_the_content_and_opens_for_its_tenant_only() -> None:
    seals = sealer()
    [body] = await seals.seal_many([(ALICE, event(CANARY))])
    assert is_sealed(body)
    assert b"canary" not in body
    assert b"canary" not in envelope(body).blob
    [opened] = await seals.open_many([body])
    assert opened.plain == event(CANARY)
    assert opened.tenant == ALICE
    # the same envelope claiming another tenant does not open (associated data)
    [bobs] = await seals.seal_many([(BOB, event(b"bob's"))])
    head = json.dumps(["0xAgent", "bob", envelope(bobs).key_id]).encode()
    moved = MAGIC + head + b"\n" + envelope(body).blob
    assert envelope(moved).tenant == BOB
    [stolen] = await seals.open_many([moved])
    assert stolen.plain is None
    assert not stolen.gone  # tampering is a problem to dead-letter, not an erasure
    assert stolen.problem is not None


async def test_forgetting_a_tenant_makes_its_events_gone_and_a_new_key_seals_after() -> None:
    store = InMemoryTenantKeys()
    seals = sealer(store)
    before = await seals.seal_many([(ALICE, event(CANARY)), (BOB, event(b"kept"))])
    assert await seals.delete(*ALICE) == 1  # type: ignore[arg-type]
    other = EventSealer(seals._keys, store)  # another process, nothing cached
    for reader in (seals, other):
        alice, bob = await reader.open_many(before)
        assert alice.gone
        assert alice.plain is None
        assert bob.plain == event(b"kept")
    assert other.skipped == 1
    # the user writes again: a new key, readable; the old envelopes stay gone
    [after] = await seals.seal_many([(ALICE, event(b"new words"))])
    fresh, old = await other.open_many([after, before[0]])
    assert fresh.plain == event(b"new words")
    assert old.gone


async def test_a_rotated_master_key_still_unwraps_the_keys_it_wrapped() -> None:
    store = InMemoryTenantKeys()
    old_master, new_master = os.urandom(32), os.urandom(32)
    [body] = await sealer(store, old_master).seal_many([(ALICE, event(CANARY))])
    [opened] = await sealer(store, new_master, old_master).open_many([body])
    assert opened.plain == event(CANARY)
    [refused] = await sealer(store, new_master).open_many([body])
    assert refused.plain is None
    assert not refused.gone
    assert refused.problem is not None
    assert "not configured" in refused.problem


async def test_a_mixed_batch_opens_each_record_as_it_is() -> None:
    seals = sealer()
    clear = event(b"said in clear")
    [sealed] = await seals.seal_many([(ALICE, event(CANARY))])
    opened = await seals.open_many([clear, sealed, b"not json", clear])
    assert [o.plain for o in opened] == [clear, event(CANARY), b"not json", clear]
    assert [o.tenant for o in opened] == [None, ALICE, None, None]


@pytest.mark.parametrize(
    "body",
    [
        b'{"sealed":1}',
        b'{"sealed":1,"agent":"a","user":null,',
        MAGIC + b'["a","u","k"]',  # no end to its head
        MAGIC + b'{"a":1,"u":2,"k":3}\n' + b"x" * 40,  # a head that is not a list
        MAGIC + b'["a",null]\n' + b"x" * 40,
    ],
)
async def test_an_unreadable_envelope_is_a_problem(body: bytes) -> None:
    [opened] = await sealer().open_many([body])
    assert opened.plain is None
    assert opened.problem is not None


async def test_an_envelope_of_the_first_format_still_opens() -> None:
    """Logs sealed before stop 43 hold JSON envelopes (base64 data): they open as they are,
    tenant-bound as before, and a new envelope is binary and shorter."""
    store = InMemoryTenantKeys()
    seals = sealer(store)
    [new] = await seals.seal_many([(ALICE, event(CANARY))])
    kid, blob = envelope(new).key_id, envelope(new).blob
    head = {"sealed": 1, "agent": ALICE[0], "user": ALICE[1], "keyId": kid}
    old = json.dumps({**head, "data": base64.b64encode(blob).decode()}).encode()
    assert is_sealed(old)
    assert b"canary" not in old
    [opened] = await seals.open_many([old])
    assert opened.plain == event(CANARY)
    assert opened.tenant == ALICE
    assert new.startswith(MAGIC)
    assert len(new) < len(old)
