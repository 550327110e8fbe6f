"""items group: answers `ItemRequest` (get, update, soft/hard delete, resolve a conflict,
list facts, forget a user) within the request's explicit scope, and announces `MemoryChanged`
for every change (a forgotten user's: every layer); also working-session requests
(`services.groups.sessions`, on `memory.sessions.v1`)."""

from __future__ import annotations

import logging
import time
from typing import Any

from faststream.kafka import KafkaRouter
from faststream.kafka.annotations import KafkaMessage
from pydantic import ValidationError

from engine.errors import InputRejected, MemoryError_, NotFound
from engine.records import MemoryRow
from engine.scoping import tenant_filter
from engine.upkeep.erasure import forget_user
from engine.upkeep.items import (
    changed_layers,
    changed_scope,
    delete_item,
    get_item,
    newest_facts,
    resolve_conflict,
    update_item,
)
from schemas import topics
from schemas.requests import ALL_LAYERS, ItemReply, ItemRequest
from schemas.scope import Scope, first_error
from services.groups import sessions
from services.runtime import Runtime
from services.stream.consumers import EXPIRED, GroupRouter, expired
from services.stream.metrics import Metrics

GROUP = "items"
log = logging.getLogger(__name__)


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


async def handle(rt: Runtime, request: ItemRequest) -> list[MemoryRow]:
    where = tenant_filter(request.scope, durable=True)
    at = int(time.time() * 1000)
    store, embedder = rt.items, rt.embedder
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
            )
        ]
    if request.op == "delete":
        return [await delete_item(store, where, request.id, hard=request.hard, at=at)]
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
    )


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)
    sessions.wire(group)

    async def forget(scope: Scope) -> ItemReply:
        erased = await forget_user(rt.stores.eraser, tenant_filter(scope, durable=True))
        # the whole user, whatever thread, mode or hai the request named
        user = Scope.model_validate(
            {"agentWallet": scope.agent_wallet, "userAddress": scope.user_address}
        )
        await group.changes.announce_at(user, list(ALL_LAYERS))
        return ItemReply(erased=erased)

    @group.replier(topics.ITEMS)
    async def on_item_request(message: KafkaMessage) -> ItemReply:
        if expired(message):
            return ItemReply(error=EXPIRED)
        try:
            request = ItemRequest.model_validate_json(message.body)
            if request.op == "forget":
                return await forget(request.scope)
            rows = await handle(rt, request)
        except ValidationError as exc:
            return ItemReply(error=first_error(exc))
        except NotFound as exc:
            return ItemReply(not_found=True, error=str(exc))
        except MemoryError_ as exc:
            return ItemReply(error=str(exc))
        if request.op not in ("get", "list"):
            for row in rows:
                await group.changes.announce_at(changed_scope(row), changed_layers([row]))
        return ItemReply(items=[_public(r) for r in rows])

    return group.router
