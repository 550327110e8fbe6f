"""MongoDB `EvalStore`: the `memory_evals` collection, one document per run.

The document is the run's wire form (`engine.evals.wire.run_wire`, camelCase) with `_id` set to
`evalRunId`, so saving the same run twice replaces it. Every read filters on `agentWallet`:
another agent's run is not found.

`ensure_indexes` is called once at start-up (`services.runtime.open_runtime`), never lazily:
the local MongoDB-wire server deadlocks when an index build races inserts (see
`engine.adapters.mongo.schema.ensure_schema`).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import PyMongoError

from engine.adapters.mongo.documents import Doc
from engine.adapters.mongo.schema import create_indexes
from engine.errors import DependencyFailed
from engine.evals.records import EvalRun
from engine.evals.wire import run_of, run_wire

EVALS = "memory_evals"
INDEXES: Mapping[str, Sequence[IndexModel]] = {
    EVALS: (
        IndexModel(
            [("agentWallet", ASCENDING), ("createdAt", DESCENDING), ("_id", DESCENDING)],
            name="agent_newest",
        ),
    ),
}
_NEWEST = [("createdAt", DESCENDING), ("_id", DESCENDING)]


async def ensure_indexes(db: AsyncDatabase[Doc]) -> None:
    """Create the `memory_evals` collection and its index, one at a time. Idempotent."""
    await create_indexes(db, INDEXES)


class MongoEvalStore:
    def __init__(self, db: AsyncDatabase[Doc]) -> None:
        self._col: AsyncCollection[Doc] = db[EVALS]

    async def save(self, run: EvalRun) -> None:
        doc = {"_id": run.eval_run_id, **run_wire(run)}
        try:
            await self._col.replace_one({"_id": run.eval_run_id}, doc, upsert=True)
        except PyMongoError as exc:
            raise DependencyFailed(f"eval run write failed: {exc}") from exc

    async def get(self, run_id: str, agent_wallet: str) -> EvalRun | None:
        try:
            doc = await self._col.find_one({"_id": run_id, "agentWallet": agent_wallet})
        except PyMongoError as exc:
            raise DependencyFailed(f"eval run read failed: {exc}") from exc
        return run_of(doc) if doc is not None else None

    async def list(self, agent_wallet: str, limit: int) -> builtins.list[EvalRun]:
        if limit <= 0:
            return []
        try:
            cursor = self._col.find({"agentWallet": agent_wallet}).sort(_NEWEST)
            docs = await cursor.limit(limit).to_list(length=limit)
        except PyMongoError as exc:
            raise DependencyFailed(f"eval run read failed: {exc}") from exc
        return [run_of(d) for d in docs]
