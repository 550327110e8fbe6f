"""`VectorStore` on MongoDB: the `embeddings` collection, one document per content address
(`_id` is `engine.embedding_store.vector_key`: model, dimension and a hash of the text), the
vector stored as `memory` rows store theirs (a BSON float32 vector, `documents.vector`).

A key names its vector for good (same model, dimension and text, same vector), so writes are
plain inserts and a duplicate key only means another writer stored it first."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.batches import insert_ignoring_duplicates
from engine.adapters.mongo.documents import Doc, unvector, vector
from engine.adapters.mongo.schema import EMBEDDINGS
from engine.errors import DependencyFailed
from engine.records import Vector

KEYS_PER_READ = 32


class MongoVectorStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[EMBEDDINGS]

    async def get_many(self, keys: Sequence[str]) -> dict[str, Vector]:
        """One query per `KEYS_PER_READ` keys, read together (a replay's batch asks for
        thousands: the MongoDB-wire server's cost per key of an `$in` grows with its list)."""
        wanted = list(dict.fromkeys(keys))
        chunks = [wanted[i : i + KEYS_PER_READ] for i in range(0, len(wanted), KEYS_PER_READ)]
        parts = await asyncio.gather(*(self._read(chunk) for chunk in chunks))
        return {str(d["_id"]): unvector(d["embedding"]) for part in parts for d in part}

    async def _read(self, keys: list[str]) -> list[Doc]:
        try:
            return await self._col.find({"_id": {"$in": keys}}).to_list(length=None)
        except PyMongoError as exc:
            raise DependencyFailed(f"vector read failed: {exc}") from exc

    async def put_many(self, vectors: Mapping[str, Vector]) -> None:
        docs = [{"_id": key, "embedding": vector(v)} for key, v in vectors.items()]
        await insert_ignoring_duplicates(self._col, docs, "vector write")
