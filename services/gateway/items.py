"""Raw layer search and the item lifecycle (reference §11, §13.2), request-reply over Kafka.

Every item operation runs inside the caller's explicit scope: `agentWallet` is required (a
token limited to one agent fills it in) and a scope without `userAddress` reaches only
agent-level items (fixes §16.3, where get/update/delete worked by id alone). An item outside
the scope is 404, exactly like a missing one. Every change is kept in the item's history
(`GET /items/{id}/history`) with the caller's credential as its actor.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from engine.filters import parse_filters
from schemas.bodies import ScopeInput
from schemas.camel import camel_view
from schemas.context_input import LayerSearchInput
from schemas.item_input import ItemPatchInput
from schemas.operation_input import ResolveInput
from services.gateway.auth import Caller
from services.gateway.deps import (
    Client,
    QueryScope,
    at_most,
    input_scope,
    item_rows,
)
from services.gateway.errors import ERRORS, NOT_FOUND
from services.gateway.item_models import (
    ConflictResolved,
    ItemDeleted,
    ItemHistoryResponse,
    ItemResponse,
    ItemRestored,
    ItemUpdated,
    ItemValidity,
)
from services.gateway.limits import StrictJsonRoute
from services.gateway.models import (
    LayerSearchResponse,
)

router = APIRouter(tags=["items"], responses=ERRORS, route_class=StrictJsonRoute)

ItemId = Annotated[str, Path(min_length=1, max_length=200, description="The item's id.")]


@router.post("/layers/search", response_model=LayerSearchResponse)
async def search_layers(
    body: LayerSearchInput, client: Client, caller: Caller
) -> LayerSearchResponse:
    """Raw hits per layer, no packing: `{query, layers, totals}`. `limit` is per layer and
    clamped to 1-20 (the reference left it unbounded, §16.29); unknown layers are dropped."""
    scope = input_scope(caller, body)
    parse_filters(scope.filters)
    reply = await client.request_layers(body.request(scope))
    return camel_view(LayerSearchResponse, reply)


@router.post("/items/search", response_model=LayerSearchResponse)
async def search_items(
    body: LayerSearchInput, client: Client, caller: Caller
) -> LayerSearchResponse:
    """The same raw layer search (the reference's alias of /layers/search)."""
    return await search_layers(body, client, caller)


@router.get("/items/{id}", response_model=ItemResponse, responses=NOT_FOUND)
async def get_item(
    id: ItemId,
    client: Client,
    scope: QueryScope,
) -> ItemResponse:
    """One active item: `{item}` (deleted and superseded items are 404)."""
    return ItemResponse(item=item_rows(await client.item("get", id, scope))[0])


@router.patch("/items/{id}", response_model=ItemUpdated, responses=NOT_FOUND)
async def update_item(
    id: ItemId,
    body: ItemPatchInput,
    client: Client,
    caller: Caller,
) -> ItemUpdated:
    """Update content (re-embedded), metadata (merged), retention, confidence or status:
    `{updated, item}`."""
    scope = input_scope(caller, body)
    reply = await client.update_item(id, body, scope=scope, actor=caller.actor)
    return ItemUpdated(updated=True, item=item_rows(reply)[0])


@router.delete("/items/{id}", response_model=ItemDeleted, responses=NOT_FOUND)
async def delete_item(
    id: ItemId,
    client: Client,
    caller: Caller,
    scope: QueryScope,
    hard_delete: Annotated[bool, Query(alias="hardDelete")] = False,
) -> ItemDeleted:
    """Soft delete (status `deleted`, hidden everywhere) or, with `hardDelete=true`, remove."""
    reply = await client.item("delete", id, scope, hard=hard_delete, actor=caller.actor)
    rows = item_rows(reply)
    return ItemDeleted(deleted=True, hardDeleted=hard_delete, item=rows[0] if rows else None)


@router.post("/items/{id}/restore", response_model=ItemRestored, responses=NOT_FOUND)
async def restore_item(
    id: ItemId, body: ScopeInput, client: Client, caller: Caller
) -> ItemRestored:
    """Bring a soft-deleted item back (active, or superseded when it had been replaced):
    `{restored, item}`; 404 when there is no deleted item with this id in the scope (a
    hard-deleted one cannot come back), 400 when it is not deleted."""
    scope = input_scope(caller, body)
    reply = await client.item("restore", id, scope, actor=caller.actor)
    return ItemRestored(restored=True, item=item_rows(reply)[0])


@router.get("/items/{id}/history", response_model=ItemHistoryResponse, responses=NOT_FOUND)
async def item_history(
    id: ItemId,
    client: Client,
    scope: QueryScope,
    limit: Annotated[int | None, Query(ge=1, description="At most 200 (the newest).")] = None,
) -> ItemHistoryResponse:
    """Every change of the item, oldest first: `{itemId, item, validity, history}` — `item`
    as it is now (null when deleted or purged), `validity` its interval (`validFrom`,
    `invalidAt`, `supersededBy`), `history` the entries (`kind`, `at`, `cause`, `actor`,
    `oldContent`, `newContent`, `details`). Another tenant's item is 404, like a missing
    one."""
    reply = await client.history(id, scope, limit=at_most(limit, 200, 200))
    rows = item_rows(reply)
    item = rows[0] if rows else None
    validity = None
    if item is not None:
        validity = ItemValidity(
            validFrom=item.get("createdAt"),
            invalidAt=item.get("invalidAt"),
            supersededBy=item.get("supersededBy"),
        )
    return ItemHistoryResponse(itemId=id, item=item, validity=validity, history=reply.history)


@router.post("/conflicts/{id}/resolve", response_model=ConflictResolved, responses=NOT_FOUND)
async def resolve_conflict(
    id: ItemId,
    body: ResolveInput,
    client: Client,
    caller: Caller,
) -> ConflictResolved:
    """Resolve a conflict on an item: `resolution` ∈ supersede, keep, merge, ignore (else
    400): `{resolved, memoryId, items}` (`items`: the rows after the resolution)."""
    scope = input_scope(caller, body)
    reply = await client.item(
        "resolve",
        id,
        scope,
        resolution=body.chosen(),
        winning_id=body.winning_memory_id,
        reason=body.reason,
        actor=caller.actor,
    )
    return ConflictResolved(resolved=True, memoryId=id, items=item_rows(reply))
