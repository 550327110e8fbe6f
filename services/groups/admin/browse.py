"""The read-only views of a tenant's memory that the gateway's console shows (`memory.browse`
and `graph.browse` on `memory.admin.v1`): stored rows with their scores, dates and validity,
and the entity graph. Both read the request's exact tenant (a scope without `userAddress`:
the agent's user-less rows only, never every user's), like the item operations."""

from __future__ import annotations

from typing import Any

from engine.errors import InputRejected
from engine.records import MemoryRow, RelationRecord
from engine.scoping import TenantFilter, tenant_filter
from engine.upkeep.listings import recent_items
from schemas.requests import AdminRequest
from schemas.scope import Scope
from services.runtime import Runtime

Result = dict[str, Any]


def row_json(row: MemoryRow) -> Result:
    """A stored row as the console lists it; times in ms since epoch, `decayScore` in [0, 1]
    (1 for a new row, lowered by the decay job)."""
    return {
        "id": row.vector_id,
        "source": row.source,
        "content": row.content,
        "agentWallet": row.scope.agent_wallet,
        "userAddress": row.scope.user_address,
        "threadId": row.scope.thread_id,
        "createdAt": row.created_at,
        "status": row.status,
        "decayScore": row.decay_score,
        "accessCount": row.access_count,
        "invalidAt": row.invalid_at,
        "supersededBy": row.superseded_by,
        "embedded": not row.pending,
        "metadata": row.metadata,
    }


def relation_json(relation: RelationRecord) -> Result:
    """A relation; `current` is False once a later link of its type replaced it
    (`invalidAt`)."""
    return {
        "id": relation.relation_id,
        "sourceId": relation.source_id,
        "sourceName": relation.source_name,
        "type": relation.type,
        "targetId": relation.target_id,
        "targetName": relation.target_name,
        "createdAt": relation.created_at,
        "invalidAt": relation.invalid_at,
        "current": relation.valid_at(None),
    }


def _where(scope: Scope | None) -> TenantFilter:
    if scope is None:
        raise InputRejected("agentWallet is required")
    return tenant_filter(scope, durable=True).exact()


async def memory_browse(rt: Runtime, request: AdminRequest) -> Result:
    """`{rows}`: the tenant's `limit` newest rows of `source` (every source when None)."""
    rows = await recent_items(
        rt.items, _where(request.scope), source=request.source, limit=request.limit
    )
    return {"rows": [row_json(r) for r in rows]}


async def graph_browse(rt: Runtime, request: AdminRequest) -> Result:
    """`{entities, relations}`: the tenant's `limit` newest entities and every relation
    touching them, current and replaced, oldest first."""
    where = _where(request.scope)
    entities = await recent_items(rt.items, where, source="entity", limit=request.limit)
    relations = await rt.stores.relations.around(where, [e.vector_id for e in entities])
    return {
        "entities": [row_json(e) for e in entities],
        "relations": [relation_json(r) for r in relations],
    }
