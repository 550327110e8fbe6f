"""The composition root: every client (Mongo, Redis, embedder) is built here, once, and
closed here. Nothing else in the code base opens a connection."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from engine.adapters.memory import HashingEmbedder
from engine.adapters.mongo import (
    MongoMemoryStore,
    MongoTranscriptStore,
    MongoWorkingStore,
    ensure_schema,
)
from engine.adapters.redis_cache import RedisQueryCache
from engine.context import MemorySearch, SearchPolicy
from engine.ingest import DAY_MS, IngestPolicy, TurnRecorder
from engine.ports import Embedder
from engine.remember import Rememberer
from services.infra import Endpoints, read_endpoints
from services.settings import Settings

log = logging.getLogger(__name__)


class NotConfigured(RuntimeError):
    """No server URL was configured and no local stack is running."""


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


def build_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "hashing":
        return HashingEmbedder()
    from engine.adapters.local_embedder import LocalMiniLMEmbedder

    return LocalMiniLMEmbedder.load(threads=settings.embedder_threads)


@dataclass(slots=True)
class Runtime:
    settings: Settings
    endpoints: Endpoints
    mongo: AsyncMongoClient[dict[str, Any]]
    redis: Redis
    embedder: Embedder
    recorder: TurnRecorder
    rememberer: Rememberer
    search: MemorySearch

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
        maxPoolSize=15,
        minPoolSize=2,
        tz_aware=True,
    )
    redis = Redis.from_url(ends.redis_url, socket_connect_timeout=2, socket_timeout=2)
    try:
        db = mongo[settings.mongo_db]
        await ensure_schema(db)
        model = embedder or build_embedder(settings)
        transcripts, working = MongoTranscriptStore(db), MongoWorkingStore(db)
        memory = MongoMemoryStore(db)
        cache = RedisQueryCache(redis)
        yield Runtime(
            settings=settings,
            endpoints=ends,
            mongo=mongo,
            redis=redis,
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
                transcripts,
                working,
                memory,
                model,
                cache,
                SearchPolicy(
                    min_vector_score=settings.min_vector_score,
                    query_cache_ttl_seconds=settings.query_cache_ttl_seconds,
                    namespace_ttl_seconds=4 * settings.query_cache_ttl_seconds,
                ),
            ),
        )
    finally:
        await redis.aclose()
        await mongo.close()
