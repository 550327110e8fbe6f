"""The reference's compatibility routes (reference §13.3 `transcripts/index`, §13.4), each a
thin mapping onto what the loop and the items already do, so a runtime written against the
reference's HTTP API migrates without rewriting its calls.

* POST /transcripts/index publishes the transcript as turns (`schemas.transcripts`): one
  `TurnRecorded` per exchange, stored by the transcripts group (transcript, the thread's
  working buffer, an embedded `session` row each); 202 with the ids of what will be stored.
  Nothing to index (no user/assistant text) is 200 with `indexed: false`.
* POST /search is the graph layer's search (request-reply), as the reference's
  `MemoryItem[]`: `{id, memory, user_id, agent_id, run_id, metadata, created_at}` plus the
  score at the top level (the reference hid it in `metadata.score`, §16.8).
* GET /{agentWallet} lists the tenant's newest *active* facts, as the same items (the
  reference returned deleted and superseded ones too: deleted memory never comes back here).
  Its router is included last, so every other `GET /api/memory/<name>` route wins.

Tenancy as everywhere: the agent is explicit (or the token's), a token for another agent is
403, and a request without `userAddress` sees only the agent's user-less rows, never every
user's (fixes §16.3).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response
from pydantic import Field

from engine.filters import parse_filters
from engine.ingest.turns import turn_row_id_of
from schemas.context_input import LayerSearchInput
from schemas.transcripts import TranscriptInput
from services.gateway.auth import Caller
from services.gateway.deps import (
    Client,
    at_most,
    input_scope,
    item_rows,
    query_scope,
)
from services.gateway.errors import ERRORS
from services.gateway.limits import StrictJsonRoute
from services.gateway.models import (
    Answer,
    Position,
)

router = APIRouter(tags=["compatibility"], responses=ERRORS, route_class=StrictJsonRoute)
"""POST routes; `listing` (GET /{agentWallet}) is a router of its own, included last."""
listing = APIRouter(tags=["compatibility"], responses=ERRORS, route_class=StrictJsonRoute)

LIST_LIMIT = (50, 200)
"""GET /{agentWallet} `limit`: default, maximum (reference §13.4)."""


# --- bodies and answers --------------------------------------------------------------------


class IndexedTurn(Answer):
    turnId: str
    eventId: str
    vectorId: str = Field(description="The exchange's `session` row (GET /items/{id}).")
    messageCount: int


class TranscriptIndexed(Answer):
    """`indexed` false (200) when there was no user/assistant text; otherwise accepted (202):
    `vectorCount` embedded rows will be stored, one per exchange (`turns`)."""

    indexed: bool
    accepted: bool
    messageCount: int = Field(description="Messages stored (blank ones are dropped).")
    vectorCount: int
    sessionId: str
    threadId: str
    turns: list[IndexedTurn]
    position: Position | None = Field(default=None, description="The last turn's position.")


class MemoryItem(Answer):
    """The reference's graph item (reference §3), with `score` and `content` added."""

    id: str
    memory: str
    content: str
    score: float | None = None
    user_id: str | None = None
    agent_id: str
    run_id: str | None = None
    metadata: dict[str, Any]
    created_at: str | None = Field(default=None, description="ISO-8601, UTC.")


# --- mapping -------------------------------------------------------------------------------


def _iso(ms: object) -> str | None:
    if not isinstance(ms, int) or isinstance(ms, bool):
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def memory_item(row: dict[str, Any], layer: str = "graph") -> MemoryItem:
    """A graph hit or an item row → `MemoryItem` (the reference's metadata keys)."""
    score = row.get("score")
    metadata = {
        **(row.get("metadata") or {}),
        "source": row.get("source"),
        "layer": layer,
        "score": score,
        "decayScore": row.get("decayScore"),
        "accessCount": row.get("accessCount"),
    }
    if row.get("relations"):
        metadata["relations"] = row["relations"]
    return MemoryItem(
        id=str(row["id"]),
        memory=str(row.get("content", "")),
        content=str(row.get("content", "")),
        score=float(score) if isinstance(score, int | float) else None,
        user_id=row.get("userAddress"),
        agent_id=str(row.get("agentWallet", "")),
        run_id=row.get("threadId"),
        metadata={k: v for k, v in metadata.items() if v is not None},
        created_at=_iso(row.get("createdAt")),
    )


# --- routes --------------------------------------------------------------------------------


@router.post(
    "/transcripts/index",
    response_model=TranscriptIndexed,
    status_code=202,
    responses={200: {"model": TranscriptIndexed, "description": "Nothing to index."}},
)
async def index_transcript(
    body: TranscriptInput, response: Response, client: Client, caller: Caller
) -> TranscriptIndexed:
    """Store a whole transcript as turns (see the module docstring). Published in order on
    the thread's partition; indexing the same transcript again stores nothing new."""
    scope = input_scope(caller, body)
    turns = body.turns(scope)
    if not turns:
        response.status_code = 200
        return TranscriptIndexed(
            indexed=False,
            accepted=False,
            messageCount=0,
            vectorCount=0,
            sessionId=body.session_id or "",
            threadId=scope.thread_id or "",
            turns=[],
        )
    at = None
    for turn in turns:
        at = await client.publish_turn(turn)
    return TranscriptIndexed(
        indexed=True,
        accepted=True,
        messageCount=sum(len(t.messages) for t in turns),
        vectorCount=len(turns),
        sessionId=turns[0].session_id,
        threadId=turns[0].thread_id,
        turns=[
            IndexedTurn(
                turnId=t.turn_id,
                eventId=t.event_id,
                vectorId=turn_row_id_of(t),
                messageCount=len(t.messages),
            )
            for t in turns
        ],
        position=Position.of(at) if at is not None else None,
    )


@router.post("/search", response_model=list[MemoryItem])
async def search(body: LayerSearchInput, client: Client, caller: Caller) -> list[MemoryItem]:
    """The graph layer's hits for `query` (facts and entities of the tenant, ranked with
    decay, rerank and MMR), best first: the reference's `MemoryItem[]` (`layers` is the
    graph's; a `limit` is lowered to 20)."""
    scope = input_scope(caller, body)
    parse_filters(scope.filters)
    request = body.request(scope).model_copy(update={"layers": ["graph"]})
    reply = await client.request_layers(request)
    return [memory_item(hit) for hit in reply.layers.get("graph", [])]


@listing.get("/{agentWallet}", response_model=list[MemoryItem])
async def newest_facts(
    agent_wallet: Annotated[
        str, Path(alias="agentWallet", min_length=1, max_length=256, description="The agent.")
    ],
    client: Client,
    caller: Caller,
    user_address: Annotated[str | None, Query(alias="userAddress", max_length=256)] = None,
    limit: Annotated[
        int | None, Query(ge=1, description="Default 50, at most 200 (lowered to it).")
    ] = None,
) -> list[MemoryItem]:
    """The tenant's newest active facts, newest first (deleted and superseded ones are not
    listed; without `userAddress`, the agent's user-less facts only)."""
    scope = query_scope(caller, agent_wallet, user_address)
    reply = await client.newest_items(scope, limit=at_most(limit, *LIST_LIMIT))
    return [memory_item(row) for row in item_rows(reply)]
