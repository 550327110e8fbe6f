"""items group: answers `ItemRequest` (get, update, soft/hard delete, restore, resolve a
conflict, list facts, an item's history, forget a user) within the request's explicit scope,
records every change in the item history (caused by the request: its correlation id,
`item.<op>`, the request's `actor`) and announces `MemoryChanged` for every change (a
forgotten user's: every layer), after bumping the changed scope's cache namespace itself,
so the requester's next search reads its own write; also working-session requests
(`services.groups.items.sessions`, on `memory.sessions.v1`)."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from faststream.kafka import KafkaRouter
from faststream.kafka.annotations import KafkaMessage
from pydantic import ValidationError

from engine.errors import InputRejected, MemoryError_, NotFound
from engine.history import Ledger, item_history
from engine.records import Cause, ItemChange, MemoryRow
from engine.retrieval.invalidation import invalidate, invalidate_many
from engine.scoping import tenant_filter
from engine.upkeep.conflicts import resolve_conflict
from engine.upkeep.erasure import forget_user
from engine.upkeep.items import (
    changed_layers,
    changed_scope,
    delete_item,
    get_item,
    restore_item,
    update_item,
)
from engine.upkeep.listings import newest_facts
from schemas import topics
from schemas.requests import ALL_LAYERS, ItemReply, ItemRequest
from schemas.scope import Scope, first_error
from services.groups.items import bulk, scan, sessions
from services.runtime import Runtime
from services.stream.consumers import EXPIRED, GroupRouter, expired
from services.stream.metrics import Metrics

GROUP = "items"
log = logging.getLogger(__name__)
UNNAMED_ACTOR = "unknown"
"""The actor of a request that names none."""


def _public(row: MemoryRow) -> dict[str, Any]:
    return {
        "id": row.vector_id,
        "content": row.content,
        "source": row.source,
        "agentWallet": row.scope.agent_wallet,
        "userAddress": row.scope.user_address,
        "threadId": row.scope.thread_id,
        "mode": row.scope.mode,
        "haiId": row.scope.hai_id,
        "createdAt": row.created_at,
        "status": row.status,
        "invalidAt": row.invalid_at,
        "supersededBy": row.superseded_by,
        "embeddingModel": row.embedding_model,
        "metadata": row.metadata,
    }


def _change(c: ItemChange) -> dict[str, Any]:
    return {
        "id": c.change_id,
        "itemId": c.item_id,
        "kind": c.kind,
        "at": c.at,
        "cause": {"kind": c.cause.kind, "id": c.cause.id, "name": c.cause.name},
        "actor": c.cause.actor,
        "oldContent": c.old_content,
        "newContent": c.new_content,
        "details": c.details,
    }


def announced_layers(request: ItemRequest, rows: list[MemoryRow]) -> list[str]:
    """The layers a change of `rows` affects; a delete's the graph too, as what the graph
    read from the row went with it (`engine.upkeep.derived`)."""
    layers = changed_layers(rows)
    deleting = request.op == "delete" or any(w.op == "delete" for w in request.writes or [])
    return layers if not deleting or "graph" in layers else ["graph", *layers]


def cause_of(request: ItemRequest, correlation_id: str | None) -> Cause:
    """The cause of a request's changes: the request (its correlation id, else a new id)."""
    return Cause(
        "request",
        correlation_id or uuid.uuid4().hex,
        f"item.{request.op}",
        request.actor or UNNAMED_ACTOR,
    )


async def history(rt: Runtime, request: ItemRequest) -> ItemReply:
    """The item's history within the request's scope, with the item as it is now."""
    if request.id is None:  # checked by the contract; narrows the type
        raise InputRejected("id is required")
    where = tenant_filter(request.scope, durable=True)
    try:
        current: MemoryRow | None = await get_item(rt.items, where, request.id)
    except NotFound:
        current = None
    view = await item_history(rt.history, current, where, request.id, limit=request.limit)
    rows = [] if view.item is None else [_public(view.item)]
    return ItemReply(items=rows, history=[_change(c) for c in view.changes])


