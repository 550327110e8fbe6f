"""Operations beyond the agent loop: memory items, working-memory sessions, admin reads,
maintenance jobs and reranking.

Every request-reply here returns its reply: `not_found`, `error` (and `upstream`, a provider
failure) are data, not raised; no reply within the timeout raises `TimeoutError`. A scope or
a value the request contract refuses raises before anything is published (`ScopeError`,
`pydantic.ValidationError`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from schemas import topics
from schemas.bodies import parse_body
from schemas.events import JobRequested
from schemas.job_input import JobInput
from schemas.jobs import JobStatus, JobType
from schemas.requests import (
    MAX_TRANSCRIPT_PAGE,
    AdminOp,
    AdminReply,
    AdminRequest,
    ItemReply,
    ItemRequest,
    RerankDocument,
    RerankReply,
    RerankRequest,
    SessionReply,
    SessionRequest,
)
from services.sdk.transport import RECORD_TIME, Position, ScopeInput, Transport, scope_of

__all__ = ["ItemOp", "Operations", "SessionOp"]

ItemOp: TypeAlias = Literal["get", "update", "delete", "restore", "resolve"]
SessionOp: TypeAlias = Literal["get", "update"]


class Operations(Transport):
    """Items, sessions, admin, jobs and rerank over `memory.items.v1`, `memory.sessions.v1`,
    `memory.admin.v1`, `memory.jobs.v1` and `memory.rerank.v1`."""

    async def item(
        self,
        op: ItemOp,
        item_id: str,
        scope: ScopeInput,
        *,
        content: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        retention: str | None = None,
        confidence: float | None = None,
        status: str | None = None,
        hard: bool = False,
        resolution: str | None = None,
        winning_id: str | None = None,
        reason: str | None = None,
        actor: str | None = None,
        timeout: float | None = None,
    ) -> ItemReply:
        """get / update / delete / restore / resolve one memory item within `scope` (see
        `ItemRequest`: `update` takes content, metadata, retention, confidence and status,
        `delete` takes `hard`, `restore` brings a soft-deleted item back, `resolve` takes
        resolution, winning_id and reason). A missing or out-of-scope item comes back with
        `not_found=True`. Each change is kept in the item's history (`history`) with
        `actor` (default: the client's `actor`) as who made it."""
        request = ItemRequest(
            scope=scope_of(scope),
            op=op,
            id=item_id,
            content=content,
            metadata=metadata,
            retention=retention,
            confidence=confidence,
            status=status,
            hard=hard,
            resolution=resolution,
            winning_id=winning_id,
            reason=reason,
            actor=actor or self.actor,
        )
        return await self._ask(topics.ITEMS, request, ItemReply, timeout)

    async def history(
        self,
        item_id: str,
        scope: ScopeInput,
        *,
        limit: int = 200,
        timeout: float | None = None,
    ) -> ItemReply:
        """The history of one memory item within `scope`: `reply.history`, its newest
        `limit` (1-200) changes, oldest first — `{id, itemId, kind, at, cause: {kind, id,
        name}, actor, oldContent, newContent, details}`, kinds `created`, `updated`,
        `superseded` (its validity interval and successor in `details`), `reinstated`,
        `merged`, `resolved`, `deleted`, `purged`, `restored` — and `reply.items`, the item
        as it is now (empty when deleted or purged: the history stays). Another tenant's
        item (or one that never existed) comes back with `not_found=True`."""
        request = ItemRequest(scope=scope_of(scope), op="history", id=item_id, limit=limit)
        return await self._ask(topics.ITEMS, request, ItemReply, timeout)

    async def newest_items(
        self,
        scope: ScopeInput,
        *,
        limit: int = 50,
        as_of: int | None = None,
        timeout: float | None = None,
    ) -> ItemReply:
        """The scope's `limit` (1-200) newest active facts, newest first (`list` on
        `memory.items.v1`); a scope without `userAddress` reads only user-less facts. With
        `as_of` (milliseconds since epoch), the facts that were true then, one replaced
        since included (its `invalidAt` says when it stopped being true)."""
        request = ItemRequest(scope=scope_of(scope), op="list", limit=limit, as_of=as_of)
        return await self._ask(topics.ITEMS, request, ItemReply, timeout)

    async def scan_items(
        self,
        scope: ScopeInput,
        *,
        tagged: Mapping[str, str],
        after: str | None = None,
        limit: int = 100,
        query: str | None = None,
        texts_at: str | None = None,
        timeout: float | None = None,
    ) -> ItemReply:
        """One page of the scope's active rows whose metadata holds every `tagged` value
        (`scan` on `memory.items.v1`, see `ItemRequest`), by ascending id after `after`;
        `reply.next_after` is the next page's `after` (None: this was the last). With
        `query`, `reply.scores` holds each row's best cosine against the texts listed at
        `metadata.<texts_at>` (None for a row without texts)."""
        request = ItemRequest(
            scope=scope_of(scope),
            op="scan",
            tagged=dict(tagged),
            after=after,
            limit=limit,
            query=query,
            texts_at=texts_at,
        )
        return await self._ask(topics.ITEMS, request, ItemReply, timeout)

    async def read_items(
        self, scope: ScopeInput, ids: Sequence[str], *, timeout: float | None = None
    ) -> ItemReply:
        """The visible rows among `ids` (at most `MAX_READS`) within `scope`, by id (`read`
        on `memory.items.v1`); `reply.next_after` is the first id a full reply left out."""
        request = ItemRequest(scope=scope_of(scope), op="read", ids=list(ids))
        return await self._ask(topics.ITEMS, request, ItemReply, timeout)

    async def write_items(
        self,
        scope: ScopeInput,
        writes: Sequence[Mapping[str, Any]],
        *,
        read_back: Sequence[str] = (),
        timeout: float | None = None,
    ) -> ItemReply:
        """Put, patch or delete many rows of `scope` at once (`write` on `memory.items.v1`:
        distinct ids, at most `MAX_WRITES`; `schemas.item_writes.ItemWrite`): one bulk write
        and one change announcement, applied before the reply; then `reply.items` holds the
        visible rows among `read_back` (as `read_items` answers them)."""
        request = self._write_request(scope, writes, read_back)
        return await self._ask(topics.ITEMS, request, ItemReply, timeout)

    def _write_request(
        self, scope: ScopeInput, writes: Sequence[Mapping[str, Any]], read_back: Sequence[str]
    ) -> ItemRequest:
        return ItemRequest.model_validate(
            {
                "scope": scope_of(scope),
                "op": "write",
                "writes": list(writes),
                "ids": list(read_back) or None,
                "actor": self.actor,
            }
        )

    async def write_and_scan_items(
        self,
        scope: ScopeInput,
        writes: Sequence[Mapping[str, Any]],
        *,
        read_back: Sequence[str] = (),
        tagged: Mapping[str, str],
        limit: int = 100,
        timeout: float | None = None,
    ) -> tuple[ItemReply, ItemReply]:
        """`write_items`, then the first page of `scan_items(tagged=...)` as it is after the
        writes, in one round trip: the scan is published once the broker has the write (one
        tenant's item requests share a partition, which the items group answers one request
        at a time, in order), then both replies are awaited."""
        write = self._write_request(scope, writes, read_back)
        scan = ItemRequest(scope=scope_of(scope), op="scan", tagged=dict(tagged), limit=limit)
        written, scanned = await self._in_order([write, scan], timeout)
        return written, scanned

    async def write_items_logged(
        self,
        scope: ScopeInput,
        writes: Sequence[Mapping[str, Any]],
        *,
        timeout: float | None = None,
        at: int | None = None,
    ) -> asyncio.Task[list[ItemReply]]:
        """`write_items` without its read-back, returning once the broker has the request (a
        request of the tenant published later is answered after it is applied); the task
        answers its reply (`timeout` seconds from now; the request's deadline too). `at`
        (ms since epoch): the request's record time, which the items group applies the
        writes at (a new or revived row's creation time); else now."""
        request = self._write_request(scope, writes, ())
        stamp = RECORD_TIME.set(at)
        try:
            return await self._published(topics.ITEMS, [request], ItemReply, timeout)
        finally:
            RECORD_TIME.reset(stamp)

    async def item_requests_logged(
        self, requests: Sequence[ItemRequest], *, timeout: float | None = None
    ) -> asyncio.Task[list[ItemReply]]:
        """Item requests of one tenant published in order, returning once the broker has
        them all (a request published later is answered after them); the task answers their
        replies (`timeout` seconds from now)."""
        return await self._published(topics.ITEMS, requests, ItemReply, timeout)

    async def _in_order(
        self, requests: Sequence[ItemRequest], timeout: float | None
    ) -> list[ItemReply]:
        """Item requests of one tenant published in order (`_published`), every reply awaited."""
        return await (await self._published(topics.ITEMS, requests, ItemReply, timeout))

    async def forget_user(self, scope: ScopeInput, *, timeout: float | None = None) -> ItemReply:
        """Erase every record of the scope's user of its agent (`forget` on
        `memory.items.v1`; see `engine.upkeep.erasure`): memory items, transcripts, working
        buffers, relations, patterns, archives and skills, whatever their thread. The
        agent's user-less rows and other users' are kept; a scope without `userAddress`
        comes back with an `error`. `reply.erased` counts what was removed, by kind."""
        request = ItemRequest(scope=scope_of(scope), op="forget")
        return await self._ask(topics.ITEMS, request, ItemReply, timeout)

    async def session(
        self,
        op: SessionOp,
        session_id: str,
        scope: ScopeInput,
        *,
        context: Sequence[str] | None = None,
        entities: Mapping[str, Any] | None = None,
        state: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        replace: bool = False,
        timeout: float | None = None,
    ) -> SessionReply:
        """get / update one working-memory session within `scope` (`update` merges
        `context` lines, `entities`, `state` and `metadata`, or with `replace` replaces each
        given part; see `SessionRequest`). A missing or out-of-scope session comes back
        with `not_found=True`."""
        request = SessionRequest(
            scope=scope_of(scope),
            op=op,
            session_id=session_id,
            context=context,
            entities=entities,
            state=state,
            metadata=metadata,
            replace=replace,
        )
        return await self._ask(topics.SESSIONS, request, SessionReply, timeout)

    async def transcript(
        self,
        session_id: str,
        scope: ScopeInput,
        *,
        limit: int = MAX_TRANSCRIPT_PAGE,
        before: int | None = None,
        timeout: float | None = None,
    ) -> SessionReply:
        """A page of session `session_id`'s transcript within `scope` (its agent and exact
        user): `reply.transcript["messages"]` are the newest `limit` (1-200) messages before
        position `before` (the end when None), oldest first, each `{role, content,
        timestamp, turnId?, name?, toolCalls?, raw?}`; `reply.transcript["start"]` is the
        first one's position (read on with `before=start` until it is 0). A missing or
        out-of-scope transcript comes back with `not_found=True`."""
        request = SessionRequest(
            scope=scope_of(scope),
            op="transcript",
            session_id=session_id,
            limit=limit,
            before=before,
        )
        return await self._ask(topics.SESSIONS, request, SessionReply, timeout)

    async def compress_session(
        self,
        session_id: str,
        scope: ScopeInput,
        *,
        model: str | None = None,
        timeout: float | None = None,
    ) -> SessionReply:
        """Summarise session `session_id` of `scope` (its agent and exact user) into one
        embedded `archive` memory row of the session's own scope (reference §10.9; see
        `SessionRequest`): `reply.compression` is `{summary, entitiesExtracted, entities,
        keyFacts, vectorId, stored, summariser}`. A missing or out-of-scope session comes
        back with `not_found=True`, an LLM failure with `upstream=True`."""
        request = SessionRequest(
            scope=scope_of(scope), op="compress", session_id=session_id, model=model
        )
        return await self._ask(topics.SESSIONS, request, SessionReply, timeout)

    async def admin(
        self,
        op: AdminOp,
        scope: ScopeInput | None = None,
        *,
        id: str | None = None,
        limit: int = 20,
        name: str | None = None,
        pattern_type: str | None = None,
        min_success_rate: float | None = None,
        category: str | None = None,
        status: JobStatus | None = None,
        source: str | None = None,
        body: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> AdminReply:
        """One `memory.admin.v1` operation: patterns, skills, job records, stats, evals,
        archive pinning, the console's views of a tenant's rows and graph (see
        `AdminRequest` for which op reads which field; `body` is the raw `evals.run` body).
        Keyed by the scope's agent, else by `op`.

        Job records: `admin("jobs.get", {"agentWallet": A} or None, id=JOB_ID)` reads one
        (`not_found` when it does not exist or does not name A), `admin("jobs.list", scope,
        status="failed", limit=20)` the newest ones, newest first (`result["jobs"]`; see
        `schemas.admin.JobRecordsResponse`)."""
        scope_model = None if scope is None else scope_of(scope)
        request = AdminRequest(
            op=op,
            scope=scope_model,
            id=id,
            limit=limit,
            name=name,
            pattern_type=pattern_type,
            min_success_rate=min_success_rate,
            category=category,
            status=status,
            source=source,
            body=body,
        )
        key = scope_model.agent_wallet if scope_model is not None else op
        return await self._exchange(topics.ADMIN, request, key, AdminReply, timeout)

    async def request_job(
        self, job: JobType | JobInput, params: Mapping[str, Any] | None = None
    ) -> JobRequested:
        """Queue a maintenance job: its type and `params` (`agentWallet`, `windowDays`, …;
        see `schemas.jobs`), or the body's model (`schemas.job_input.JobInput`, as the
        gateway's POST /jobs and the CLI parse it). The parameters are checked first, so one
        the job does not take or a value out of its range raises `ScopeError`
        (`ValueOutOfRange` for the latter) and nothing is queued. Returns the published
        request (its `job_id` names the record `admin("jobs.get", …)` reads)."""
        body = {**(params or {}), "type": job} if isinstance(job, str) else job
        event = parse_body(JobInput, body).requested()
        await self.publish_job(event)
        return event

    async def publish_job(self, event: JobRequested) -> Position:
        """Publish a job request, keyed by its type."""
        return await self.publish(topics.JOBS, event, event.type)

    async def rerank(
        self,
        query: str,
        documents: Sequence[str | RerankDocument | Mapping[str, Any]],
        *,
        top_k: int | None = None,
        timeout: float | None = None,
    ) -> RerankReply:
        """Rank `documents` (texts, `RerankDocument`s or `{content, score?}` objects) by
        relevance to `query`, best first (see `RerankRequest`): the search group's reranker
        when one is configured (a provider failure comes back with `error` and
        `upstream=True`), else the layers' local relevance. Bad input raises
        `pydantic.ValidationError` before anything is published."""
        request = RerankRequest.model_validate(
            {
                "query": query,
                "documents": [{"content": d} if isinstance(d, str) else d for d in documents],
                "top_k": top_k,
            }
        )
        # no tenant to keep in order: any partition will do
        return await self._exchange(topics.RERANK, request, uuid.uuid4().hex, RerankReply, timeout)
