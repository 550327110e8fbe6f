"""`MemoryStore` on MongoDB: the `memory` collection, one document per row, keyed by its
`vectorId` (so an insert is an idempotent upsert of `$setOnInsert`).

A pending row (`MemoryRow.pending`, its vector not computed yet) is stored with
`embeddingDim: 0` and no `embedding` field (so an Atlas vector index never sees a vector of
the wrong dimension); `fill_embeddings` finds it by `_id` and `embeddingDim: 0` and sets both.
Every other writer of an embedding (`items.patch_update`) sets `embeddingDim` with it.

Every write sets `changedAt` (`engine.adapters.mongo.changes`): `changed_rows` reads back
what changed since a time, for the exact index's deltas."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np
from bson import decode
from cachetools import LRUCache
from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo.batches import bulk_updates, insert_ignoring_duplicates
from engine.adapters.mongo.changes import CHANGED_AT, read_epoch, restamp_slow, stamp
from engine.adapters.mongo.documents import (
    Doc,
    agent_query,
    scope_doc,
    scope_of,
    tenant_query,
    unvector,
    vector,
)
from engine.adapters.mongo.schema import MEMORY
from engine.errors import DependencyFailed
from engine.ports import VectorStats
from engine.records import INACTIVE_STATUSES, MemoryRow, Vector
from engine.scoping import TenantFilter


def row_of(doc: Mapping[str, Any]) -> MemoryRow:
    """The row of a stored `memory` document (the inverse of `MongoMemoryStore.document`)."""
    return MemoryRow(
        vector_id=doc["vectorId"],
        scope=scope_of(doc),
        content=doc["content"],
        embedding=_embedding_of(doc),
        embedding_model=doc.get("embeddingModel", ""),
        source=doc["source"],
        created_at=int(doc["createdAt"]),
        metadata=dict(doc.get("metadata") or {}),
        decay_score=float(doc.get("decayScore", 1.0)),
        access_count=int(doc.get("accessCount", 0)),
        invalid_at=doc.get("invalidAt"),
        superseded_by=doc.get("supersededBy"),
        units=_units_of(doc),
    )


UNITS = "unitEmbeddings"
"""A turn row's message vectors (`MemoryRow.units`): a list of BSON float32 vectors."""


def units_doc(units: Vector | None) -> Doc:
    """The stored field of a row's unit vectors (none when it has none)."""
    return {} if units is None or not units.size else {UNITS: [vector(u) for u in units]}


def _units_of(doc: Mapping[str, Any]) -> Vector | None:
    value = doc.get(UNITS)
    if not value:
        return None
    return np.stack([unvector(u) for u in value]).astype(np.float32)


def _embedding_of(doc: Mapping[str, Any]) -> Vector:
    value = doc.get("embedding")
    return np.zeros(0, dtype=np.float32) if value is None else unvector(value)


DECODED_ROWS = 50_000
"""Rows kept decoded by the bytes of their stored document (`MongoMemoryStore._rows`)."""


class MongoMemoryStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._db = db
        self._col: AsyncCollection[Doc] = db[MEMORY]
        # Reads come back as raw batches; a document whose bytes were seen before gives the
        # row decoded then. The exact index reads the tenant's every row after each write to
        # it: most are unchanged, and decoding them was most of a reload's client time.
        self._decoded: LRUCache[bytes, MemoryRow] = LRUCache(maxsize=DECODED_ROWS)

    @staticmethod
    def document(row: MemoryRow, changed_at: int | None = None) -> Doc:
        """The stored form of a row (also what replay verification compares, without
        `changedAt`: the time of the write, not of the event)."""
        return {
            "_id": row.vector_id,
            "vectorId": row.vector_id,
            **scope_doc(row.scope),
            "content": row.content,
            **({} if row.pending else {"embedding": vector(row.embedding), **units_doc(row.units)}),
            "embeddingModel": row.embedding_model,
            "embeddingDim": row.embedding_dim,
            "source": row.source,
            "decayScore": row.decay_score,
            "accessCount": row.access_count,
            "lastAccessedAt": row.created_at,
            "createdAt": row.created_at,
            "updatedAt": row.created_at,
            "validAt": row.created_at,
            "invalidAt": row.invalid_at,
            "supersededBy": row.superseded_by,
            "metadata": {"status": "active", **row.metadata},
            **({} if changed_at is None else {CHANGED_AT: changed_at}),
        }

    async def insert_if_absent(self, row: MemoryRow) -> bool:
        try:
            result = await self._col.update_one(
                {"_id": row.vector_id}, {"$setOnInsert": self.document(row, stamp())}, upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"memory insert failed: {exc}") from exc
        return result.upserted_id is not None

    async def exists(self, vector_id: str) -> bool:
        try:
            return await self._col.find_one({"_id": vector_id}, {"_id": 1}) is not None
        except PyMongoError as exc:
            raise DependencyFailed(f"memory read failed: {exc}") from exc

    async def insert_many_if_absent(self, rows: Sequence[MemoryRow]) -> set[str]:
        # the first row of a repeated id wins, as with consecutive `insert_if_absent`s
        first = {row.vector_id: row for row in reversed(rows)}
        at = stamp()
        docs = [self.document(first[i], at) for i in dict.fromkeys(r.vector_id for r in rows)]
        inserted = await insert_ignoring_duplicates(self._col, docs, "memory insert")
        await restamp_slow(self._col, inserted, at, "memory insert")
        return {str(i) for i in inserted}

    async def fill_embeddings(
        self,
        model: str,
        vectors: Mapping[str, Vector],
        units: Mapping[str, Vector] | None = None,
    ) -> int:
        at = stamp()
        own = units or {}
        ops = [
            UpdateOne(
                {"_id": vector_id, "embeddingModel": model, "embeddingDim": 0},
                {
                    "$set": {
                        "embedding": vector(v),
                        "embeddingDim": int(v.shape[0]),
                        **units_doc(own.get(vector_id)),
                        CHANGED_AT: at,
                    }
                },
            )
            for vector_id, v in vectors.items()
            if v.size
        ]
        filled = await bulk_updates(self._col, ops, "memory embedding fill")
        await restamp_slow(self._col, list(vectors), at, "memory embedding fill")
        return filled

    async def status_of(self, vector_id: str) -> str | None:
        try:
            doc = await self._col.find_one({"_id": vector_id}, {"metadata.status": 1})
        except PyMongoError as exc:
            raise DependencyFailed(f"memory read failed: {exc}") from exc
        if doc is None:
            return None
        status = (doc.get("metadata") or {}).get("status", "active")
        return status if isinstance(status, str) else "active"

    async def revive(self, vector_id: str, at: int) -> bool:
        try:
            result = await self._col.update_one(
                {"_id": vector_id, "metadata.status": "deleted"},
                {
                    "$set": {
                        "metadata.status": "active",
                        "createdAt": at,
                        "validAt": at,
                        "updatedAt": at,
                        "decayScore": 1.0,
                        CHANGED_AT: stamp(),
                    },
                    "$unset": {"metadata.deletedAt": ""},
                },
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"memory revive failed: {exc}") from exc
        return result.modified_count == 1

    async def bump_access(self, vector_ids: Sequence[str], at: int) -> int:
        if not vector_ids:
            return 0
        # no `changedAt`: a count is no change a delta reads back (`MemoryStore.bump_access`).
        # Stamped, the bumps of the rows a search returned were most of every later delta's
        # rows (~80 of ~80 a request over Kafka at 10k, `benchmarks.retrieval --after-writes`)
        try:
            result = await self._col.update_many(
                {"_id": {"$in": list(vector_ids)}},
                {"$inc": {"accessCount": 1}, "$max": {"lastAccessedAt": at}},
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"access bump failed: {exc}") from exc
        return result.modified_count

    async def active_rows(
        self,
        where: TenantFilter,
        *,
        sources: Sequence[str] | None = None,
        include_superseded: bool = False,
    ) -> list[MemoryRow]:
        hidden = ("deleted",) if include_superseded else INACTIVE_STATUSES
        return await self._tenant_rows(
            where,
            {},
            lambda r: r.status not in hidden and (sources is None or r.source in sources),
        )

    async def changed_rows(self, where: TenantFilter, since: int) -> list[MemoryRow]:
        return await self._tenant_rows(where, {CHANGED_AT: {"$gte": since}}, lambda _: True)

    async def epoch(self, agent_wallet: str) -> int:
        return await read_epoch(self._db, agent_wallet)

    async def _tenant_rows(
        self, where: TenantFilter, extra: Doc, keep: Callable[[MemoryRow], bool]
    ) -> list[MemoryRow]:
        """The rows the filter admits (`TenantFilter.admits`) that `keep` keeps, read by one
        query per `userAddress` value (the user, and null for the agent's knowledge) on
        indexed fields alone, the rest filtered here. The MongoDB-wire server here plans an
        index scan only when every predicate is bounded by the index: a `$nin` on the status,
        a source or a top-level `$or` beside the tenant made it scan the whole collection
        (every tenant's rows: ~0.3-0.5 s per 10k documents, explain: COLLSCAN), where the
        tenant's (agent, user[, changedAt]) alone is an index scan (a delta: 2 ms)."""
        users = list(dict.fromkeys([*where.users, *([None] if where.widened else [])]))
        parts = await asyncio.gather(
            *(
                self._rows({"agentWallet": where.agent_wallet, "userAddress": user, **extra})
                for user in users
            )
        )
        return [r for part in parts for r in part if where.admits(r.scope, r.source) and keep(r)]

    async def slot_rows(self, where: TenantFilter, slot: str) -> list[MemoryRow]:
        query = tenant_query(where)
        query.update(
            {"source": "fact", "metadata.slot": slot, "metadata.status": {"$ne": "deleted"}}
        )
        return await self._rows(query)

    async def set_slot_if_absent(self, vector_id: str, where: TenantFilter, slot: str) -> bool:
        # `"metadata.slot": None` matches a missing slot as well as a null one
        query = {**tenant_query(where), "_id": vector_id, "source": "fact", "metadata.slot": None}
        try:
            result = await self._col.update_one(
                query, {"$set": {"metadata.slot": slot, CHANGED_AT: stamp()}}
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"fact slot update failed: {exc}") from exc
        return result.modified_count == 1

    async def set_validity(
        self, vector_id: str, invalid_at: int | None, superseded_by: str | None
    ) -> None:
        status = "superseded" if invalid_at is not None else "active"
        try:
            await self._col.update_one(
                {"_id": vector_id},
                {
                    "$set": {
                        "invalidAt": invalid_at,
                        "supersededBy": superseded_by,
                        "metadata.status": status,
                        CHANGED_AT: stamp(),
                    }
                },
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"fact validity update failed: {exc}") from exc

    async def stats(self, agent_wallet: str, user_address: str | None = None) -> VectorStats:
        """Active rows of the agent grouped by source in one aggregation (a missing
        `decayScore` counts as 1, the default of a new row)."""
        query = agent_query(agent_wallet, user_address)
        query["metadata.status"] = {"$nin": list(INACTIVE_STATUSES)}
        group = {
            "_id": "$source",
            "n": {"$sum": 1},
            "decay": {"$sum": {"$ifNull": ["$decayScore", 1.0]}},
            "oldest": {"$min": "$createdAt"},
            "newest": {"$max": "$createdAt"},
        }
        try:
            cursor = await self._col.aggregate([{"$match": query}, {"$group": group}])
            groups = await cursor.to_list(length=None)
        except PyMongoError as exc:
            raise DependencyFailed(f"memory stats failed: {exc}") from exc
        total = sum(int(g["n"]) for g in groups)
        if not total:
            return VectorStats()
        return VectorStats(
            total=total,
            avg_decay_score=sum(float(g["decay"]) for g in groups) / total,
            oldest=min(int(g["oldest"]) for g in groups),
            newest=max(int(g["newest"]) for g in groups),
            by_source={str(g["_id"]): int(g["n"]) for g in groups},
        )

    async def _rows(self, query: Doc) -> list[MemoryRow]:
        rows: list[MemoryRow] = []
        try:
            async for batch in self._col.find_raw_batches(query):
                view, at = memoryview(cast(bytes, batch)), 0
                while at < len(view):  # each document starts with its int32 length
                    size = int.from_bytes(view[at : at + 4], "little")
                    rows.append(self._row(view[at : at + size]))
                    at += size
        except PyMongoError as exc:
            raise DependencyFailed(f"memory read failed: {exc}") from exc
        return rows

    def _row(self, raw: bytes | memoryview) -> MemoryRow:
        """The row of a document's bytes: decoded once while the same bytes are read again
        (rows are frozen; a changed document has other bytes, hence a new row)."""
        key = hashlib.blake2b(raw, digest_size=20).digest()
        row = self._decoded.get(key)  # a hit is the most recently used
        if row is None:
            row = self._decoded[key] = row_of(decode(raw, self._col.codec_options))
        return row