async def handle(rt: Runtime, request: ItemRequest, cause: Cause) -> list[MemoryRow]:
    where = tenant_filter(request.scope, durable=True)
    at = int(time.time() * 1000)
    store, embedder = rt.items, rt.embedder
    ledger = Ledger(rt.history, cause)
    if request.op == "list":
        return await newest_facts(store, where, request.limit, request.as_of)
    if request.id is None:  # checked by the contract; narrows the type
        raise InputRejected("id is required")
    if request.op == "get":
        return [await get_item(store, where, request.id)]
    if request.op == "update":
        return [
            await update_item(
                store,
                embedder,
                where,
                request.id,
                content=request.content,
                metadata=request.metadata,
                retention=request.retention,
                confidence=request.confidence,
                status=request.status,
                at=at,
                ledger=ledger,
            )
        ]
    if request.op == "delete":
        gone = await delete_item(store, where, request.id, hard=request.hard, at=at, ledger=ledger)
        await bulk.forget_read_from(rt, where, [gone.vector_id], at, ledger)
        return [gone]
    if request.op == "restore":
        half_life = rt.settings.search.half_life_days
        return [
            await restore_item(
                store, where, request.id, at=at, half_life_days=half_life, ledger=ledger
            )
        ]
    if request.resolution is None:
        raise InputRejected("resolution is required (supersede, keep, merge or ignore)")
    return await resolve_conflict(
        store,
        embedder,
        where,
        request.id,
        resolution=request.resolution,
        winning_id=request.winning_id,
        reason=request.reason,
        at=at,
        ledger=ledger,
    )


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)
    sessions.wire(group)

    async def forget(scope: Scope) -> ItemReply:
        keys = rt.sealer or rt.stores.tenant_keys  # shredded even where no key is set
        erased = await forget_user(rt.stores.eraser, tenant_filter(scope, durable=True), keys)
        # the whole user, whatever thread, mode or hai the request named
        user = Scope.model_validate(
            {"agentWallet": scope.agent_wallet, "userAddress": scope.user_address}
        )
        await group.changes.announce_at(user, list(ALL_LAYERS))
        await invalidate(rt.cache, user, rt.search_policy)  # before the reply: see below
        return ItemReply(erased=erased)

    @group.replier(topics.ITEMS)
    async def on_item_request(message: KafkaMessage) -> ItemReply:
        if expired(message):
            return ItemReply(error=EXPIRED)
        try:
            request = ItemRequest.model_validate_json(message.body)
            if request.op == "forget":
                return await forget(request.scope)
            if request.op == "history":
                return await history(rt, request)
            if request.op in ("scan", "read"):
                reader = scan.scan if request.op == "scan" else bulk.read
                return await reader(rt, request, _public)
            writer = bulk.writer(message) if request.op == "write" else handle
            rows = await writer(rt, request, cause_of(request, message.correlation_id))
        except ValidationError as exc:
            return ItemReply(error=first_error(exc))
        except NotFound as exc:
            return ItemReply(not_found=True, error=str(exc))
        except MemoryError_ as exc:
            return ItemReply(error=str(exc))
        if request.op not in ("get", "list"):
            changed: dict[Scope, list[MemoryRow]] = {}
            for row in rows:  # one announcement per written scope (a `write` has many rows)
                changed.setdefault(changed_scope(row), []).append(row)
            written_layers = [(s, announced_layers(request, w)) for s, w in changed.items()]
            for scope, layers in written_layers:
                await group.changes.announce_at(scope, layers)
            # read-your-writes (issue 30): the caller's next search must not answer from the
            # query cache of before this change, so the written scopes' namespaces are bumped
            # here, before the reply, not only when the invalidation group reads the
            # announcements (all of them in one round trip)
            await invalidate_many(rt.cache, written_layers, rt.search_policy)
        if request.op == "write":  # its reply holds what it reads back, if anything
            return await bulk.read(rt, request, _public)
        return ItemReply(items=[_public(r) for r in rows])

    return group.router
