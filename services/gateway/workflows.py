"""Knowledge documents and workflow memory (reference §14).

* POST /knowledge/documents publishes a `KnowledgeSubmitted` and answers 202 with the ids of
  the chunk rows the knowledge group will store (submitting the same document again names
  the same rows and stores nothing new).
* POST /workflows/checkpoints publishes a `WorkflowCheckpointRecorded` (202, with the id of
  its `session` row; the same checkpoint again is the same row).
* GET /workflows/reliability reads one agent's reliability over the checkpoints of one
  workflow wallet (and the runs' user), request-reply over Kafka.

The workflow wallet is the `agentWallet` of these routes: a credential confined to one agent
may only write and read that wallet's memory (and one confined to a user, that user's).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from engine.ingest.knowledge import chunk_ids, rows_scope
from engine.ingest.workflows import checkpoint_id, checkpoint_of
from schemas.callers import CheckpointInput, KnowledgeInput
from schemas.camel import CAMEL, camel_view
from schemas.requests import ReliabilityReply
from services.gateway.auth import Caller
from services.gateway.deps import Client, at_most, input_scope, query_scope
from services.gateway.errors import ERRORS
from services.gateway.limits import StrictJsonRoute
from services.gateway.models import Answer, Position

router = APIRouter(tags=["knowledge and workflows"], responses=ERRORS, route_class=StrictJsonRoute)


class KnowledgeAccepted(Answer):
    eventId: str
    ids: list[str] = Field(description="The chunk rows' ids, in document order.")
    chunks: int
    position: Position


class CheckpointAccepted(Answer):
    eventId: str
    id: str = Field(description="The checkpoint's row id.")
    runId: str
    position: Position


class _Tenant(BaseModel):
    agent_wallet: str
    user_address: str | None = None


class ReliabilityOut(ReliabilityReply, _Tenant):
    """The workflows group's `ReliabilityReply` in camelCase, after the scope it read (bases
    in this order put the scope first)."""

    model_config = CAMEL

    error: None = Field(default=None, exclude=True)


@router.post("/knowledge/documents", response_model=KnowledgeAccepted, status_code=202)
async def index_knowledge(
    body: KnowledgeInput, client: Client, caller: Caller
) -> KnowledgeAccepted:
    """Index a knowledge document, accepted for asynchronous chunking and embedding; the
    chunks then appear in pre_turn's vectors layer for the same scope."""
    event = body.submitted(input_scope(caller, body))
    at = await client.publish_knowledge(event)
    ids = chunk_ids(rows_scope(event.scope), event.content, event.key, event.uri)
    return KnowledgeAccepted(
        eventId=event.event_id,
        ids=ids,
        chunks=len(ids),
        position=Position.of(at),
    )


@router.post("/workflows/checkpoints", response_model=CheckpointAccepted, status_code=202)
async def record_checkpoint(
    body: CheckpointInput, client: Client, caller: Caller
) -> CheckpointAccepted:
    """Record a workflow checkpoint (a step's learning, the run's evaluation, a context
    compaction), accepted for asynchronous storage as a `session` row."""
    event = body.recorded(input_scope(caller, body))
    at = await client.publish_checkpoint(event)
    return CheckpointAccepted(
        eventId=event.event_id,
        id=checkpoint_id(checkpoint_of(event)),
        runId=event.scope.thread_id or "",
        position=Position.of(at),
    )


@router.get("/workflows/reliability", response_model=ReliabilityOut)
async def reliability(
    client: Client,
    caller: Caller,
    agent: Annotated[str, Query(min_length=1, max_length=200, description="The agent's name.")],
    agent_wallet: Annotated[
        str | None,
        Query(alias="agentWallet", max_length=256, description="The workflow wallet."),
    ] = None,
    user_address: Annotated[str | None, Query(alias="userAddress", max_length=256)] = None,
    last: Annotated[int, Query(ge=1, description="Default 50, at most 500 (lowered to it).")] = 50,
) -> ReliabilityOut:
    """`{runs, graded, successRate, avgQuality}` of `agent` over the newest `last` step
    learnings and workflow evaluations of the wallet (and user: without one, only checkpoints
    stored without a user count). `graded` is how many of the `runs` have a success value;
    `successRate` is over those alone (a checkpoint without one is not a failed run)."""
    scope = query_scope(caller, agent_wallet, user_address)
    reply = await client.reliability(agent, scope, last=at_most(last, 50, 500))
    return camel_view(
        ReliabilityOut, reply, agent_wallet=scope.agent_wallet, user_address=scope.user_address
    )
