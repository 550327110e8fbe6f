"""Request-reply operations of `MemoryClient` beyond the loop (kept apart so the client
module stays small): `rerank(...)` on `memory.rerank.v1` and `compress_session(...)` on
`memory.sessions.v1`. Like `item(...)`, they return
their reply: `error` (and `not_found`, `upstream`) are data, not raised; no reply within the
timeout raises `TimeoutError`."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from schemas import topics
from schemas.requests import RerankReply, RerankRequest, SessionReply, SessionRequest
from schemas.scope import Scope

A = TypeVar("A", bound=BaseModel)


class ServiceOps:
    """Mixed into `MemoryClient`, which provides `_exchange`."""

    async def _exchange(
        self, topic: str, request: BaseModel, key: str, reply: type[A], timeout: float | None
    ) -> A:
        raise NotImplementedError

    async def rerank(
        self,
        query: str,
        documents: Sequence[str | Mapping[str, Any]],
        *,
        top_k: int | None = None,
        timeout: float | None = None,
    ) -> RerankReply:
        """Rank `documents` (texts, or `{content, score?}` objects) by relevance to `query`,
        best first (see `RerankRequest`): the search group's reranker when one is
        configured (a provider failure comes back with `error` and `upstream=True`), else
        the layers' local relevance. Bad input raises `pydantic.ValidationError` before
        anything is published."""
        request = RerankRequest.model_validate(
            {
                "query": query,
                "documents": [{"content": d} if isinstance(d, str) else d for d in documents],
                "top_k": top_k,
            }
        )
        # no tenant to keep in order: any partition will do
        return await self._exchange(topics.RERANK, request, uuid.uuid4().hex, RerankReply, timeout)

    async def compress_session(
        self,
        session_id: str,
        scope: Mapping[str, Any] | Scope,
        *,
        model: str | None = None,
        timeout: float | None = None,
    ) -> SessionReply:
        """Summarise session `session_id` of `scope` (its agent and exact user) into one
        embedded `archive` memory row of the session's own scope (REFERENCE §10.9; see
        `SessionRequest`): `reply.compression` is `{summary, entitiesExtracted, entities,
        keyFacts, vectorId, stored, summariser}`. A missing or out-of-scope session comes
        back with `not_found=True`, an LLM failure with `upstream=True`."""
        scope_model = scope if isinstance(scope, Scope) else Scope.parse(dict(scope))
        request = SessionRequest(
            scope=scope_model, op="compress", session_id=session_id, model=model
        )
        return await self._exchange(
            topics.SESSIONS, request, scope_model.agent_wallet, SessionReply, timeout
        )
