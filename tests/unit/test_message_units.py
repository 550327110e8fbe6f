"""Messages as retrieval units with their own vectors (issue 32): a turn row holds a vector of
what each of its messages says, the memory layers rank each message by it, the packer shows
each as its speaker says it and a turn once, and the pool keeps what plain cosine would show."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.memory import (
    HashingEmbedder,
    InMemoryArchiveStore,
    InMemoryMemoryStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.message_units import spoken, unit_texts
from engine.ingest.turns import TurnRecorder
from engine.retrieval.hits import Hit
from engine.retrieval.packing import pack
from engine.retrieval.relevance import RelevancePolicy, pool_relevance
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter
from schemas.ids import to_ms
from schemas.inputs import turn_recorded
from schemas.scope import Scope

NOW = datetime(2024, 9, 2, 12, 0, tzinfo=UTC)
SCOPE = {"agentWallet": "0xA", "userAddress": "U1"}
TURNS = [
    ("Rosa: I adopted a ginger cat called Captain.", "Kim: Lovely! My sister keeps a parrot."),
    ("Rosa: How do I reset my router?", "Kim: Hold the reset button for ten seconds."),
    ("Rosa: Can you suggest a pasta recipe?", "Kim: Try spaghetti aglio e olio."),
]


def test_a_unit_is_what_a_message_says_and_is_shown_as_its_speaker_says_it() -> None:
    text = "user: Rosa: I adopted a cat.\nassistant: Kim: Lovely!\nuser: no name here"
    assert unit_texts(text) == ["I adopted a cat.", "Lovely!", "user: no name here"]
    assert spoken("user: Rosa: I adopted a cat.") == "Rosa: I adopted a cat."
    assert spoken("user: no name here") == "user: no name here"


async def record(recorder: TurnRecorder) -> None:
    for i, (user, assistant) in enumerate(TURNS):
        body = {
            **SCOPE,
            "threadId": "T1",
            "turnId": f"t{i}",
            "userMessage": user,
            "assistantMessage": assistant,
        }
        await recorder.record(turn_recorded(body, now=NOW - timedelta(days=10 - i)))


async def test_a_stored_turn_holds_one_vector_per_message_of_what_it_says() -> None:
    embedder = HashingEmbedder(32)
    memory = InMemoryMemoryStore()
    await record(TurnRecorder(InMemoryTranscriptStore(), InMemoryWorkingStore(), memory, embedder))
    rows = await memory.active_rows(TenantFilter("0xA", "U1"))
    assert len(rows) == len(TURNS)
    for row in rows:
        assert row.units is not None
        expected = await embedder.embed(unit_texts(row.content), "document")
        assert row.units.shape == (2, 32)
        assert np.allclose(row.units, np.stack(expected))


async def test_a_deferred_turn_is_stored_without_them() -> None:
    memory = InMemoryMemoryStore()
    recorder = TurnRecorder(
        InMemoryTranscriptStore(), InMemoryWorkingStore(), memory, HashingEmbedder(32)
    )
    recorder.deferred = True
    await record(recorder)
    assert all(
        r.pending and r.units is None for r in await memory.active_rows(TenantFilter("0xA", "U1"))
    )


@pytest.fixture
async def search(minilm: LocalMiniLMEmbedder) -> MemorySearch:
    transcripts, working, memory = (
        InMemoryTranscriptStore(),
        InMemoryWorkingStore(),
        InMemoryMemoryStore(),
    )
    await record(TurnRecorder(transcripts, working, memory, minilm))
    return MemorySearch(
        transcripts=transcripts,
        working=working,
        patterns=InMemoryPatternStore(),
        archives=InMemoryArchiveStore(),
        index=ExactVectorIndex(memory),
        embedder=minilm,
        cache=InMemoryQueryCache(),
    )


async def test_a_question_about_what_one_speaker_said_finds_that_message_alone(
    search: MemorySearch,
) -> None:
    # no word of the question but Kim's name is in the answer: the words alone show the
    # whole turn (a name is no reason to show one message); the message's own vector does
    result = await search.search(
        Scope.parse(SCOPE), "Which bird does Kim's family keep?", ["vectors"], 5, to_ms(NOW)
    )
    best = result.hits["vectors"][0]
    assert best.unit == 1
    assert best.text == "Kim: Lovely! My sister keeps a parrot."
    assert best.context is not None
    assert "ginger cat" in best.context


def _hit(layer: str, hid: str, text: str, score: float, **kw: object) -> Hit:
    return Hit(layer=layer, id=hid, text=text, score=score, created_at=to_ms(NOW), **kw)  # type: ignore[arg-type]


TURN = "user: Rosa: I adopted a ginger cat.\nassistant: Kim: My sister keeps a parrot."


def test_a_turn_is_shown_once_as_its_messages_and_counted_once() -> None:
    units = [
        _hit(
            "vectors",
            "row",
            "Kim: My sister keeps a parrot.",
            0.9,
            context=TURN,
            unit=1,
            source="session",
            turn="s#t",
        ),
        _hit(
            "vectors",
            "row",
            "Rosa: I adopted a ginger cat.",
            0.8,
            context=TURN,
            unit=0,
            source="session",
            turn="s#t",
        ),
    ]
    scene = _hit("scene", "s#t", TURN, 0.95, source="transcript", turn="s#t")
    layers = {"scene": [scene], "vectors": units}
    packed = pack(
        "pets", layers, layer_order=["scene", "vectors"], budget_chars=4000, now_ms=to_ms(NOW)
    )
    assert packed.prompt is not None
    assert packed.prompt.count("ginger cat") == 1  # not the scene's whole turn as well
    assert packed.prompt.count("parrot") == 1  # two messages of one turn: never the turn twice
    assert [i.layer for i in packed.items] == ["vectors", "vectors"]
    assert packed.totals == {"scene": 1, "vectors": 1}
    assert packed.omitted == {"scene": 1, "vectors": 0}


def test_a_lone_message_is_shown_first_and_its_turn_only_with_room_left() -> None:
    unit = _hit("vectors", "row", "Kim: My sister keeps a parrot.", 0.9, context=TURN, unit=1)
    other = _hit("vectors", "row2", "Rosa: Pasta tonight.", 0.5)
    layers = {"vectors": [unit, other]}
    # room for the whole turn first, but then not for the other memory: a message unit is
    # shown as its message, so both memories fit
    budget = (
        84 + 2 * (2 + 21) + len("Kim: My sister keeps a parrot.") + len("Rosa: Pasta tonight.") + 10
    )
    packed = pack("parrot", layers, layer_order=["vectors"], budget_chars=budget, now_ms=to_ms(NOW))
    assert packed.prompt is not None
    assert "Pasta tonight" in packed.prompt
    assert "ginger cat" not in packed.prompt
    roomy = pack("parrot", layers, layer_order=["vectors"], budget_chars=4000, now_ms=to_ms(NOW))
    assert roomy.prompt is not None
    assert "ginger cat" in roomy.prompt  # the turn around it, with room left


async def test_only_a_budget_fills_the_pool_with_what_plain_cosine_shows(
    search: MemorySearch,
) -> None:
    # the router turn has no hit on its own for this question, and no floor admits it; a
    # caller who gave only a budget gets what plain cosine top-k would show as well
    query = "Does Rosa have any pets?"
    asked = await search.search(Scope.parse(SCOPE), query, ["vectors"], 5, to_ms(NOW))
    filled = await search.search(Scope.parse(SCOPE), query, ["vectors"], 5, to_ms(NOW), fill=True)
    assert not any("router" in h.text for h in asked.hits["vectors"])
    assert any("router" in h.text for h in filled.hits["vectors"])
    assert "cat" in filled.hits["vectors"][0].text


def test_the_pool_keeps_what_plain_cosine_shows_unless_the_query_is_about_nothing() -> None:
    policy = RelevancePolicy()
    # no hit on its own (cosine < 0.3, no words): the floors alone answer nothing
    assert pool_relevance([0.25, 0.2, 0.05], [0.0] * 3, policy) == [None, None, None]
    kept = pool_relevance([0.25, 0.2, 0.05], [0.0] * 3, policy, keep={0, 2})
    assert kept[0] is not None
    assert kept[2] is not None
    assert kept[1] is None
    assert kept[0] > kept[2]
    # the best cosine under the noise floor: a question about nothing stored
    assert pool_relevance([0.1, 0.05], [0.0, 0.0], policy, keep={0, 1}) == [None, None]
