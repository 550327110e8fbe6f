"""The change marks the exact vector index follows (issue 28: search state that follows the
stream instead of reloading the tenant).

Every write to a `memory` document sets `changedAt` to the writer's clock (ms) in the same
update, so a search process that loaded a tenant at time t reads back only the rows with
`changedAt >= t - margin` (the index `tenant_changes`). A hard delete leaves nothing to read
back: the writer moves the agent's epoch (`memory_epochs`, one small document per agent)
before it removes documents and again after (`epoch_fence`), and a reader whose state
predates the epoch loads the tenant anew.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Collection, Iterable
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.documents import Doc
from engine.adapters.mongo.schema import EPOCHS
from engine.errors import DependencyFailed

CHANGED_AT = "changedAt"


SLOW_WRITE_MS = 1_500
"""A write acknowledged longer than this after its stamp is stamped again (`restamp_slow`).
A delta reads back from its last read's start less the margin (`MNEMOSTREAM_STATE_MARGIN_MS`,
2 s): a row that became visible more than the margin after its stamp, while a search read,
would never be read back. Stamped again once visible, it is; so the margin needs to cover
only this, plus the clock skew between writer and search hosts (0.5 s left of 2 s). It was
0.5 s: a bulk write of 2,000 rows takes about 1.1 s on the local server, so every such batch
was stamped again, and stamping again costs about what the write did
(`benchmarks.store_ceiling`: 52 turns/s at batches of 2,000 with it, 766 without)."""
RESTAMPS = 3
"""At most this many stamps again of one chunk (each is a small update of the same rows)."""
RESTAMP_CHUNK = 100
"""Rows stamped again by one update: the local MongoDB-wire server's `_id $in` costs grow
faster than the list (2,000 ids in one update: 11.6 s; in 20 of 100: 1.6 s), and each chunk
takes its own stamp, so its flight is one small update's."""


def stamp() -> int:
    """The writer's clock in ms, read right before the write it marks."""
    return time.time_ns() // 1_000_000


async def restamp_slow(col: AsyncCollection[Doc], ids: Collection[Any], at: int, what: str) -> None:
    """After a write of the documents `ids` stamped `at` was acknowledged: when that took
    longer than `SLOW_WRITE_MS`, stamp again those still at `at` (now visible to every
    search), `RESTAMP_CHUNK` at a time, each chunk until its stamp is acknowledged in time."""
    if not ids or stamp() - at <= SLOW_WRITE_MS:
        return
    listed = list(ids)
    for start in range(0, len(listed), RESTAMP_CHUNK):
        chunk, was = listed[start : start + RESTAMP_CHUNK], at
        for _ in range(RESTAMPS):
            again = stamp()
            try:
                await col.update_many(
                    {"_id": {"$in": chunk}, CHANGED_AT: was}, {"$set": {CHANGED_AT: again}}
                )
            except PyMongoError as exc:
                raise DependencyFailed(f"{what} failed (stamping it again): {exc}") from exc
            if stamp() - again <= SLOW_WRITE_MS:
                break
            was = again


async def bump_epochs(
    db: AsyncDatabase[Doc], agents: Iterable[str], what: str = "memory epoch update"
) -> None:
    """Move the epoch of each agent whose rows are about to be hard-deleted (before the
    delete: a crash in between costs a reader one extra full load, never a stale row)."""
    for agent in sorted(set(agents)):
        try:
            await db[EPOCHS].update_one({"_id": agent}, {"$inc": {"epoch": 1}}, upsert=True)
        except PyMongoError as exc:
            raise DependencyFailed(f"{what} failed (its epoch): {exc}") from exc


@contextlib.asynccontextmanager
async def epoch_fence(
    db: AsyncDatabase[Doc], agents: Iterable[str], what: str
) -> AsyncIterator[None]:
    """Around a hard delete: the epochs move before it (a reader that holds the rows loads
    anew) and again after it, failed or not. The second move is what makes the delete safe:
    a search that caught up between the first move and the delete read the doomed rows
    under the new epoch, and its next delta could not show their removal (a delete leaves
    nothing to read back); the second move makes that state load again."""
    agents = sorted(set(agents))
    await bump_epochs(db, agents, what)
    try:
        yield
    except BaseException:
        with contextlib.suppress(DependencyFailed):  # the delete's own error is the news
            await bump_epochs(db, agents, what)
        raise
    await bump_epochs(db, agents, what)


async def read_epoch(db: AsyncDatabase[Doc], agent: str) -> int:
    try:
        doc = await db[EPOCHS].find_one({"_id": agent})
    except PyMongoError as exc:
        raise DependencyFailed(f"memory epoch read failed: {exc}") from exc
    return 0 if doc is None else int(doc.get("epoch", 0))
