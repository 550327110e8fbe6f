"""`ArchiveStore` on MongoDB: the `archives` collection, keyed by `archiveId`.

A sealed archive (`ArchiveRecord.seal`, `engine.upkeep.archive_seal`) is stored without
`summary`, `topics`, `embedding` and `content`: they are inside
`sealed: {keyId, algorithm, index, content}` (the blobs as BSON binary)."""

from __future__ import annotations

from typing import Any

from bson import Binary
from pymongo import DESCENDING
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.adapters.mongo.documents import (
    Doc,
    optional_vector,
    scope_doc,
    scope_of,
    tenant_query,
    vector,
)
from engine.adapters.mongo.schema import ARCHIVES
from engine.errors import DependencyFailed
from engine.records import INACTIVE_STATUSES, ArchiveRecord, ArchiveSeal
from engine.scoping import TenantFilter

SEAL_ALGORITHM = "AES-256-GCM"


def archive_doc(archive: ArchiveRecord) -> Doc:
    """The stored document of `archive` (its sealed form when it has a seal)."""
    doc: Doc = {
        "_id": archive.archive_id,
        "archiveId": archive.archive_id,
        **scope_doc(archive.scope),
        "dateRange": {"start": archive.start, "end": archive.end},
        "createdAt": archive.created_at,
        "status": archive.status,
        "embeddingModel": archive.embedding_model,
        "metadata": {"entryCount": archive.entry_count, **archive.metadata},
        "ipfsCid": archive.ipfs_cid,
    }
    seal = archive.seal
    if seal is None:
        embedding = archive.embedding
        doc["summary"] = archive.summary
        doc["topics"] = archive.topics
        doc["embedding"] = vector(embedding) if embedding is not None else None
        doc["content"] = archive.content
        doc["compressed"] = archive.content is not None
    else:
        doc["sealed"] = {
            "keyId": seal.key_id,
            "algorithm": SEAL_ALGORITHM,
            "index": Binary(seal.index),
            "content": None if seal.content is None else Binary(seal.content),
        }
        doc["compressed"] = seal.content is not None
    return doc


def archive_record(d: Doc) -> ArchiveRecord:
    """The record of a stored document (sealed as stored; content only if it was read)."""
    meta = d.get("metadata") or {}
    content = d.get("content")
    return ArchiveRecord(
        archive_id=d["archiveId"],
        scope=scope_of(d),
        summary=d.get("summary") or "",
        topics=list(d.get("topics") or []),
        entry_count=int(meta.get("entryCount", 0)),
        start=int(d["dateRange"]["start"]),
        end=int(d["dateRange"]["end"]),
        created_at=int(d["createdAt"]),
        embedding=optional_vector(d),
        embedding_model=d.get("embeddingModel"),
        status=d.get("status", "active"),
        metadata={k: v for k, v in meta.items() if k != "entryCount"},
        content=content if isinstance(content, str) else None,
        ipfs_cid=d.get("ipfsCid") or None,
        seal=_seal_of(d.get("sealed")),
    )


def _seal_of(sealed: Any) -> ArchiveSeal | None:
    if not isinstance(sealed, dict):
        return None
    content = sealed.get("content")
    return ArchiveSeal(
        key_id=str(sealed["keyId"]),
        index=bytes(sealed["index"]),
        content=None if content is None else bytes(content),
    )


class MongoArchiveStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[ARCHIVES]

    async def insert_if_absent(self, archive: ArchiveRecord) -> bool:
        try:
            result = await self._col.update_one(
                {"_id": archive.archive_id}, {"$setOnInsert": archive_doc(archive)}, upsert=True
            )
        except DuplicateKeyError:
            return False
        except PyMongoError as exc:
            raise DependencyFailed(f"archive insert failed: {exc}") from exc
        return result.upserted_id is not None

    async def set_cid(self, archive_id: str, cid: str) -> None:
        """Record where the (encrypted) archive was pinned."""
        try:
            await self._col.update_one({"_id": archive_id}, {"$set": {"ipfsCid": cid}})
        except PyMongoError as exc:
            raise DependencyFailed(f"archive update failed: {exc}") from exc

    async def unpinned(self, archive_id: str) -> ArchiveRecord | None:
        """The archive with its content if it has no IPFS CID yet (its pin failed or never
        ran); None if it is pinned, has no content, or does not exist."""
        try:
            doc = await self._col.find_one({"_id": archive_id})
        except PyMongoError as exc:
            raise DependencyFailed(f"archive read failed: {exc}") from exc
        if doc is None or doc.get("ipfsCid"):
            return None
        found = archive_record(doc)
        has_content = found.content if found.seal is None else found.seal.content
        return found if has_content is not None else None

    async def active(self, where: TenantFilter, limit: int) -> list[ArchiveRecord]:
        query = {**tenant_query(where), "status": {"$nin": list(INACTIVE_STATUSES)}}
        try:
            docs = await (
                self._col.find(query, {"content": 0, "sealed.content": 0})
                .sort("createdAt", DESCENDING)
                .limit(limit)
                .to_list(length=limit)
            )
        except PyMongoError as exc:
            raise DependencyFailed(f"archive read failed: {exc}") from exc
        return [archive_record(d) for d in docs]
