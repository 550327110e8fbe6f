"""`memory.export` on `memory.admin.v1`: one page of a user's export (issue 31), for the
gateway's `GET /api/memory/export`, which streams the pages as one file of JSON lines.

The page is the exact tenant of the request's scope (agent and user; a scope without a user
is refused: the gateway exports one user's memory, `mnemostream export` an agent's), in the
format of `engine.adapters.mongo.export`. The cursor travels as a JSON string
(`body["cursor"]`), so no `_id` needs to pass the request's key checks.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from engine.errors import InputRejected
from schemas.requests import AdminRequest
from services.runtime import Runtime
from services.runtime.export import tenant_export

Result = dict[str, Any]


def _cursor(request: AdminRequest) -> dict[str, Any] | None:
    given = (request.body or {}).get("cursor")
    if given is None:
        return None
    try:
        cursor = json.loads(given) if isinstance(given, str) else None
    except ValueError:
        cursor = None
    if not isinstance(cursor, dict):
        raise InputRejected("cursor must be the `next` of the previous export page")
    return cursor


async def memory_export(rt: Runtime, request: AdminRequest) -> Result:
    """`{lines, next}`: the page from the cursor, `next` None once the export is complete."""
    scope = request.scope
    if scope is None or scope.user_address is None:
        raise InputRejected("an export names its agentWallet and userAddress")
    page = await tenant_export(rt).page(
        scope.agent_wallet, scope.user_address, _cursor(request), exported_at=datetime.now(UTC)
    )
    return {"lines": page.lines, "next": None if page.next is None else json.dumps(page.next)}
