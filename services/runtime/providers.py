"""The heavy parts of a runtime, chosen by the settings: the embedder, the reranker, the fact
extractor, the session summariser and the archive pinner. Each is built only when a group
uses it (`services.runtime.Runtime`); and the engine's policies read from the settings."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

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
from engine.sealing import EventSealer, TenantKeyStore
from engine.upkeep.archive_seal import ArchiveKeys
from engine.upkeep.compression import RuleSummariser, Summariser
from services.endpoints import NotConfigured
from services.settings import Settings
from services.settings.pipeline import archive_key_bytes


def build_embedder(settings: Settings, http: httpx.AsyncClient) -> Embedder:
    embedding = settings.embedding
    if embedding.provider == "hashing":
        return HashingEmbedder()
    if embedding.provider in ("voyage", "openai"):
        if not embedding.base_url:
            raise NotConfigured(
                f"the {embedding.provider} embedder needs MNEMOSTREAM_EMBEDDING_BASE_URL"
            )
        key = embedding.api_key
        return HttpEmbedder(
            http,
            base_url=embedding.base_url,
            api_key=key.get_secret_value() if key else "",
            model=embedding.model,
            dimension=embedding.dimensions,
            style=embedding.provider,
            send_dimensions=embedding.send_dimensions,
            timeout=embedding.timeout_seconds,
        )
    from engine.adapters.local_embedder import LocalMiniLMEmbedder

    return LocalMiniLMEmbedder.load(
        threads=embedding.threads,
        document_nice=embedding.document_nice,
        query_threads=embedding.query_threads,
    )


def build_reranker(settings: Settings, http: httpx.AsyncClient) -> Reranker | None:
    search = settings.search
    key = search.rerank_api_key.get_secret_value() if search.rerank_api_key else ""
    if search.rerank_provider == "cloudflare":
        if not (search.cloudflare_account_id and key):
            raise NotConfigured("cloudflare reranking needs CLOUDFLARE_ACCOUNT_ID and an API key")
        return CloudflareReranker(
            http,
            account_id=search.cloudflare_account_id,
            api_token=key,
            model=search.rerank_model,
            timeout=search.rerank_timeout_seconds,
        )
    if search.rerank_provider == "http":
        if not search.rerank_url:
            raise NotConfigured("http reranking needs MNEMOSTREAM_RERANK_URL")
        return HttpRerankReranker(
            http,
            url=search.rerank_url,
            api_key=key,
            model=search.rerank_model,
            timeout=search.rerank_timeout_seconds,
        )
    return None


def build_extractor(settings: Settings, http: httpx.AsyncClient) -> Extractor | None:
    extraction = settings.extraction
    if extraction.extractor == "none":
        return None
    if extraction.extractor == "llm":
        if not extraction.llm_base_url:
            raise NotConfigured("the llm extractor needs MNEMOSTREAM_LLM_BASE_URL")
        key = extraction.llm_api_key.get_secret_value() if extraction.llm_api_key else ""
        return OpenAICompatibleExtractor(
            http,
            base_url=extraction.llm_base_url,
            api_key=key,
            model=extraction.llm_model,
            timeout=extraction.llm_timeout_seconds,
        )
    from engine.ingest.extraction.rules import RuleBasedExtractor

    return RuleBasedExtractor()


def build_summariser(settings: Settings, http: httpx.AsyncClient) -> Summariser:
    """Session compression's summariser: the OpenAI-compatible LLM when
    MNEMOSTREAM_LLM_BASE_URL is set (whatever the extractor), else the offline rules."""
    extraction = settings.extraction
    if not extraction.llm_base_url:
        return RuleSummariser()
    key = extraction.llm_api_key.get_secret_value() if extraction.llm_api_key else ""
    return OpenAICompatibleSummariser(
        http,
        base_url=extraction.llm_base_url,
        api_key=key,
        model=extraction.llm_model,
        timeout=extraction.llm_timeout_seconds,
    )


def archive_keys(settings: Settings) -> ArchiveKeys | None:
    """The archive keys (the current one seals, previous ones only open), or None when no
    archive key is set: archives are then stored in clear. The settings checked the keys."""
    archive = settings.archive
    if archive.encryption_key is None:
        return None

    def raw(key: SecretStr) -> bytes:
        value = archive_key_bytes(key)
        if value is None:  # the settings refuse such a key; a copy made unvalidated did not
            raise NotConfigured("an archive key is not base64 of 32 bytes")
        return value

    return ArchiveKeys(
        raw(archive.encryption_key), [raw(k) for k in archive.previous_encryption_keys]
    )


def event_sealer(settings: Settings, store: TenantKeyStore | None) -> EventSealer | None:
    """The sealer of events under tenant keys wrapped by the event master keys, or None when
    no event key is set (events are then published and read in clear)."""
    sealing = settings.sealing
    if sealing.encryption_key is None or store is None:
        return None

    def raw(key: SecretStr) -> bytes:
        value = archive_key_bytes(key)
        if value is None:  # the settings refuse such a key
            raise NotConfigured("an event key is not base64 of 32 bytes")
        return value

    masters = ArchiveKeys(
        raw(sealing.encryption_key), [raw(k) for k in sealing.previous_encryption_keys]
    )
    return EventSealer(masters, store)


def build_pinner(settings: Settings, http: httpx.AsyncClient) -> ArchivePinner | None:
    """Pinata pinning of archives, only when credentials *and* an encryption key are set:
    an archive is never pinned in plaintext (fixes reference §16.6)."""
    archive = settings.archive
    jwt = archive.pinata_jwt.get_secret_value() if archive.pinata_jwt else None
    key = archive.pinata_api_key
    secret = archive.pinata_api_secret.get_secret_value() if archive.pinata_api_secret else None
    if not (jwt or (key and secret)) or archive.encryption_key is None:
        return None
    return PinataPinner(
        http, jwt=jwt, api_key=key, api_secret=secret, base_url=archive.pinata_base_url
    )


def ingest_policy(settings: Settings) -> IngestPolicy:
    return IngestPolicy(
        working_lines=settings.working_lines,
        session_ttl_ms=int(settings.session_ttl_days * DAY_MS),
    )


def extraction_policy(settings: Settings) -> ExtractionPolicy:
    extraction = settings.extraction
    return ExtractionPolicy(
        max_facts=extraction.fact_max_per_turn,
        min_confidence=extraction.fact_min_confidence,
        max_chars=extraction.fact_max_chars,
    )


def search_policy(settings: Settings) -> SearchPolicy:
    return SearchPolicy(
        relevance=RelevancePolicy(
            semantic_weight=settings.search.semantic_weight,
            min_cosine=settings.search.min_cosine,
            min_lexical=settings.search.min_lexical,
        ),
        query_cache_ttl_seconds=settings.search.query_cache_ttl_seconds,
        namespace_ttl_seconds=4 * settings.search.query_cache_ttl_seconds,
        half_life_days=settings.search.half_life_days,
        mmr_lambda=settings.search.mmr_lambda,
        rerank_min_candidates=settings.search.rerank_min_candidates,
        rerank_dominance_delta=settings.search.rerank_dominance_delta,
    )
