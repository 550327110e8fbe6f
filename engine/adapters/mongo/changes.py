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
from collections.abc import AsyncIterator, Iterable

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.documents import Doc
from engine.adapters.mongo.schema import EPOCHS
from engine.errors import DependencyFailed

CHANGED_AT = "changedAt"


def stamp() -> int:
    """The writer's clock in ms, read right before the write it marks."""
    return time.time_ns() // 1_000_000


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
