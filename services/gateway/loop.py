"""The canonical loop (reference §13.1): pre_turn is request-reply over Kafka; post_turn and
remember are validated here and published, answering 202 with the ids of what will be
written (the consumer groups write it; nothing is stored before the answer).

Read-your-writes: with `?wait=true` a write answers 200 with `visible: true` once the consumer
groups have stored it and told the query cache (`MemoryClient.wait_turn`, following their
committed offsets), so the caller's next pre_turn sees it; after `waitTimeout` seconds
(default: the gateway's `request_timeout_seconds`) it answers 504 naming the group that is
behind. The write was accepted either way: it is not to be sent again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from engine.filters import parse_filters
from engine.ingest.remember import fact_hash
from schemas.bodies import parse_body
from schemas.camel import camel_view
from schemas.context_input import ContextInput
from schemas.remember_input import RememberInput
from schemas.requests import MAX_WAIT_SECONDS, ContextReply
from schemas.scope import ScopeError
from schemas.turn_input import TurnInput
from services.gateway.auth import Caller, Principal
from services.gateway.deps import Client, input_scope
from services.gateway.errors import ERRORS
from services.gateway.limits import StrictJsonRoute
from services.gateway.models import (
    ContextResponse,
    LoopBody,
    Position,
    RememberAccepted,
    RememberedMemory,
    TurnAccepted,
    Workflow,
)
from services.sdk import client as sdk

router = APIRouter(tags=["loop"], responses=ERRORS, route_class=StrictJsonRoute)

STEPS = {
    "pre_turn": "pre_turn",
    "context": "pre_turn",
    "post_turn": "post_turn",
    "record_turn": "post_turn",
    "remember": "remember",
    "save": "remember",
}
"""Accepted `step`/`op` values of POST /loop and the step each one means."""


WaitFlag = Annotated[
    bool,
    Query(description="Answer once the write is stored and visible to pre_turn (200)."),
]
WaitTimeout = Annotated[
    float | None,
    Query(
        alias="waitTimeout",
        gt=0,
        le=MAX_WAIT_SECONDS,
        description="Seconds to wait with `wait=true` (default: the request timeout); then 504.",
    ),
]


@dataclass(frozen=True, slots=True)
class Wait:
    """A write's read-your-writes option: `wait` for it, for at most `timeout` seconds."""

    wait: bool = False
    timeout: float | None = None


NO_WAIT = Wait()


def context_response(reply: ContextReply) -> ContextResponse:
    return camel_view(
        ContextResponse, reply, workflow=Workflow(step="pre_turn", next=["post_turn", "remember"])
    )


async def assemble(
    client: sdk.MemoryClient, caller: Principal, body: ContextInput
) -> ContextResponse:
    """pre_turn (a validated body): check the tenant (403), ask the search group."""
    request = body.request(input_scope(caller, body))
    parse_filters(request.scope.filters)
    return context_response(await client.request_context(request))


async def record(
    client: sdk.MemoryClient, caller: Principal, body: TurnInput, wait: Wait = NO_WAIT
) -> TurnAccepted:
    """post_turn (a validated body): check the tenant (403), publish the `TurnRecorded`;
    with `wait`, wait until it is visible (`NotProcessed`, 504, when it is not in time)."""
    event = body.recorded(input_scope(caller, body))
    at = await client.publish_turn(event)
    if wait.wait:
        await client.wait_turn(event, at, timeout=wait.timeout)
    return TurnAccepted(
        workflow=Workflow(step="post_turn", next=["pre_turn", "remember"]),
        visible=wait.wait,
        eventId=event.event_id,
        sessionId=event.session_id,
        threadId=event.thread_id,
        turnId=event.turn_id,
        position=Position.of(at),
    )


async def remember(
    client: sdk.MemoryClient, caller: Principal, body: RememberInput, wait: Wait = NO_WAIT
) -> RememberAccepted:
    """remember (a validated body): check the tenant (403), publish the `MemoryRemembered`
    (with `wait`, as `record`). `memory.id` is the fact's item id: remembering the same fact
    again names the same item."""
    event = body.remembered(input_scope(caller, body))
    at = await client.publish_remember(event)
    if wait.wait:
        await client.wait_remembered(event, at, timeout=wait.timeout)
    s = event.scope
    item_id = "fact_" + fact_hash(s.agent_wallet, s.user_address, event.content, s.mode, s.hai_id)
    return RememberAccepted(
        workflow=Workflow(step="remember", next=["pre_turn", "post_turn"]),
        visible=wait.wait,
        eventId=event.event_id,
        memory=RememberedMemory(
            id=item_id,
            text=event.content,
            type=event.type,
            retention=event.retention,
            confidence=event.confidence,
            status="stored" if wait.wait else "queued",
        ),
        position=Position.of(at),
    )


@router.post("/context/assemble", response_model=ContextResponse)
async def assemble_context(body: ContextInput, client: Client, caller: Caller) -> ContextResponse:
    """pre_turn: the packed Memory context for a query (reference §6)."""
    return await assemble(client, caller, body)


WAITED: dict[int | str, dict[str, Any]] = {
    200: {"description": "With `wait=true`: stored and visible to pre_turn."}
}


@router.post("/turns/record", response_model=TurnAccepted, status_code=202, responses=WAITED)
async def record_turn(
    body: TurnInput,
    response: Response,
    client: Client,
    caller: Caller,
    wait: WaitFlag = False,
    wait_timeout: WaitTimeout = None,
) -> TurnAccepted:
    """post_turn: accepted for asynchronous processing (transcript, working memory, turn
    vector, facts, patterns are written by the consumer groups); with `wait=true`, answered
    200 once the turn is visible to pre_turn."""
    if wait:
        response.status_code = 200
    return await record(client, caller, body, Wait(wait, wait_timeout))


@router.post("/remember", response_model=RememberAccepted, status_code=202, responses=WAITED)
async def remember_fact(
    body: RememberInput,
    response: Response,
    client: Client,
    caller: Caller,
    wait: WaitFlag = False,
    wait_timeout: WaitTimeout = None,
) -> RememberAccepted:
    """remember: an explicit fact, accepted for asynchronous storage; with `wait=true`,
    answered 200 once it is stored and visible."""
    if wait:
        response.status_code = 200
    return await remember(client, caller, body, Wait(wait, wait_timeout))


@router.post(
    "/loop",
    response_model=ContextResponse | TurnAccepted | RememberAccepted,
    responses={202: {"model": TurnAccepted | RememberAccepted, "description": "A write step."}},
)
async def loop(
    body: LoopBody,
    response: Response,
    client: Client,
    caller: Caller,
    wait: WaitFlag = False,
    wait_timeout: WaitTimeout = None,
) -> ContextResponse | TurnAccepted | RememberAccepted:
    """One loop step by name (`step` or `op`): pre_turn answers 200, the writes 202 (200 with
    `wait=true`, once visible)."""
    step = STEPS.get((body.step if body.step is not None else body.op) or "")
    data = body.model_extra or {}  # the step's own body, parsed once by its model below
    if step is None:
        raise ScopeError("step must be pre_turn, post_turn, or remember")
    if step == "pre_turn":
        return await assemble(client, caller, parse_body(ContextInput, data))
    response.status_code = 200 if wait else 202
    if step == "post_turn":
        return await record(client, caller, parse_body(TurnInput, data), Wait(wait, wait_timeout))
    return await remember(client, caller, parse_body(RememberInput, data), Wait(wait, wait_timeout))
