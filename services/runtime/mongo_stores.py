"""The stores of a runtime on MongoDB (and Redis for the query cache): one adapter per port,
over one database (`open_runtime` builds the clients and the vector store)."""

from __future__ import annotations

from typing import Any

from pymongo.asynchronous.database import AsyncDatabase

from engine.adapters.mongo import (
    MongoArchiveStore,
    MongoMemoryStore,
    MongoPatternStore,
    MongoRelationStore,
    MongoTranscriptStore,
    MongoWorkingStore,
)
from engine.adapters.mongo.erasure import MongoUserEraser
from engine.adapters.mongo.evals import MongoEvalStore
from engine.adapters.mongo.graph_sources import MongoGraphSources
from engine.adapters.mongo.history import MongoItemHistory
from engine.adapters.mongo.items import MongoItemStore
from engine.adapters.mongo.jobs import MongoJobStore, MongoMaintenanceStore
from engine.adapters.mongo.pattern_counts import MongoPatternCounter
from engine.adapters.mongo.skills import MongoSkillStore
from engine.ports import QueryCache, VectorStore
from services.runtime.parts import Stores


def mongo_stores(
    db: AsyncDatabase[dict[str, Any]],
    *,
    memory: MongoMemoryStore,
    cache: QueryCache,
    vectors: VectorStore,
) -> Stores:
    """Every store of the runtime over `db`; `memory` (shared with the vector index),
    `cache` and `vectors` are built by the caller."""
    working = MongoWorkingStore(db)  # the working buffer and the sessions API: one document
    return Stores(
        transcripts=MongoTranscriptStore(db),
        working=working,
        memory=memory,
        items=MongoItemStore(db),
        relations=MongoRelationStore(db),
        pattern_layer=MongoPatternStore(db),
        patterns=MongoPatternCounter(db),
        skills=MongoSkillStore(db),
        archives=MongoArchiveStore(db),
        maintenance=MongoMaintenanceStore(db),
        jobs=MongoJobStore(db),
        sessions=working,
        evals=MongoEvalStore(db),
        cache=cache,
        vectors=vectors,
        eraser=MongoUserEraser(db),
        history=MongoItemHistory(db),
        graph=MongoGraphSources(db),
    )
