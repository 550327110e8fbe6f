"""Batched writes shared by the MongoDB adapters: one unordered `bulk_write` of
per-document upserts guarded by the revision each document had when it was read
(`guarded_upserts`, the working buffer's batch write), unordered bulk updates, and the
duplicate-key tolerant unordered insert.

A batch of turns is grouped by document (`first_per_document`); the caller reads each
document's guard and revision, decides what it takes, and writes each document once. A
document that changed since the read (the guarded upsert then collides on `_id`: duplicate
key, code 11000) is returned to the caller, which reads it and decides again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError, PyMongoError

from engine.adapters.mongo.documents import Doc
from engine.errors import DependencyFailed

DUPLICATE_KEY = 11000

T = TypeVar("T")


def first_per_document(
    items: Sequence[T], key: Callable[[T], str], turn_id: Callable[[T], str]
) -> dict[str, list[int]]:
    """Indices of `items` grouped by document key, in input order; a turn id repeated
    for the same document counts once (its first occurrence)."""
    groups: dict[str, list[int]] = {}
    seen: set[tuple[str, str]] = set()
    for i, item in enumerate(items):
        k, t = key(item), turn_id(item)
        if (k, t) in seen:
            continue
        seen.add((k, t))
        groups.setdefault(k, []).append(i)
    return groups


def _failed_indices(exc: BulkWriteError, what: str) -> set[int]:
    """The ops that hit a duplicate key; any other failure is a `DependencyFailed`."""
    details: Mapping[str, Any] = exc.details or {}
    errors = details.get("writeErrors") or []
    if details.get("writeConcernErrors") or not errors:
        raise DependencyFailed(f"{what} failed: {exc}") from exc
    other = [e for e in errors if e.get("code") != DUPLICATE_KEY]
    if other:
        raise DependencyFailed(f"{what} failed: {other[0].get('errmsg', exc)}") from exc
    return {int(e["index"]) for e in errors}


async def guarded_upserts(
    col: AsyncCollection[Doc], writes: Mapping[str, tuple[Any, Doc]], what: str
) -> set[str]:
    """Apply `writes` (document key -> (the revision read, update)) in one unordered bulk
    write with upsert, each only if the document's `rev` still matches the filter given
    (`{"$exists": False}` for a document that was absent or predates revisions). The
    revision is an optimistic version: every write of such a document, these updates
    included, must `$inc` it, so the server compares one number, whatever the document
    holds. (Guards that compare turn ids, `$nin`, cost |held| x |new| comparisons per
    update, issue 29.) The keys whose document changed since the read (the guarded filter
    matched nothing and its upsert collided on `_id`) are returned, for the caller to read
    again."""
    keys = list(writes)
    if not keys:
        return set()
    ops = [UpdateOne({"_id": k, "rev": writes[k][0]}, writes[k][1], upsert=True) for k in keys]
    try:
        await col.bulk_write(ops, ordered=False)
    except BulkWriteError as exc:
        return {keys[i] for i in _failed_indices(exc, what)}
    except PyMongoError as exc:
        raise DependencyFailed(f"{what} failed: {exc}") from exc
    return set()


async def bulk_updates(col: AsyncCollection[Doc], ops: Sequence[UpdateOne], what: str) -> int:
    """One unordered bulk write of `ops` (no upserts); how many documents it modified."""
    if not ops:
        return 0
    try:
        result = await col.bulk_write(list(ops), ordered=False)
    except PyMongoError as exc:
        raise DependencyFailed(f"{what} failed: {exc}") from exc
    return int(result.modified_count)


async def insert_ignoring_duplicates(
    col: AsyncCollection[Doc], docs: Iterable[Doc], what: str
) -> set[Any]:
    """One unordered `insert_many`; the `_id`s inserted (a duplicate key means "already
    there" and is not an error; any other write error is `DependencyFailed`)."""
    batch = list(docs)
    if not batch:
        return set()
    try:
        await col.insert_many(batch, ordered=False)
    except BulkWriteError as exc:
        failed = _failed_indices(exc, what)
        return {d["_id"] for i, d in enumerate(batch) if i not in failed}
    except PyMongoError as exc:
        raise DependencyFailed(f"{what} failed: {exc}") from exc
    return {d["_id"] for d in batch}
