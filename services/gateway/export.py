"""`GET /api/memory/export`: one user's memory as a file of versioned JSON lines (issue 31),
the same lines `mnemostream export --agent A --user U` writes (format:
`engine.adapters.mongo.export`; importing: `mnemostream import`).

Confined by the credential: the scope comes from the query string and is checked like every
read (`deps.query_scope`): a credential of agent A and user U exports only A/U (it may omit
both), another agent or user is 403; an operator credential names any agent and user. The
user is required: the gateway exports one user's memory, never an agent's every user.

The lines are streamed page by page (`memory.export` on `memory.admin.v1`, each page a
request-reply read of a bounded number of rows). The first page is read before the response
starts, so a refused scope or an unavailable service answers with its status; a failure
later cuts the stream short, and the file then lacks the export's last line
(`{"end": true, "rows": N}`), which `mnemostream import` requires.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from schemas.admin import ExportPage
from schemas.scope import Scope
from services.gateway.auth import Caller
from services.gateway.deps import Client, admin_result, query_scope
from services.gateway.errors import ERRORS, ApiError
from services.gateway.limits import StrictJsonRoute
from services.sdk.client import MemoryClient

router = APIRouter(tags=["export"], responses=ERRORS, route_class=StrictJsonRoute)

MEDIA_TYPE = "application/x-ndjson"


async def _pages(client: MemoryClient, scope: Scope, first: ExportPage) -> AsyncIterator[str]:
    page = first
    while True:
        for line in page.lines:
            yield line + "\n"
        if page.next is None:
            return
        reply = await client.admin("memory.export", scope, body={"cursor": page.next})
        page = admin_result(reply, ExportPage)


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {MEDIA_TYPE: {"schema": {"type": "string", "format": "jsonl"}}},
            "description": "JSON lines: a header, one stored row a line, an end line",
        }
    },
)
async def export_memory(
    client: Client,
    caller: Caller,
    agent_wallet: Annotated[
        str | None,
        Query(
            alias="agentWallet", max_length=256, description="Required unless the token names one."
        ),
    ] = None,
    user_address: Annotated[
        str | None,
        Query(
            alias="userAddress", max_length=256, description="Required unless the token names one."
        ),
    ] = None,
) -> StreamingResponse:
    """One user's memory as JSON lines: a header (`format`, `version`, `scope`,
    `exportedAt`, `kinds`), then one stored row a line with its `kind` (transcripts and
    their turns, working buffers, memory rows, relations, patterns, archives as stored,
    skills, item history), in MongoDB Extended JSON."""
    scope = query_scope(caller, agent_wallet, user_address)
    if scope.user_address is None:
        raise ApiError(400, "userAddress is required: the export is one user's memory")
    first = admin_result(await client.admin("memory.export", scope), ExportPage)
    return StreamingResponse(_pages(client, scope, first), media_type=MEDIA_TYPE)
