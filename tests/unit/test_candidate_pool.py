"""Candidate generation that does not miss (issue 32): once a layer's pool holds a hit on its
own, paraphrases below the fixed cosine cut-off but near the best one are hits too, ranked
below it; a question about nothing stored still gets nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.memory import (
    InMemoryArchiveStore,
    InMemoryMemoryStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.turns import TurnRecorder
from engine.retrieval.relevance import RelevancePolicy, pool_relevance
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from schemas.ids import to_ms
from schemas.inputs import turn_recorded
from schemas.scope import Scope

NOW = datetime(2024, 9, 2, 12, 0, tzinfo=UTC)
TURNS = [
    ("Rosa: I play tennis every Sunday morning at the club.", "Kim: Nice, good exercise."),
    ("Rosa: I cycle to the office along the canal most days.", "Kim: Lovely route."),
    ("Rosa: How do I reset my router?", "Kim: Hold the reset button for ten seconds."),
    ("Rosa: Can you suggest a pasta recipe?", "Kim: Try spaghetti aglio e olio."),
]
SCOPE = {"agentWallet": "0xA", "userAddress": "U1"}


@pytest.fixture
async def search(minilm: LocalMiniLMEmbedder) -> MemorySearch:
    transcripts, working, memory = (
        InMemoryTranscriptStore(),
        InMemoryWorkingStore(),
        InMemoryMemoryStore(),
    )
    recorder = TurnRecorder(transcripts, working, memory, minilm)
    for i, (user, assistant) in enumerate(TURNS):
        body = {
            **SCOPE,
            "threadId": "T1",
            "turnId": f"t{i}",
            "userMessage": user,
            "assistantMessage": assistant,
        }
        await recorder.record(turn_recorded(body, now=NOW - timedelta(days=10 - i)))
    return MemorySearch(
        transcripts=transcripts,
        working=working,
        patterns=InMemoryPatternStore(),
        archives=InMemoryArchiveStore(),
        index=ExactVectorIndex(memory),
        embedder=minilm,
        cache=InMemoryQueryCache(),
    )


async def test_a_paraphrase_below_the_fixed_cut_off_is_found_beside_a_strong_hit(
    search: MemorySearch,
) -> None:
    result = await search.search(
        Scope.parse(SCOPE), "What sports does Rosa do?", ["vectors"], 10, to_ms(NOW)
    )
    texts = [h.text for h in result.hits["vectors"]]
    # cycling's cosine is about 0.26 (< 0.3): the fixed cut-off dropped it
    assert any("cycle" in t for t in texts)
    assert "tennis" in texts[0]  # the strong hit stays first
    assert not any("router" in t for t in texts)  # cosine ~0.03: noise, never a hit


async def test_a_question_about_nothing_stored_still_gets_nothing(search: MemorySearch) -> None:
    result = await search.search(
        Scope.parse(SCOPE), "What is the boiling point of mercury?", ["vectors"], 10, to_ms(NOW)
    )
    assert result.hits["vectors"] == []


def test_the_relative_floor_needs_an_anchor_and_ranks_below_it() -> None:
    policy = RelevancePolicy()
    anchored = pool_relevance([0.5, 0.27, 0.1], [0.0, 0.0, 0.0], policy)
    assert anchored[0] is not None
    assert anchored[1] is not None
    assert anchored[1] < anchored[0]
    assert anchored[2] is None  # under the noise floor
    assert pool_relevance([0.29, 0.27], [0.0, 0.0], policy) == [None, None]
    off = RelevancePolicy(relative_cosine=1.0)
    assert pool_relevance([0.5, 0.27], [0.0, 0.0], off)[1] is None


def test_a_paraphrase_outranks_noise_by_more_than_the_packers_recency_term() -> None:
    # the packer adds 0.45 x a hit's relevance and up to 0.08 for recency: a 0.31 paraphrase
    # must stay ahead of 0.16 noise of the newest session (it fell behind with w x cosine)
    best, paraphrase, noise = pool_relevance([0.32, 0.31, 0.16], [0.0] * 3, RelevancePolicy())
    assert best is not None
    assert paraphrase is not None
    assert noise is not None
    assert 0.45 * (paraphrase - noise) > 0.08


def test_fusion_lowers_a_hit_both_rankings_put_far_down_and_a_lone_hit_keeps_its_own() -> None:
    policy = RelevancePolicy(fusion_spread=0.5)  # off by default (measured: see FUSION_SPREAD)
    second = pool_relevance([0.5, 0.35], [0.0, 0.0], policy)[1]
    sixth = pool_relevance([0.5, 0.45, 0.44, 0.43, 0.42, 0.35], [0.0] * 6, policy)[5]
    assert second is not None
    assert sixth is not None
    assert sixth < second
    # the words finding it too lifts it back
    found = pool_relevance([0.5, 0.45, 0.44, 0.43, 0.42, 0.35], [0.0] * 5 + [0.2], policy)[5]
    assert found is not None
    assert found > sixth
    # a lone weak hit is not lifted by being its layer's best
    for p in (policy, RelevancePolicy()):
        [lone] = pool_relevance([0.31], [0.0], p)
        [strong, _] = pool_relevance([0.55, 0.31], [0.0, 0.0], p)
        assert lone is not None
        assert strong is not None
        assert lone < strong
