"""FactWriter on in-memory ports: a slotted fact whose row was written without its slot (by
the facts group's other subscriber, an explicit remember of the same text) still joins its
slot's validity chain, whichever of the two handlers lands first; and a vector count that
does not match the texts embedded is an error, never a silent mismatch."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from engine.adapters.memory import HashingEmbedder, InMemoryMemoryStore, InMemoryRelationStore
from engine.errors import EmbeddingFailed
from engine.ingest.facts import FactWriter
from engine.ingest.remember import Rememberer
from engine.ports import InputType, Vector
from schemas.events import EntityItem, FactItem, FactsExtracted
from schemas.ids import to_ms
from schemas.inputs import memory_remembered
from schemas.scope import Scope

SAID = datetime(2025, 3, 1, tzinfo=UTC)
"""When the user first said where they live (a fixed time: nothing here depends on now)."""
SCOPE = {"agentWallet": "0xFacts", "userAddress": "joana"}
LISBON = "The user lives in Lisbon"
PORTO = "The user lives in Porto"


class SlowEmbedder:
    """Hashing vectors after `delay` seconds: the handler yields to the event loop while it
    embeds, as a real embedder (a thread, an HTTP call) does."""

    def __init__(self, delay: float) -> None:
        self._inner = HashingEmbedder(32)
        self._delay = delay
        self.model = self._inner.model
        self.dimension = self._inner.dimension

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        await asyncio.sleep(self._delay)
        return await self._inner.embed(texts, input_type)


class ExtraVectorEmbedder(HashingEmbedder):
    """A broken provider: one vector more than it was asked for."""

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        return [*await super().embed(texts, input_type), self.vector("surplus")]


def extracted(text: str, at: datetime, thread: str) -> FactsExtracted:
    return FactsExtracted(
        occurred_at=at,
        scope=Scope.parse({**SCOPE, "threadId": thread}),
        turn_id=f"turn-{thread}",
        session_id=f"session-{thread}",
        extractor="rules",
        facts=[FactItem(text=text, type="context", confidence=0.9, slot="residence")],
        entities=[EntityItem(name=text.rsplit(" ", 1)[-1], type="place")],
    )


@pytest.mark.parametrize(
    ("remember_delay", "extract_delay", "first"),
    [
        (0.0, 0.05, "the remember"),
        (0.05, 0.0, "the extraction"),
    ],
)
async def test_a_fact_remembered_and_extracted_at_once_joins_its_slot_whichever_lands_first(
    remember_delay: float, extract_delay: float, first: str
) -> None:
    """The facts group runs its two subscribers (memory.remember.v1, memory.facts.v1)
    concurrently in one process. When the remember stored the shared fact id first, without a
    slot, the extraction found no row in the slot and its chain zip raised "zip() argument 2
    is longer than argument 1" (retried, then dead-lettered); a later move never superseded
    the remembered fact."""
    memory, relations = InMemoryMemoryStore(), InMemoryRelationStore()
    rememberer = Rememberer(memory, SlowEmbedder(remember_delay))
    writer = FactWriter(memory, relations, SlowEmbedder(extract_delay))
    remembered = memory_remembered({**SCOPE, "content": LISBON}, now=SAID)

    await asyncio.gather(
        rememberer.remember(remembered), writer.store(extracted(LISBON, SAID, "intro"))
    )
    [lisbon] = [r for r in memory.rows() if r.content == LISBON]
    assert lisbon.metadata.get("slot") == "residence", f"{first} landed first"
    assert lisbon.invalid_at is None

    moved = SAID + timedelta(days=57)
    await writer.store(extracted(PORTO, moved, "news"))
    [porto] = [r for r in memory.rows() if r.content == PORTO]
    lisbon = memory.row(lisbon.vector_id) or lisbon
    assert (lisbon.invalid_at, lisbon.superseded_by) == (to_ms(moved), porto.vector_id)
    assert lisbon.status == "superseded"
    assert porto.invalid_at is None


async def test_a_fact_remembered_long_before_it_is_extracted_joins_its_slot() -> None:
    memory, relations = InMemoryMemoryStore(), InMemoryRelationStore()
    embedder = HashingEmbedder(32)
    await Rememberer(memory, embedder).remember(
        memory_remembered({**SCOPE, "content": LISBON}, now=SAID)
    )
    writer = FactWriter(memory, relations, embedder)
    stored = await writer.store(extracted(LISBON, SAID + timedelta(days=1), "intro"))
    assert stored.facts_inserted == 0  # one row per fact: the remembered one
    moved = SAID + timedelta(days=30)
    await writer.store(extracted(PORTO, moved, "news"))
    [lisbon] = [r for r in memory.rows() if r.content == LISBON]
    assert (lisbon.metadata.get("slot"), lisbon.invalid_at) == ("residence", to_ms(moved))


async def test_a_slot_is_never_given_to_another_tenants_row() -> None:
    """Fact ids ignore the case of the user address, tenant filters do not: the extraction
    for "Joana" must not write into "joana"'s row."""
    memory, relations = InMemoryMemoryStore(), InMemoryRelationStore()
    embedder = HashingEmbedder(32)
    await Rememberer(memory, embedder).remember(
        memory_remembered({**SCOPE, "content": LISBON}, now=SAID)
    )
    other = extracted(LISBON, SAID, "intro").model_copy(
        update={"scope": Scope.parse({**SCOPE, "userAddress": "Joana", "threadId": "intro"})}
    )
    await FactWriter(memory, relations, embedder).store(other)
    [row] = [r for r in memory.rows() if r.content == LISBON]
    assert row.scope.user_address == "joana"
    assert "slot" not in row.metadata


async def test_an_embedder_that_returns_the_wrong_number_of_vectors_fails_the_store() -> None:
    memory = InMemoryMemoryStore()
    writer = FactWriter(memory, InMemoryRelationStore(), ExtraVectorEmbedder(32))
    with pytest.raises(EmbeddingFailed, match="3 vectors for 2 texts"):
        await writer.store(extracted(LISBON, SAID, "intro"))
    assert memory.rows() == []  # nothing stored with a vector that may not be its own
