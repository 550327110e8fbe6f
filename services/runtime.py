"""The composition root: every client (Mongo, Redis, httpx, embedder) is built here, once, and
closed here. Nothing else in the code base opens a connection."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from engine.adapters.atlas_vectors import AtlasVectorIndex, ensure_vector_index
from engine.adapters.http_embedder import HttpEmbedder
from engine.adapters.memory import HashingEmbedder
from engine.adapters.mongo import (
    MEMORY,
    MongoArchiveStore,
    MongoMemoryStore,
    MongoPatternStore,
    MongoRelationStore,
    MongoTranscriptStore,
    MongoWorkingStore,
    ensure_schema,
)
from engine.adapters.mongo.evals import MongoEvalStore
from engine.adapters.mongo.evals import ensure_indexes as ensure_eval_indexes
from engine.adapters.mongo.items import MongoItemStore
from engine.adapters.mongo.jobs import MongoJobStore, MongoMaintenanceStore
from engine.adapters.mongo.pattern_counts import MongoPatternCounter
from engine.adapters.mongo.schema import ensure_pattern_indexes
from engine.adapters.mongo.sessions import MongoSessionStore
from engine.adapters.mongo.skills import MongoSkillStore
from engine.adapters.openai_extractor import OpenAICompatibleExtractor
from engine.adapters.openai_summariser import OpenAICompatibleSummariser
from engine.adapters.pinata import PinataPinner
from engine.adapters.redis_cache import RedisQueryCache
from engine.adapters.rerankers import CloudflareReranker, HttpRerankReranker
from engine.embedding_cache import CachedEmbedder
from engine.ingest.extraction.types import ExtractionPolicy, Extractor
from engine.ingest.facts import FactWriter
from engine.ingest.remember import Rememberer
from engine.ingest.turns import DAY_MS, IngestPolicy, TurnRecorder
from engine.ports import Embedder, VectorIndex
from engine.retrieval.relevance import RelevancePolicy
from engine.retrieval.rerank import Reranker
from engine.retrieval.search import MemorySearch, SearchPolicy
from engine.retrieval.usage import AccessRecorder
from engine.retrieval.vector_index import ExactVectorIndex
from engine.upkeep.compression import RuleSummariser, Summariser
from services.endpoints import Endpoints, NotConfigured, read_endpoints
from services.settings import Settings
from services.stream.security import kafka_options, mongo_options, redis_options, redis_url

log = logging.getLogger(__name__)


def endpoints(settings: Settings) -> Endpoints:
    """Configured URLs, else the running local stack's (`mnemostream infra up`)."""
    local = read_endpoints(settings.state_dir)
    kafka = settings.kafka_bootstrap or (local.kafka_bootstrap if local else None)
    mongo = settings.mongo_uri.get_secret_value() if settings.mongo_uri else None
    mongo = mongo or (local.mongo_uri if local else None)
    redis = settings.redis_url.get_secret_value() if settings.redis_url else None
    redis = redis or (local.redis_url if local else None)
    if not (kafka and mongo and redis):
        raise NotConfigured(
            "no Kafka/MongoDB/Redis configured: set MNEMOSTREAM_KAFKA_BOOTSTRAP, "
            "MNEMOSTREAM_MONGO_URI and MNEMOSTREAM_REDIS_URL, or run `mnemostream infra up`"
        )
    return Endpoints(kafka_bootstrap=kafka, mongo_uri=mongo, redis_url=redis)


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


def build_pinner(settings: Settings, http: httpx.AsyncClient) -> PinataPinner | None:
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


@dataclass(slots=True)
class Runtime:
    settings: Settings
    endpoints: Endpoints
    mongo: AsyncMongoClient[dict[str, Any]]
    redis: Redis
    http: httpx.AsyncClient
    embedder: Embedder
    recorder: TurnRecorder
    rememberer: Rememberer
    search: MemorySearch
    access: AccessRecorder
    facts: FactWriter
    memory: MongoMemoryStore
    maintenance: MongoMaintenanceStore
    jobs: MongoJobStore
    patterns: MongoPatternCounter
    skills: MongoSkillStore
    archives: MongoArchiveStore
    transcripts: MongoTranscriptStore
    pinner: PinataPinner | None
    items: MongoItemStore
    sessions: MongoSessionStore
    extractor: Extractor | None
    extraction_policy: ExtractionPolicy
    evals: MongoEvalStore
    summariser: Summariser
    kafka_options: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """aiokafka security arguments of every Kafka client (`services.stream.security`)."""

    def group_id(self, group: str) -> str:
        return f"{self.settings.group_prefix}.{group}"


