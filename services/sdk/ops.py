"""Operations of `MemoryClient` beyond the loop (kept apart so the client module stays
small): `request_job(...)` publishes a maintenance job on `memory.jobs.v1`; `rerank(...)` on
`memory.rerank.v1` and `compress_session(...)` on `memory.sessions.v1` are request-reply.
Like `item(...)`, these return their reply: `error` (and `not_found`, `upstream`) are data,
not raised; no reply within the timeout raises `TimeoutError`."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from schemas import topics
from schemas.events import JobRequested
from schemas.jobs import check_job_params
from schemas.requests import RerankReply, RerankRequest, SessionReply, SessionRequest
from schemas.scope import Scope

A = TypeVar("A", bound=BaseModel)


class ServiceOps:
    """Mixed into `MemoryClient`, which provides `_exchange`."""

    async def _exchange(
        self, topic: str, request: BaseModel, key: str, reply: type[A], timeout: float | None
    ) -> A:
        raise NotImplementedError

    async def publish(self, topic: str, event: BaseModel, key: str, **headers: Any) -> Any:
        raise NotImplementedError

    async def request_job(
        self, job_type: str, params: Mapping[str, Any] | None = None, **more: Any
    ) -> JobRequested:
        """Queue a maintenance job (`params` and/or keywords: `agentWallet`, `windowDays`,
        …; see `schemas.jobs`): the job's parameters are checked first, so a parameter the
        job does not take or a value out of its range raises `ScopeError` (`ValueOutOfRange`
        for the latter) and nothing is queued. Returns the published request (its `job_id`
        names the record `admin("jobs.get", …)` reads)."""
        merged = {**(params or {}), **more}
        check_job_params(job_type, merged)
        event = JobRequested.model_validate({"type": job_type, "params": merged})
        await self.publish(topics.JOBS, event, event.type)
        return event

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
        embedded `archive` memory row of the session's own scope (reference §10.9; see
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
