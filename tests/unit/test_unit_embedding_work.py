"""The model work of a turn with message units (stop 42): each message is embedded once and
the turn's vector is the length-weighted mean of its messages', not a second pass over the
same words; a replay through the stored vectors runs no model and stores the same vectors
bit for bit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryMemoryStore,
    InMemoryTranscriptStore,
    InMemoryVectorStore,
    InMemoryWorkingStore,
)
from engine.embedding_store import StoredEmbedder
from engine.ingest.message_units import unit_texts
from engine.ingest.turns import TurnRecorder, embed_units, turn_vector
from engine.ports import Embedder, InputType, Vector
from engine.records import MemoryRow
from engine.scoping import TenantFilter
from schemas.inputs import turn_recorded
from tests.support.embedders import WrappedEmbedder

SCOPE = {"agentWallet": "0xA", "userAddress": "U1", "threadId": "T1"}
PAIR = "user: Rosa: I adopted a ginger cat.\nassistant: Kim: Lovely, what is its name?"


class CallLog(WrappedEmbedder):
    """Records every call's texts (a model call each)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        self.calls.append(list(texts))
        return await self.inner.embed(texts, input_type)


def turn(n: int, *messages: str) -> dict[str, object]:
    return {
        **SCOPE,
        "turnId": f"t{n}",
        "occurredAt": 1_725_000_000_000 + n,
        "messages": [
            {"role": "user" if i % 2 == 0 else "assistant", "content": m}
            for i, m in enumerate(messages)
        ],
    }


async def rows_of(memory: InMemoryMemoryStore) -> dict[str, MemoryRow]:
    return {r.vector_id: r for r in await memory.active_rows(TenantFilter("0xA", "U1"))}


async def test_a_two_message_turn_is_one_model_call_of_its_two_messages() -> None:
    model = CallLog(HashingEmbedder(32))
    vectors, units = await embed_units(model, [PAIR])
    # the whole turn text is not among them (it was, before stop 42: three texts)
    assert model.calls == [["I adopted a ginger cat.", "Lovely, what is its name?"]]
    assert units[0].shape == (2, 32)
    # the messages' mean weighted by their lengths (23 and 25 characters), unit length
    expected = (units[0].astype(np.float64) * np.array([[23.0], [25.0]])).sum(axis=0)
    assert np.allclose(vectors[0], expected / np.linalg.norm(expected), atol=1e-6)
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-6
    assert vectors[0].dtype == np.float32


async def test_a_one_message_turns_unit_is_its_turn_vector() -> None:
    model = CallLog(HashingEmbedder(32))
    vectors, units = await embed_units(model, ["user: Rosa: Where is my umbrella?"])
    assert model.calls == [["Where is my umbrella?"]]
    assert units[0].shape == (1, 32)
    assert np.array_equal(units[0][0], vectors[0])


async def test_a_text_that_is_no_turn_is_embedded_whole_beside_the_turns_messages() -> None:
    model = CallLog(HashingEmbedder(32))
    fact = "Rosa has a ginger cat."
    vectors, units = await embed_units(model, [PAIR, fact], turns={PAIR})
    assert model.calls == [[fact, *unit_texts(PAIR)]]
    assert units[1].shape == (0, 0)
    assert np.array_equal(vectors[1], (await HashingEmbedder(32).embed([fact], "document"))[0])


async def test_a_message_said_twice_in_a_batch_is_embedded_once() -> None:
    model = CallLog(HashingEmbedder(32))
    again = "user: Rosa: Thanks!\nassistant: Kim: Lovely, what is its name?"
    await embed_units(model, [PAIR, again])
    assert model.calls == [["I adopted a ginger cat.", "Lovely, what is its name?", "Thanks!"]]


async def test_recording_turns_embeds_each_message_once() -> None:
    model = CallLog(HashingEmbedder(32))
    memory = InMemoryMemoryStore()
    recorder = TurnRecorder(InMemoryTranscriptStore(), InMemoryWorkingStore(), memory, model)
    await recorder.record_many(
        [
            turn_recorded(turn(0, "Rosa: I adopted a cat.", "Kim: Lovely!")),
            turn_recorded(turn(1, "Rosa: How do I reset my router?")),
        ]
    )
    [texts] = model.calls
    assert sorted(texts) == ["How do I reset my router?", "I adopted a cat.", "Lovely!"]
    for row in (await rows_of(memory)).values():
        assert row.units is not None
        lengths = [len(t) for t in unit_texts(row.content)]
        assert np.array_equal(row.embedding, turn_vector(row.units, lengths))


async def test_a_replay_through_the_stored_vectors_runs_no_model_and_stores_the_same() -> None:
    events = [
        turn_recorded(turn(n, f"Rosa: Day {n} in Porto?", f"Kim: Day {n} is the old town."))
        for n in range(4)
    ]
    store = InMemoryVectorStore()
    live_model = CallLog(HashingEmbedder(32))
    live = InMemoryMemoryStore()
    await TurnRecorder(
        InMemoryTranscriptStore(), InMemoryWorkingStore(), live, StoredEmbedder(live_model, store)
    ).record_many(events)
    replay_model = CallLog(HashingEmbedder(32))
    rebuilt = InMemoryMemoryStore()
    await TurnRecorder(
        InMemoryTranscriptStore(),
        InMemoryWorkingStore(),
        rebuilt,
        StoredEmbedder(replay_model, store),
    ).record_many(events)
    assert replay_model.calls == []
    before, after = await rows_of(live), await rows_of(rebuilt)
    assert before.keys() == after.keys()
    for vid, row in before.items():
        assert row.embedding.tobytes() == after[vid].embedding.tobytes()
        again = after[vid].units
        assert row.units is not None
        assert again is not None
        assert row.units.tobytes() == again.tobytes()
