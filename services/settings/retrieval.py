"""The embedding and search sections: how text becomes vectors, and how a search ranks them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from engine.retrieval.defaults import (
    DEFAULT_DOMINANCE_DELTA,
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_MIN_CANDIDATES,
    DEFAULT_MIN_COSINE,
    DEFAULT_MIN_LEXICAL,
    DEFAULT_MMR_LAMBDA,
    DEFAULT_QUERY_CACHE_TTL_SECONDS,
    DEFAULT_SEMANTIC_WEIGHT,
)
from services.settings.base import Section


class EmbeddingSettings(Section):
    """The embedder: the local model or an HTTP API, and the embedding cache."""

    provider: Literal["local-minilm", "hashing", "voyage", "openai"] = Field(
        default="local-minilm",
        validation_alias="embedder",
        description=(
            "Embedding model: local MiniLM, hashing (tests only), or an HTTP API. "
            "`local-minilm` is all-MiniLM-L6-v2 (int8 ONNX, 384 d); `voyage` is Voyage or "
            "MongoDB's AI gateway; `openai` any OpenAI-compatible `/embeddings` server."
        ),
    )
    threads: int = Field(
        default=1,
        ge=1,
        le=16,
        validation_alias="embedder_threads",
        description=(
            "ONNX intra-op threads. 2 threads collapse under concurrent load on 2 cores "
            "([benchmarks.md](benchmarks.md#local-embedder-python--m-benchmarksembedder))."
        ),
    )
    query_threads: int = Field(
        default=2,
        ge=1,
        le=16,
        validation_alias="embedder_query_threads",
        description=(
            "ONNX intra-op threads of a query embedded while no other query is (a lone "
            "pre_turn); concurrent queries use `threads` each. 1 turns the second session off."
        ),
    )
    base_url: str | None = Field(
        default=None,
        validation_alias="embedding_base_url",
        description="Base URL of the voyage/openai embeddings API (POST <base>/embeddings).",
    )
    api_key: SecretStr | None = Field(
        default=None,
        validation_alias="embedding_api_key",
        description="Bearer key of the embeddings API (none for local servers).",
    )
    model: str = Field(
        default="voyage-4-large",
        validation_alias="embedding_model",
        description=(
            "HTTP embedding model. Stored on every row with its dimension; rows of another "
            "model are never compared with the query."
        ),
    )
    dimensions: int = Field(
        default=1024,
        ge=1,
        le=8192,
        validation_alias="embedding_dimensions",
        description=("Vector size the HTTP embedder must return. Any other size is an error."),
    )
    send_dimensions: bool = Field(
        default=True,
        validation_alias="embedding_send_dimensions",
        description=(
            "Ask the API for that size (off for fixed-size models). Sent as "
            "`output_dimension` / `dimensions`."
        ),
    )
    timeout_seconds: float = Field(
        default=8.0,
        gt=0,
        validation_alias="embedding_timeout_seconds",
        description="HTTP embedding deadline per request.",
    )
    cache_ttl_seconds: int = Field(
        default=86_400,
        ge=0,
        validation_alias="embedding_cache_ttl_seconds",
        description="Embedding cache TTL (0 disables the cache).",
    )
    deferred: bool = Field(
        default=True,
        validation_alias="embedding_deferred",
        description=(
            "Store turns without waiting for the model: their text is searchable at once and "
            "the `embeddings` group fills their vectors. Off: the transcripts group embeds "
            "before it writes (a replay runs this way, from stored vectors)."
        ),
    )
    document_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        validation_alias="embedding_document_nice",
        description=(
            "The local model embeds stored texts on a thread of its own at this lower CPU "
            "priority (Linux nice; 0: the default pool), so the embedding stage's bulk work "
            "yields to pre_turn queries and to the writers on a busy machine."
        ),
    )
    store_db: str | None = Field(
        default=None,
        validation_alias="embedding_store_db",
        description=(
            "MongoDB database of the durable content-addressed vectors (model, dimension, "
            "text hash → vector); unset ⇒ the memory database. A replay into another "
            "database reads the live one's, so it runs no model for stored text."
        ),
    )
    stage_batch: int = Field(
        default=256,
        ge=1,
        le=4096,
        validation_alias="embedding_stage_batch",
        description="Most embedding requests the `embeddings` group takes in one batch.",
    )
    stage_max_texts: int = Field(
        default=1_024,
        ge=1,
        le=100_000,
        validation_alias="embedding_stage_max_texts",
        description=(
            "Most texts the `embeddings` group takes in one batch: the requests after them "
            "are handed back to the next poll (a request with more texts is taken alone). "
            "With `batch_budget_ms` it bounds a batch's work whatever the model's speed."
        ),
    )


class SearchSettings(Section):
    """Search: relevance thresholds and weights, decay, MMR, the vector index, the reranker,
    the query cache, and how many searches a process serves at once."""

    min_cosine: float = Field(
        default=DEFAULT_MIN_COSINE,
        ge=-1,
        le=1,
        validation_alias="min_cosine",
        description=(
            "Cosine from which a candidate is a hit. With MiniLM, unrelated text scores about"
            " 0–0.15."
        ),
    )
    min_lexical: float = Field(
        default=DEFAULT_MIN_LEXICAL,
        ge=0,
        le=1,
        validation_alias="min_lexical",
        description="BM25 share from which a candidate is a hit.",
    )
    semantic_weight: float = Field(
        default=DEFAULT_SEMANTIC_WEIGHT,
        ge=0,
        le=1,
        validation_alias="semantic_weight",
        description=(
            "Weight of cosine vs BM25 in a layer's relevance. relevance = w·cosine + (1 − w)·BM25."
        ),
    )
    half_life_days: float = Field(
        default=DEFAULT_HALF_LIFE_DAYS,
        gt=0,
        validation_alias="half_life_days",
        description="Temporal decay half-life.",
    )
    mmr_lambda: float = Field(
        default=DEFAULT_MMR_LAMBDA,
        ge=0,
        le=1,
        validation_alias="mmr_lambda",
        description=("MMR relevance weight. Relevance (1) against novelty (0)."),
    )
    vector_search: Literal["exact", "atlas"] = Field(
        default="exact",
        validation_alias="vector_search",
        description=(
            "exact cosine (numpy, per-tenant LRU) or Atlas $vectorSearch. `atlas` pre-filters"
            " on the tenant; a server without Atlas Search falls back to exact with a "
            "warning."
        ),
    )
    state_max_mb: int = Field(
        default=1024,
        ge=1,
        validation_alias="state_max_mb",
        description=(
            "In-process search state of the exact index, in MiB (each tenant's vectors, texts "
            "and terms, estimated); the least recently searched tenant is evicted beyond it."
        ),
    )
    state_margin_ms: int = Field(
        default=2_000,
        ge=0,
        validation_alias="state_margin_ms",
        description=(
            "How far before its last read the exact index reads back written rows: longer than "
            "a write's flight (a write acknowledged more than 1.5 s after its stamp is stamped "
            "again), plus the clock skew between writer and search hosts."
        ),
    )
    blas_threads: int = Field(
        default=1,
        ge=0,
        le=64,
        validation_alias="blas_threads",
        description=(
            "Threads of NumPy's BLAS (the exact index's cosines). 1: a second thread would spin "
            "after every product and take a core from the handlers; 0 keeps the library's own."
        ),
    )
    rerank_provider: Literal["none", "cloudflare", "http"] = Field(
        default="none",
        validation_alias="rerank_provider",
        description=(
            "Reranker: none, Cloudflare Workers AI, or a /rerank API. `http` is a "
            "Cohere/Voyage/Jina-style `/rerank` endpoint."
        ),
    )
    rerank_url: str | None = Field(
        default=None,
        validation_alias="rerank_url",
        description="URL of a Cohere/Voyage/Jina-style /rerank endpoint.",
    )
    rerank_model: str = Field(
        default="@cf/baai/bge-reranker-base",
        validation_alias="rerank_model",
        description="Reranker model id.",
    )
    rerank_api_key: SecretStr | None = Field(
        default=None,
        validation_alias="rerank_api_key",
        description="Bearer token of the reranker (Cloudflare API token too).",
    )
    cloudflare_account_id: str | None = Field(
        default=None, validation_alias="cloudflare_account_id", description="Cloudflare account."
    )
    rerank_timeout_seconds: float = Field(
        default=3.0,
        gt=0,
        validation_alias="rerank_timeout_seconds",
        description=("Rerank timeout. A failure keeps the decayed order."),
    )
    rerank_min_candidates: int = Field(
        default=DEFAULT_MIN_CANDIDATES,
        ge=2,
        validation_alias="rerank_min_candidates",
        description="Rerank only from n hits.",
    )
    rerank_dominance_delta: float = Field(
        default=DEFAULT_DOMINANCE_DELTA,
        ge=0,
        validation_alias="rerank_dominance_delta",
        description="Skip rerank when top1 − top2 ≥ this.",
    )
    query_cache_ttl_seconds: int = Field(
        default=DEFAULT_QUERY_CACHE_TTL_SECONDS,
        ge=1,
        validation_alias="query_cache_ttl_seconds",
        description=("Layer query cache TTL. Namespace counters live 4× longer."),
    )
    access_flush_seconds: float = Field(
        default=1.0,
        gt=0,
        validation_alias="access_flush_seconds",
        description="How often returned items' access counts are written.",
    )
    workers: int = Field(
        default=4,
        ge=1,
        le=64,
        validation_alias="search_workers",
        description=(
            "pre_turn and layer-search requests one search process serves at once. Taken as "
            "they arrive, at-most-once: a request lost in a crash times out at its client; "
            "nothing is written."
        ),
    )
