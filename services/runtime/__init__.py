"""The composition root: every client (Mongo, Redis, httpx, embedder) is built here, once, and
closed here. Nothing else in the code base opens a connection.

A `Runtime` holds the stores, typed on the engine's ports, and the heavy parts (embedder,
reranker, extractor, summariser, archive pinner, search) as builders: a part is built when a
group first uses it, or up front by `Runtime.prepare` for the parts the process's groups
declare (`services.groups.app.NEEDS`), so the invalidation group never loads an embedder.
Parts: `services.runtime.parts`. Two builds: `open_runtime` (MongoDB, Redis, the configured
providers) and `services.runtime.memory.memory_runtime` (in-memory adapters, the fast tier).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import httpx
from pymongo import AsyncMongoClient
from redis.asyncio import Redis

from engine.adapters.atlas_index import ensure_vector_index
from engine.adapters.atlas_vectors import AtlasVectorIndex
from engine.adapters.embedding_cache import CachedEmbedder
from engine.adapters.mongo import MEMORY, MongoMemoryStore, ensure_schema
from engine.adapters.mongo.evals import ensure_indexes as ensure_eval_indexes
from engine.adapters.mongo.schema import ensure_pattern_indexes
from engine.adapters.mongo.tenant_keys import MongoTenantKeys, ensure_tenant_keys
from engine.adapters.mongo.vectors import MongoVectorStore
from engine.adapters.redis_cache import RedisQueryCache
from engine.embedding_store import StoredEmbedder
from engine.ingest.extraction.types import ExtractionPolicy, Extractor
from engine.ingest.facts import FactWriter
from engine.ingest.remember import Rememberer
from engine.ingest.turns import IngestPolicy, KnownVectors, TurnRecorder
from engine.ports import ArchivePinner, Embedder, Reranker, VectorIndex
from engine.retrieval.search import MemorySearch, SearchPolicy
from engine.retrieval.usage import AccessRecorder
from engine.retrieval.vector_index import ExactVectorIndex
from engine.sealing import EventSealer
from engine.upkeep.archive_seal import ArchiveKeys, SealedArchiveStore
from engine.upkeep.compression import Summariser
from services.endpoints import Endpoints, NotConfigured, read_endpoints
from services.runtime.mongo_stores import mongo_stores
from services.runtime.parts import PARTS, Lazy, NotPrepared, Part, Parts, Stores
from services.runtime.providers import (
    archive_keys,
    build_embedder,
    build_extractor,
    build_pinner,
    build_reranker,
    build_summariser,
    event_sealer,
    extraction_policy,
    ingest_policy,
    search_policy,
)
from services.runtime.threads import limit_blas_threads
from services.settings import Settings
from services.stream.security import kafka_options, mongo_options, redis_options, redis_url

log = logging.getLogger(__name__)
T = TypeVar("T")
Progress = Callable[[str], None]  # told of each start-up step (`mnemostream run` prints them)

__all__ = [
    "PARTS",
    "Clients",
    "NotConfigured",
    "NotPrepared",
    "Part",
    "Parts",
    "Runtime",
    "Stores",
    "endpoints",
    "open_runtime",
]


@dataclass(frozen=True, slots=True)
class Clients:
    """The open connections of a runtime on real servers (`open_runtime`)."""

    endpoints: Endpoints
    mongo: AsyncMongoClient[dict[str, Any]]
    redis: Redis
    http: httpx.AsyncClient


class Runtime:
    """What the consumer groups work with: settings, stores (ports), policies and the heavy
    parts, built on first use (`prepare` builds them up front)."""

    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        parts: Parts,
        *,
        clients: Clients | None = None,
        kafka_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.archive_keys: ArchiveKeys | None = archive_keys(settings)
        """The archive keys (None: archives are stored in clear), `engine.upkeep.archive_seal`."""
        # every archive is sealed on its way into the store and opened on its way out
        stores = replace(stores, archives=SealedArchiveStore(stores.archives, self.archive_keys))
        self.sealer: EventSealer | None = event_sealer(settings, stores.tenant_keys)
        """Seals and opens events under tenant keys (None: events in clear), issue 31."""
        self.stores = stores
        self.parts = parts
        self.clients = clients
        self.kafka_options: Mapping[str, Any] = kafka_options or {}
        """aiokafka security arguments of every Kafka client (`services.stream.security`)."""
        self.transcripts = stores.transcripts
        self.memory = stores.memory
        self.items = stores.items
        self.patterns = stores.patterns
        self.skills = stores.skills
        self.archives = stores.archives
        self.maintenance = stores.maintenance
        self.jobs = stores.jobs
        self.sessions = stores.sessions
        self.evals = stores.evals
        self.cache = stores.cache
        self.history = stores.history
        self.extraction_policy: ExtractionPolicy = extraction_policy(settings)
        self.search_policy: SearchPolicy = search_policy(settings)
        self.ingest_policy: IngestPolicy = ingest_policy(settings)
        self.access = AccessRecorder(stores.memory)
        self._embedder = Lazy(self._built("embedder", lambda: self._stored(parts.embedder())))
        self._reranker = Lazy(self._built("reranker", parts.reranker))
        self._extractor = Lazy(self._built("extractor", parts.extractor))
        self._summariser = Lazy(self._built("summariser", parts.summariser))
        self._pinner = Lazy(self._built("pinner", parts.pinner))
        self._recorder = Lazy(self._turn_recorder)
        self._rememberer = Lazy(lambda: Rememberer(stores.memory, self.embedder, stores.history))
        self._facts = Lazy(
            lambda: FactWriter(
                stores.memory,
                stores.relations,
                self.embedder,
                self._known(),
                stores.history,
                stores.graph,
            )
        )
        self._search: MemorySearch | None = None

    @staticmethod
    def _built(part: Part, build: Callable[[], T]) -> Callable[[], T]:
        def logged() -> T:
            value = build()
            log.info("built the %s", part, extra={"part": part})
            return value

        return logged

    def _stored(self, built: Embedder) -> StoredEmbedder:
        """The embedder behind the durable vector store (a composition root may have wrapped
        it already, with its query cache)."""
        return (
            built
            if isinstance(built, StoredEmbedder)
            else StoredEmbedder(built, self.stores.vectors)
        )

    def _turn_recorder(self) -> TurnRecorder:
        s = self.stores
        embedder = self._embedder.get()
        return TurnRecorder(
            s.transcripts,
            s.working,
            s.memory,
            embedder,
            self.ingest_policy,
            deferred=self.settings.embedding.deferred,
        )

    def _known(self) -> KnownVectors | None:
        """The stored-vector lookup of the deferred embedding stage (None: embed inline)."""
        return self.embedder.known if self.settings.embedding.deferred else None

    def _cells(self) -> dict[Part, Lazy[Any]]:
        return {
            "embedder": self._embedder,
            "reranker": self._reranker,
            "extractor": self._extractor,
            "summariser": self._summariser,
            "pinner": self._pinner,
        }

    async def prepare(self, needs: Iterable[Part], progress: Progress | None = None) -> None:
        """Build the named parts now (at start-up, before any consumer runs); `progress` is
        told of each part before it is built (a local model may take a while to load)."""
        wanted, cells, say = set(needs), self._cells(), progress or (lambda _: None)
        for part in sorted(wanted - {"search"}):
            if not cells[part].built:
                say(f"building the {part}")
            cells[part].get()
        if "search" in wanted and self._search is None:
            say("building the search (and its vector index)")
            self._search = await self._build_search()

    def built(self) -> frozenset[Part]:
        """The heavy parts built so far."""
        done = {part for part, cell in self._cells().items() if cell.built}
        return frozenset(done | ({"search"} if self._search is not None else set()))

    async def _build_search(self) -> MemorySearch:
        s = self.stores
        index = await self.parts.index(self.embedder)
        self.access.follow(index.accessed)
        return MemorySearch(
            transcripts=s.transcripts,
            working=s.working,
            patterns=s.pattern_layer,
            archives=s.archives,
            index=index,
            embedder=self.embedder,
            cache=s.cache,
            reranker=self.reranker,
            access=self.access,
            relations=s.relations,
            policy=self.search_policy,
        )

    @property
    def embedder(self) -> StoredEmbedder:
        """The configured embedder behind the durable vector store: a document text it has
        embedded once is never embedded again."""
        return self._embedder.get()

    @property
    def reranker(self) -> Reranker | None:
        return self._reranker.get()

    @property
    def extractor(self) -> Extractor | None:
        return self._extractor.get()

    @property
    def summariser(self) -> Summariser:
        return self._summariser.get()

    @property
    def pinner(self) -> ArchivePinner | None:
        return self._pinner.get()

    @property
    def recorder(self) -> TurnRecorder:
        return self._recorder.get()

    @property
    def rememberer(self) -> Rememberer:
        return self._rememberer.get()

    @property
    def facts(self) -> FactWriter:
        return self._facts.get()

    @property
    def search(self) -> MemorySearch:
        """The six-layer search; built by `prepare({"search"})` (its index may need I/O)."""
        if self._search is None:
            raise NotPrepared("the search was not prepared: declare it in the group's needs")
        return self._search

    def _clients(self) -> Clients:
        if self.clients is None:
            raise NotConfigured("this runtime has no server connections (in-memory build)")
        return self.clients

    @property
    def endpoints(self) -> Endpoints:
        return self._clients().endpoints

    @property
    def mongo(self) -> AsyncMongoClient[dict[str, Any]]:
        return self._clients().mongo

    @property
    def redis(self) -> Redis:
        return self._clients().redis

    @property
    def http(self) -> httpx.AsyncClient:
        return self._clients().http

    def group_id(self, group: str) -> str:
        return f"{self.settings.group_prefix}.{group}"


def endpoints(settings: Settings) -> Endpoints:
    """Configured URLs, else the running local stack's (`mnemostream infra up`)."""
    local = read_endpoints(settings.state_dir)
    kafka = settings.kafka.bootstrap or (local.kafka_bootstrap if local else None)
    mongo = settings.mongo.uri.get_secret_value() if settings.mongo.uri else None
    mongo = mongo or (local.mongo_uri if local else None)
    redis = settings.redis.url.get_secret_value() if settings.redis.url else None
    redis = redis or (local.redis_url if local else None)
    if not (kafka and mongo and redis):
        raise NotConfigured(
            "no Kafka/MongoDB/Redis configured: set MNEMOSTREAM_KAFKA_BOOTSTRAP, "
            "MNEMOSTREAM_MONGO_URI and MNEMOSTREAM_REDIS_URL, or run `mnemostream infra up`"
        )
    return Endpoints(kafka_bootstrap=kafka, mongo_uri=mongo, redis_url=redis)


