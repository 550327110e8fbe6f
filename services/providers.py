"""The heavy parts of a runtime, chosen by the settings: the embedder, the reranker, the fact
extractor, the session summariser and the archive pinner. Each is built only when a group
uses it (`services.runtime.Runtime`); and the engine's policies read from the settings."""

from __future__ import annotations

import httpx

from engine.adapters.http_embedder import HttpEmbedder
from engine.adapters.memory import HashingEmbedder
from engine.adapters.openai_extractor import OpenAICompatibleExtractor
from engine.adapters.openai_summariser import OpenAICompatibleSummariser
from engine.adapters.pinata import PinataPinner
from engine.adapters.rerankers import CloudflareReranker, HttpRerankReranker
from engine.ingest.extraction.types import ExtractionPolicy, Extractor
from engine.ingest.turns import DAY_MS, IngestPolicy
from engine.ports import ArchivePinner, Embedder
from engine.retrieval.relevance import RelevancePolicy
from engine.retrieval.rerank import Reranker
from engine.retrieval.search import SearchPolicy
from engine.upkeep.compression import RuleSummariser, Summariser
from services.endpoints import NotConfigured
from services.settings import Settings


def build_embedder(settings: Settings, http: httpx.AsyncClient) -> Embedder:
    if settings.embedder == "hashing":
        return HashingEmbedder()
    if settings.embedder in ("voyage", "openai"):
        if not settings.embedding_base_url:
            raise NotConfigured(
                f"the {settings.embedder} embedder needs MNEMOSTREAM_EMBEDDING_BASE_URL"
            )
        key = settings.embedding_api_key
        return HttpEmbedder(
            http,
            base_url=settings.embedding_base_url,
            api_key=key.get_secret_value() if key else "",
            model=settings.embedding_model,
            dimension=settings.embedding_dimensions,
            style=settings.embedder,
            send_dimensions=settings.embedding_send_dimensions,
            timeout=settings.embedding_timeout_seconds,
        )
    from engine.adapters.local_embedder import LocalMiniLMEmbedder

    return LocalMiniLMEmbedder.load(threads=settings.embedder_threads)


def build_reranker(settings: Settings, http: httpx.AsyncClient) -> Reranker | None:
    key = settings.rerank_api_key.get_secret_value() if settings.rerank_api_key else ""
    if settings.rerank_provider == "cloudflare":
        if not (settings.cloudflare_account_id and key):
            raise NotConfigured("cloudflare reranking needs CLOUDFLARE_ACCOUNT_ID and an API key")
        return CloudflareReranker(
            http,
            account_id=settings.cloudflare_account_id,
            api_token=key,
            model=settings.rerank_model,
            timeout=settings.rerank_timeout_seconds,
        )
    if settings.rerank_provider == "http":
        if not settings.rerank_url:
            raise NotConfigured("http reranking needs MNEMOSTREAM_RERANK_URL")
        return HttpRerankReranker(
            http,
            url=settings.rerank_url,
            api_key=key,
            model=settings.rerank_model,
            timeout=settings.rerank_timeout_seconds,
        )
    return None


def build_extractor(settings: Settings, http: httpx.AsyncClient) -> Extractor | None:
    if settings.extractor == "none":
        return None
    if settings.extractor == "llm":
        if not settings.llm_base_url:
            raise NotConfigured("the llm extractor needs MNEMOSTREAM_LLM_BASE_URL")
        key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
        return OpenAICompatibleExtractor(
            http,
            base_url=settings.llm_base_url,
            api_key=key,
            model=settings.llm_model,
            timeout=settings.llm_timeout_seconds,
        )
    from engine.ingest.extraction.rules import RuleBasedExtractor

    return RuleBasedExtractor()


def build_summariser(settings: Settings, http: httpx.AsyncClient) -> Summariser:
    """Session compression's summariser: the OpenAI-compatible LLM when
    MNEMOSTREAM_LLM_BASE_URL is set (whatever the extractor), else the offline rules."""
    if not settings.llm_base_url:
        return RuleSummariser()
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
    return OpenAICompatibleSummariser(
        http,
        base_url=settings.llm_base_url,
        api_key=key,
        model=settings.llm_model,
        timeout=settings.llm_timeout_seconds,
    )


def build_pinner(settings: Settings, http: httpx.AsyncClient) -> ArchivePinner | None:
    """Pinata pinning of archives, only when credentials *and* an encryption key are set:
    an archive is never pinned in plaintext (fixes reference §16.6)."""
    jwt = settings.pinata_jwt.get_secret_value() if settings.pinata_jwt else None
    key = settings.pinata_api_key
    secret = settings.pinata_api_secret.get_secret_value() if settings.pinata_api_secret else None
    if not (jwt or (key and secret)) or settings.archive_encryption_key is None:
        return None
    return PinataPinner(
        http, jwt=jwt, api_key=key, api_secret=secret, base_url=settings.pinata_base_url
    )


def ingest_policy(settings: Settings) -> IngestPolicy:
    return IngestPolicy(
        working_lines=settings.working_lines,
        session_ttl_ms=int(settings.session_ttl_days * DAY_MS),
    )


def extraction_policy(settings: Settings) -> ExtractionPolicy:
    return ExtractionPolicy(
        max_facts=settings.fact_max_per_turn,
        min_confidence=settings.fact_min_confidence,
        max_chars=settings.fact_max_chars,
    )


def search_policy(settings: Settings) -> SearchPolicy:
    return SearchPolicy(
        relevance=RelevancePolicy(
            semantic_weight=settings.semantic_weight,
            min_cosine=settings.min_cosine,
            min_lexical=settings.min_lexical,
        ),
        query_cache_ttl_seconds=settings.query_cache_ttl_seconds,
        namespace_ttl_seconds=4 * settings.query_cache_ttl_seconds,
        half_life_days=settings.half_life_days,
        mmr_lambda=settings.mmr_lambda,
        rerank_min_candidates=settings.rerank_min_candidates,
        rerank_dominance_delta=settings.rerank_dominance_delta,
    )
