"""The hit thresholds mean something (fixes reference §16.15): the reference kept candidates
whose `(1 + cos) / 2` reached 0.2, which every sentence pair does; here raw cosine must reach
0.3 (or BM25 share 0.34), so an unrelated memory is no hit and a paraphrase is."""

from __future__ import annotations

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.retrieval.relevance import RelevancePolicy, relevance

MEMORY = "Kai's favourite tram line is the 28."


async def cosine(model: LocalMiniLMEmbedder, query: str) -> float:
    [q] = await model.embed([query], "query")
    [m] = await model.embed([MEMORY], "document")
    return float(q @ m)


@pytest.mark.parametrize(
    "query", ["How do I reset my router password?", "What is the weather tomorrow?"]
)
async def test_an_unrelated_memory_is_no_hit_though_the_reference_kept_it_fixes_16_15(
    minilm: LocalMiniLMEmbedder, query: str
) -> None:
    cos = await cosine(minilm, query)
    assert (1 + cos) / 2 >= 0.2  # the reference's score passed its threshold
    assert relevance(cos, 0.0, RelevancePolicy()) is None


async def test_a_paraphrase_is_a_hit_by_meaning_alone(minilm: LocalMiniLMEmbedder) -> None:
    cos = await cosine(minilm, "Which tram does Kai like best?")
    score = relevance(cos, 0.0, RelevancePolicy())
    assert score is not None
    assert score == pytest.approx(0.7 * cos)


def test_without_a_vector_only_the_lexical_share_decides() -> None:
    policy = RelevancePolicy()
    assert relevance(None, 0.33, policy) is None
    assert relevance(None, 0.5, policy) == 0.5
    assert relevance(0.1, 0.4, policy) == pytest.approx(0.7 * 0.1 + 0.3 * 0.4)
