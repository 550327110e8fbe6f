"""The model work of a turn with message units: one model call for a batch of turns, of the
turns' texts and their messages' with every text once; a replay through the stored vectors
runs no model and stores the same vectors bit for bit. (Stop 42 tried the turn's vector as
its messages' mean instead of a second pass, and did not keep it: docs/benchmarks.md.)"""

from __future__ import annotations

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
from engine.ingest.turns import TurnRecorder, embed_units
from engine.records import MemoryRow
from engine.scoping import TenantFilter
from schemas.inputs import turn_recorded
from tests.support.embedders import CallLog

SCOPE = {"agentWallet": "0xA", "userAddress": "U1", "threadId": "T1"}
PAIR = "user: Rosa: I adopted a ginger cat.\nassistant: Kim: Lovely, what is its name?"


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


async def test_a_two_message_turn_is_one_model_call_of_the_turn_and_its_messages() -> None:
    model = CallLog(HashingEmbedder(32))
    vectors, units = await embed_units(model, [PAIR])
    said = ["I adopted a ginger cat.", "Lovely, what is its name?"]
    assert model.calls == [[PAIR, *said]]
    assert units[0].shape == (2, 32)
    whole, *messages = await HashingEmbedder(32).embed([PAIR, *said], "document")
    assert np.array_equal(vectors[0], whole)  # the model's vector of the whole turn text
    assert np.allclose(units[0], np.stack(messages))


async def test_a_text_that_is_no_turn_is_embedded_whole_beside_the_turns_messages() -> None:
    model = CallLog(HashingEmbedder(32))
    fact = "Rosa has a ginger cat."
    vectors, units = await embed_units(model, [PAIR, fact], turns={PAIR})
    assert model.calls == [[PAIR, fact, *unit_texts(PAIR)]]
    assert units[1].shape == (0, 0)
    assert np.array_equal(vectors[1], (await HashingEmbedder(32).embed([fact], "document"))[0])


async def test_a_message_said_twice_in_a_batch_is_embedded_once() -> None:
    model = CallLog(HashingEmbedder(32))
    again = "user: Rosa: Thanks!\nassistant: Kim: Lovely, what is its name?"
    await embed_units(model, [PAIR, again])
    assert model.calls == [
        [PAIR, again, "I adopted a ginger cat.", "Lovely, what is its name?", "Thanks!"]
    ]


async def test_recording_a_batch_of_turns_is_one_model_call() -> None:
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
    rows = await rows_of(memory)
    assert sorted(texts) == sorted(
        [
            *(r.content for r in rows.values()),
            "How do I reset my router?",
            "I adopted a cat.",
            "Lovely!",
        ]
    )


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
