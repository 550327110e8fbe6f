"""`BatchConsumer` with an event sealer (issue 31), on hand-made batches: a clear record and
a sealed one are both processed; one sealed under an erased key is skipped — not processed,
not dead-lettered, counted in `mnemostream_sealed_events_skipped`; a tampered one and one
whose event names another tenant are dead-lettered once, sealed as they came."""

from __future__ import annotations

import json
import os

from pydantic import BaseModel

from engine.adapters.memory.tenant_keys import InMemoryTenantKeys
from engine.sealing import EventSealer
from engine.upkeep.archive_seal import ArchiveKeys
from schemas.scope import Scope
from services.stream.batches import BatchConsumer
from services.stream.metrics import Metrics
from tests.support.batches import Letters, batch

ALICE, BOB = ("0xA", "alice"), ("0xA", "bob")


class Said(BaseModel):
    scope: Scope
    text: str


def said(tenant: tuple[str, str], text: str) -> bytes:
    scope = {"agentWallet": tenant[0], "userAddress": tenant[1]}
    return json.dumps({"scope": scope, "text": text}).encode()


async def test_a_sealed_batch_skips_the_erased_tenant_and_dead_letters_what_does_not_open() -> None:
    sealer = EventSealer(ArchiveKeys(os.urandom(32)), InMemoryTenantKeys())
    alice, bob, stolen = await sealer.seal_many(
        [
            (ALICE, said(ALICE, "alice's words")),
            (BOB, said(BOB, "bob's words")),
            (BOB, said(ALICE, "alice's words under bob's key")),
        ]
    )
    await sealer.delete(*ALICE)
    tampered = bob[:-1] + bytes([bob[-1] ^ 1])  # one bit of its tag flipped
    stored: list[str] = []

    async def work(events: list[Said]) -> None:
        stored.extend(e.text for e in events)

    letters, metrics = Letters(), Metrics()
    consumer = BatchConsumer(
        letters,
        "g",
        Said,
        work,
        attempts=1,
        backoff_ms=1,
        metrics=metrics,
        sealer=sealer,  # type: ignore[arg-type]
    )
    values = [said(BOB, "in clear"), alice, bob, tampered, stolen]
    done = await consumer.consume(batch(values))  # type: ignore[arg-type]

    assert done == 2
    assert stored == ["in clear", "bob's words"]
    assert [x.error_type for x in letters.sent] == ["SealedEventUnreadable", "SealedEventMismatch"]
    assert all(b"words" not in x.payload.encode() for x in letters.sent)  # sealed as they came
    skipped = metrics.registry.get_sample_value(
        "mnemostream_sealed_events_skipped_total", {"group": "g", "topic": "t"}
    )
    assert skipped == 1
    assert sealer.skipped == 1


async def test_a_sealed_record_without_a_sealer_is_dead_lettered_not_lost() -> None:
    sealer = EventSealer(ArchiveKeys(os.urandom(32)), InMemoryTenantKeys())
    [sealed] = await sealer.seal_many([(BOB, said(BOB, "bob's words"))])
    letters = Letters()

    async def work(events: list[Said]) -> None:
        raise AssertionError("nothing to process")

    consumer = BatchConsumer(letters, "g", Said, work, attempts=1, backoff_ms=1)  # type: ignore[arg-type]
    assert await consumer.consume(batch([sealed])) == 0  # type: ignore[arg-type]
    assert [x.error_type for x in letters.sent] == ["SealedEventNoKey"]
