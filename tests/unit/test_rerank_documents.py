"""`POST rerank`'s ranking (reference §13.4, §5.2): offline by the layers' relevance (MiniLM
cosine + BM25), or by a configured reranker, whose failure is raised (not fail-soft)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.errors import DependencyFailed
from engine.retrieval.relevance import RelevancePolicy
from engine.retrieval.rerank.documents import LOCAL, TIE_BREAK, rank_documents


class ScriptedReranker:
    """An in-memory `Reranker`: scores by a text → score table, or fails."""

    name = "scripted:test"

    def __init__(self, table: dict[str, float], fail: bool = False) -> None:
        self.table = table
        self.fail = fail

    async def rerank(self, query: str, documents: Sequence[tuple[str, str]]) -> dict[str, float]:
        if self.fail:
            raise DependencyFailed("scripted:test: HTTP 503")
        return {i: self.table[t] for i, t in documents if t in self.table}


async def test_a_paraphrase_outranks_an_unrelated_document_offline(
    minilm: LocalMiniLMEmbedder,
) -> None:
    documents = [
        ("The quarterly report is due on Friday.", None),
        ("Kai's favourite tram line is the 28.", None),
        ("", None),
    ]
    ranked, ranker = await rank_documents(
        "Which streetcar does Kai like best?",
        documents,
        top_k=None,
        reranker=None,
        embedder=minilm,
        policy=RelevancePolicy(),
    )
    assert ranker == LOCAL
    assert [r.index for r in ranked] == [1, 0, 2]
    assert ranked[0].relevance > ranked[1].relevance + 0.2
    assert ranked[2].relevance == 0.0  # a blank document is never relevant
    assert all(0.0 <= r.relevance <= 1.0 and r.score == r.relevance for r in ranked)


async def test_the_caller_score_only_breaks_ties_and_top_k_cuts(
    minilm: LocalMiniLMEmbedder,
) -> None:
    same = "Ada drinks green tea every morning."
    ranked, _ = await rank_documents(
        "What does Ada drink?",
        [(same, 0.1), ("Bikes need oil.", 9.0), (same, 0.9)],
        top_k=2,
        reranker=None,
        embedder=minilm,
        policy=RelevancePolicy(),
    )
    assert [r.index for r in ranked] == [2, 0]  # duplicates keep their own entry (§16.17)
    assert ranked[0].score - ranked[1].score == pytest.approx(TIE_BREAK * 0.8)


async def test_a_configured_reranker_decides_by_index(minilm: LocalMiniLMEmbedder) -> None:
    reranker = ScriptedReranker({"a": 0.2, "b": 0.9})
    ranked, ranker = await rank_documents(
        "q",
        [("a", None), ("b", None), ("unscored", None)],
        top_k=None,
        reranker=reranker,
        embedder=minilm,
        policy=RelevancePolicy(),
    )
    assert ranker == "scripted:test"
    assert [(r.index, r.relevance) for r in ranked] == [(1, 0.9), (0, 0.2), (2, 0.0)]


async def test_a_reranker_failure_is_raised_not_hidden(minilm: LocalMiniLMEmbedder) -> None:
    with pytest.raises(DependencyFailed, match="HTTP 503"):
        await rank_documents(
            "q",
            [("a", None)],
            top_k=None,
            reranker=ScriptedReranker({}, fail=True),
            embedder=minilm,
            policy=RelevancePolicy(),
        )
