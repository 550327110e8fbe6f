"""Reranking, in three places by role:

* the port, `engine.ports.Reranker` (a cross-encoder scores `(id, text)` documents against a
  query), implemented over HTTP by `engine.adapters.rerankers`;
* `fail_soft`: the optional step of pre_turn search (`rerank_fail_soft`: decay, then rerank
  when worthwhile; a failing reranker leaves the decayed order);
* `documents`: the rerank operation over caller-supplied documents (`rank_documents`: not
  fail-soft; ranks by the layers' own relevance when no reranker is configured).
"""

from engine.ports import Reranker
from engine.retrieval.rerank.documents import rank_documents
from engine.retrieval.rerank.fail_soft import rerank_fail_soft

__all__ = ["Reranker", "rank_documents", "rerank_fail_soft"]