@asynccontextmanager
async def open_runtime(
    settings: Settings, embedder: Embedder | None = None, *, needs: Iterable[Part] = PARTS
) -> AsyncIterator[Runtime]:
    """Connect, ensure the database schema (sequentially, before any consumer), build the
    `needs` parts, yield. `embedder` replaces the configured one (tests share one model)."""
    ends = endpoints(settings)
    limit_blas_threads(settings.search.blas_threads)
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
        db = mongo[settings.mongo.db]
        await ensure_schema(db)
        await ensure_pattern_indexes(db)
        await ensure_eval_indexes(db)
        cache = RedisQueryCache(redis, prefix=settings.redis.cache_prefix or settings.mongo.db)
        memory = MongoMemoryStore(db)
        vectors = MongoVectorStore(mongo[settings.embedding.store_db or settings.mongo.db])

        def model() -> StoredEmbedder:
            built = embedder or build_embedder(settings, http)
            ttl = settings.embedding.cache_ttl_seconds
            # documents: the durable vector store; queries: the Redis cache (24 h)
            queries = CachedEmbedder(built, cache, ttl_seconds=ttl) if ttl > 0 else built
            return StoredEmbedder(built, vectors, queries)

        async def index(model: Embedder) -> VectorIndex:
            use_atlas = settings.search.vector_search == "atlas" and await ensure_vector_index(
                db[MEMORY], model.dimension, wait_seconds=60
            )
            if settings.search.vector_search == "atlas" and not use_atlas:
                log.warning("the server has no Atlas Search: using the exact vector index")
            if use_atlas:
                return AtlasVectorIndex(db[MEMORY])
            return ExactVectorIndex(
                memory,
                max_bytes=settings.search.state_max_mb << 20,
                margin_ms=settings.search.state_margin_ms,
                recheck_ms=settings.search.query_cache_ttl_seconds * 1000,
            )

        stores = mongo_stores(db, memory=memory, cache=cache, vectors=vectors)
        # the key store is there without a key too, so an erasure anywhere deletes the key;
        # its collection is made only where events are sealed
        keys_db = mongo[settings.sealing.keys_db or settings.mongo.db]
        if settings.sealing.encryption_key is not None:
            await ensure_tenant_keys(keys_db)
        stores = replace(stores, tenant_keys=MongoTenantKeys(keys_db))
        parts = Parts(
            embedder=model,
            reranker=lambda: build_reranker(settings, http),
            extractor=lambda: build_extractor(settings, http),
            summariser=lambda: build_summariser(settings, http),
            pinner=lambda: build_pinner(settings, http),
            index=index,
        )
        rt = Runtime(
            settings,
            stores,
            parts,
            clients=Clients(endpoints=ends, mongo=mongo, redis=redis, http=http),
            kafka_options=kafka_options(settings),
        )
        await rt.prepare(needs)
        yield rt
    finally:
        await http.aclose()
        await redis.aclose()
        await mongo.close()
