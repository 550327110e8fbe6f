"""Batched writes shared by the MongoDB adapters: one unordered `bulk_write` of guarded
per-document appends (what `append_once` does for one turn, for many documents at once), and
the duplicate-key tolerant unordered insert.

A batch of turns is grouped by document; the turn ids each document holds are read, and each
document gets one update with upsert, guarded by the length of its `turnIds` as read. When
one of its turns was applied before (e.g. by a run that crashed before committing its
offsets), or the document changed since the read (the upsert then collides on `_id`:
duplicate key, code 11000), that document alone is retried turn by turn by the caller, which
then reports exactly what sequential appends would have.
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


async def versioned_upserts(
    col: AsyncCollection[Doc], updates: Mapping[str, tuple[list[str], Doc]], what: str
) -> set[str]:
    """Apply `updates` (document key → (its new turn ids, update)) in one unordered bulk
    write with upsert, each applied only if none of its turns is in the document yet.
    The ids each document holds (`turnIds`) and its revision (`rev`) are read first; the
    write's guard is the revision, an optimistic version (every write of such a document,
    these updates included, must `$inc` it), so the
    server compares one number, whatever the document holds. (Guards that compare turn ids,
    `$nin`, cost |held| x |new| comparisons per update: with 1,000 ids kept, a thread's
    batch of a few hundred turns made the working buffer the store's slowest write, issue
    29.) A document written before revisions existed is guarded by `rev` being absent.
    A document that already holds one of its new turns, or that changed between the read
    and the write (its upsert then collides on `_id`), is returned as failed."""
    keys = list(updates)
    if not keys:
        return set()
    try:
        held = await col.find({"_id": {"$in": keys}}, {"turnIds": 1, "rev": 1}).to_list(None)
    except PyMongoError as exc:
        raise DependencyFailed(f"{what} failed: {exc}") from exc
    present = {str(d["_id"]): (d.get("turnIds") or [], d.get("rev")) for d in held}
    failed: set[str] = set()
    ops: list[UpdateOne] = []
    sent: list[str] = []
    for key in keys:
        ids, update = updates[key]
        have, rev = present.get(key, ([], None))
        if not set(ids).isdisjoint(have):
            failed.add(key)
            continue
        guard = {"$exists": False} if rev is None else rev
        ops.append(UpdateOne({"_id": key, "rev": guard}, update, upsert=True))
        sent.append(key)
    if not ops:
        return failed
    try:
        await col.bulk_write(ops, ordered=False)
    except BulkWriteError as exc:
        return failed | {sent[i] for i in _failed_indices(exc, what)}
    except PyMongoError as exc:
        raise DependencyFailed(f"{what} failed: {exc}") from exc
    return failed


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
