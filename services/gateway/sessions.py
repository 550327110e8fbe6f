"""Working-memory sessions (reference §7.2, §13.3), request-reply over `memory.sessions.v1`.

A session is read and edited within the caller's explicit scope: `agentWallet` is required
(a token limited to one agent fills it in) and the user matches exactly, so a session of
another agent or user is 404, exactly like a missing one (the reference matched the agent
only and reached every user's session, §16.3). An edit of a missing session is 404 too:
sessions are created by post_turn, never by a PATCH under a guessed scope.

POST /sessions/{id}/compress (reference §10.9) summarises the session within the same
scope into one embedded `archive` memory row of the session's own scope (the reference
stored it under the agent alone, visible to every user, §16.30); compressing the same
content again stores nothing new. An LLM failure is 502.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field

from schemas.item_input import WorkingPatchInput
from schemas.operation_input import CompressInput
from schemas.requests import SessionReply
from services.gateway.auth import Caller
from services.gateway.deps import Client, QueryScope, input_scope
from services.gateway.errors import ERRORS, NOT_FOUND, ApiError, ErrorBody
from services.gateway.limits import StrictJsonRoute
from services.gateway.models import SessionResponse, SessionUpdated

router = APIRouter(tags=["sessions"], responses=ERRORS, route_class=StrictJsonRoute)

SessionId = Annotated[
    str,
    Path(min_length=1, max_length=600, description="The session id (`session:global:…`)."),
]


def _session(reply: SessionReply) -> dict[str, object]:
    if reply.not_found:
        raise ApiError(404, reply.error or "working session not found")
    if reply.error or reply.session is None:
        raise ApiError(400, reply.error or "no session in the reply")
    return reply.session


@router.get("/sessions/{id}/working", response_model=SessionResponse, responses=NOT_FOUND)
async def get_working(
    id: SessionId,
    client: Client,
    scope: QueryScope,
) -> SessionResponse:
    """`{session}`: the working buffer (`workingMemory.context` oldest first, `entities`,
    `state`), metadata and times in ms; reading it moves `lastAccessedAt`."""
    return SessionResponse(session=_session(await client.session("get", id, scope)))


@router.patch("/sessions/{id}/working", response_model=SessionUpdated, responses=NOT_FOUND)
async def update_working(
    id: SessionId,
    body: WorkingPatchInput,
    client: Client,
    caller: Caller,
) -> SessionUpdated:
    """Merge (default) or, with `replace: true`, replace the session's `context`,
    `entities`, `state` and `metadata`: `{success, session}`. Merged context keeps the
    newest lines (the working buffer's size); the TTL is refreshed."""
    scope = input_scope(caller, body)
    reply = await client.update_session(id, body, scope=scope)
    return SessionUpdated(success=True, session=_session(reply))


class SessionCompressed(BaseModel):
    summary: str
    entitiesExtracted: int
    entities: list[str]
    keyFacts: list[str]
    vectorId: str = Field(description="The summary's memory row (GET /items/{id}).")
    stored: bool = Field(description="False when this content was compressed before.")
    summariser: str = Field(description="`rules-v1` offline, else `llm:<model>`.")


COMPRESS_ERRORS: dict[int | str, dict[str, Any]] = {
    **NOT_FOUND,
    502: {"model": ErrorBody, "description": "The LLM failed."},
}


@router.post("/sessions/{id}/compress", response_model=SessionCompressed, responses=COMPRESS_ERRORS)
async def compress_session(
    id: SessionId, body: CompressInput, client: Client, caller: Caller
) -> SessionCompressed:
    """Summarise the session (its transcript, else its working buffer) as `{summary,
    entitiesExtracted, entities, keyFacts}` and store the summary as one embedded memory
    row (`source: "archive"`, metadata type `session_compression`) of the session's scope."""
    scope = input_scope(caller, body)
    reply = await client.compress_session(id, scope.tenant(), model=body.coordinator_model)
    if reply.not_found:
        raise ApiError(404, reply.error or "session not found")
    if reply.upstream:
        raise ApiError(502, reply.error or "the summariser failed")
    if reply.error or reply.compression is None:
        raise ApiError(400, reply.error or "no compression in the reply")
    return SessionCompressed(**reply.compression)