@asynccontextmanager
async def open_runtime(
    settings: Settings, embedder: Embedder | None = None
) -> AsyncIterator[Runtime]:
    """Connect, ensure the database schema (sequentially, before any consumer), yield."""
    ends = endpoints(settings)
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        ends.mongo_uri,
        retryWrites=False,
        serverSelectionTimeoutMS=10_000,
        # a server that accepts a request and never answers is an outage too: the read times
        # out (NetworkTimeout, a ConnectionFailure) and the message is retried, not wedged
        socketTimeoutMS=30_000,
        maxPoolSize=15,
        minPoolSize=2,
        tz_aware=True,
        **mongo_options(settings),
    )
    redis = Redis.from_url(
        redis_url(settings, ends.redis_url),
        socket_connect_timeout=2,
        socket_timeout=2,
        **redis_options(settings, ends.redis_url),
    )
    http = httpx.AsyncClient()
    try:
        db = mongo[settings.mongo_db]
        await ensure_schema(db)
        await ensure_pattern_indexes(db)
        await ensure_eval_indexes(db)
        cache = RedisQueryCache(redis, prefix=settings.cache_prefix or settings.mongo_db)
        model: Embedder = embedder or build_embedder(settings, http)
        if settings.embedding_cache_ttl_seconds > 0:
            model = CachedEmbedder(model, cache, ttl_seconds=settings.embedding_cache_ttl_seconds)
        transcripts, working = MongoTranscriptStore(db), MongoWorkingStore(db)
        memory = MongoMemoryStore(db)
        use_atlas = settings.vector_search == "atlas" and await ensure_vector_index(
            db[MEMORY], model.dimension, wait_seconds=60
        )
        if settings.vector_search == "atlas" and not use_atlas:
            log.warning("the server has no Atlas Search: using the exact vector index")
        index: VectorIndex = (
            AtlasVectorIndex(db[MEMORY])
            if use_atlas
            else ExactVectorIndex(memory, max_tenants=settings.vector_cache_tenants)
        )
        access = AccessRecorder(memory)
        relations = MongoRelationStore(db)
        yield Runtime(
            settings=settings,
            endpoints=ends,
            mongo=mongo,
            redis=redis,
            http=http,
            embedder=model,
            recorder=TurnRecorder(
                transcripts,
                working,
                memory,
                model,
                IngestPolicy(
                    working_lines=settings.working_lines,
                    session_ttl_ms=int(settings.session_ttl_days * DAY_MS),
                ),
            ),
            rememberer=Rememberer(memory, model),
            search=MemorySearch(
                transcripts=transcripts,
                working=working,
                patterns=MongoPatternStore(db),
                archives=MongoArchiveStore(db),
                index=index,
                embedder=model,
                cache=cache,
                reranker=build_reranker(settings, http),
                access=access,
                relations=relations,
                policy=SearchPolicy(
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
                ),
            ),
            access=access,
            facts=FactWriter(memory, relations, model),
            memory=memory,
            maintenance=MongoMaintenanceStore(db),
            jobs=MongoJobStore(db),
            patterns=MongoPatternCounter(db),
            skills=MongoSkillStore(db),
            archives=MongoArchiveStore(db),
            transcripts=transcripts,
            pinner=build_pinner(settings, http),
            items=MongoItemStore(db),
            sessions=MongoSessionStore(db),
            extractor=build_extractor(settings, http),
            extraction_policy=ExtractionPolicy(
                max_facts=settings.fact_max_per_turn,
                min_confidence=settings.fact_min_confidence,
                max_chars=settings.fact_max_chars,
            ),
            evals=MongoEvalStore(db),
            summariser=build_summariser(settings, http),
            kafka_options=kafka_options(settings),
        )
    finally:
        await http.aclose()
        await redis.aclose()
        await mongo.close()
