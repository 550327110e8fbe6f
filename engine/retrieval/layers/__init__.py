"""Layer searches: each turns one query into ranked `Hit`s of one memory layer.

| layer    | store          | scope                        | ranked by                            |
| -------- | -------------- | ---------------------------- | ------------------------------------ |
| working  | sessions       | thread                       | turn vectors + BM25 over its lines   |
| scene    | transcripts    | thread                       | per turn: turn vector + BM25         |
| graph    | memory (facts) | tenant, all threads          | cosine + BM25, decay → rerank → MMR  |
| patterns | patterns       | tenant + agent-wide patterns | summary vector + BM25                |
| archives | archives       | tenant                       | summary vector + BM25                |
| vectors  | memory (all)   | tenant, all threads          | cosine + BM25 (ranked unless graph)  |

Every layer returns at most `limit` hits, best first; `Hit.score` is its relevance in [0, 1].
"""

from engine.retrieval.layers.memory import MemoryLayerOptions, search_memory
from engine.retrieval.layers.procedural import search_archives, search_patterns
from engine.retrieval.layers.query import LayerQuery, ReadTokens
from engine.retrieval.layers.scene import search_scene, search_working

__all__ = [
    "LayerQuery",
    "MemoryLayerOptions",
    "ReadTokens",
    "search_archives",
    "search_memory",
    "search_patterns",
    "search_scene",
    "search_working",
]
