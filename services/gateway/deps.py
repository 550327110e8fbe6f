"""Shared route helpers: the `MemoryClient` dependency, scopes from bodies and query strings
(checked against the caller), and reply unwrapping."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Query, Request

from schemas.admin import R, result_of
from schemas.bodies import ScopeInput
from schemas.requests import AdminReply, ItemReply
from schemas.scope import Scope
from services.gateway.auth import Caller, Principal
from services.gateway.errors import ApiError
from services.sdk.client import MemoryClient


def memory_client(request: Request) -> MemoryClient:
    """FastAPI dependency: the gateway's started `MemoryClient`."""
    client: MemoryClient = request.app.state.client
    return client


Client = Annotated[MemoryClient, Depends(memory_client)]


def body_scope(caller: Principal, data: dict[str, Any]) -> Scope:
    """The body's scope (400 with the reference's message), allowed for the caller (403).
    A confined caller may omit `agentWallet` (and `userAddress` when it has a user): its own
    is filled in, in `data` too (the event is built from it)."""
    caller.fill(data)
    scope = Scope.parse(data)
    caller.allow(scope)
    return scope


def input_scope(caller: Principal, body: ScopeInput) -> Scope:
    """The scope of a body model (`schemas.bodies`), the caller's own agent and user filling
    absent ones, allowed for the caller (403)."""
    scope = body.scope(agent=caller.agent, user=caller.user)
    caller.allow(scope)
    return scope


def query_scope(
    caller: Principal,
    agent_wallet: str | None,
    user_address: str | None = None,
    thread_id: str | None = None,
    mode: str | None = None,
    hai_id: str | None = None,
) -> Scope:
    """The scope of a GET/DELETE from its query string (same rules as `body_scope`)."""
    fields = {
        "agentWallet": agent_wallet,
        "userAddress": user_address,
        "threadId": thread_id,
        "mode": mode,
        "haiId": hai_id,
    }
    return body_scope(caller, {k: v for k, v in fields.items() if v is not None})


AgentQuery = Annotated[
    str | None,
    Query(
        alias="agentWallet", max_length=256, description="Required unless the credential names one."
    ),
]
UserQuery = Annotated[str | None, Query(alias="userAddress", max_length=256)]


def tenant_query(
    caller: Caller, agent_wallet: AgentQuery = None, user_address: UserQuery = None
) -> Scope:
    """FastAPI dependency: the tenant named by the query string (`agentWallet`,
    `userAddress`), allowed for the caller (`query_scope`)."""
    return query_scope(caller, agent_wallet, user_address)


QueryScope = Annotated[Scope, Depends(tenant_query)]
"""Route parameter type: the tenant of a GET/DELETE, from its query string, checked."""


def item_rows(reply: ItemReply) -> list[dict[str, Any]]:
    """The rows of an item reply; 404 / 400 for `not_found` / `error`."""
    if reply.not_found:
        raise ApiError(404, reply.error or "item not found")
    if reply.error:
        raise ApiError(400, reply.error)
    return reply.items


def admin_result(reply: AdminReply, model: type[R]) -> R:
    """The result of an admin reply as its operation's model (`schemas.admin`); 404 / 400
    for `not_found` / `error`."""
    if reply.not_found:
        raise ApiError(404, reply.error or "not found")
    if reply.error:
        raise ApiError(400, reply.error)
    return result_of(reply, model)


def at_most(value: int | None, default: int, high: int) -> int:
    """A per-page count: `value` lowered to `high` (reference §6.1's cap), None ⇒ `default`.
    A count below 1 never gets here: the route's `Count` type refuses it (422)."""
    return default if value is None else min(value, high)
