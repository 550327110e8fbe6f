"""The items group's working-session requests: `SessionRequest` on `memory.sessions.v1`
(read, edit or compress one session, or read a page of its transcript, within the
request's explicit scope), answered with `SessionReply`; an edit of what the working layer
reads announces `MemoryChanged` for the working layer of the session's thread, a
compression that stored its summary row for the vectors layer of the session's scope.
Wired into the items group's router (`services.groups.items`) with its own Kafka group id,
`<prefix>.items.sessions`."""

from __future__ import annotations

import time

from faststream.kafka.annotations import KafkaMessage
from pydantic import ValidationError

from engine.errors import DependencyFailed, MemoryError_, NotFound
from engine.ingest.turns import DAY_MS
from engine.scoping import scope_of, tenant_filter
from engine.upkeep.compression import Compressed, SessionCompressor
from engine.upkeep.sessions import (
    SessionDocument,
    SessionEdit,
    get_session,
    session_scope,
    update_session,
)
from engine.upkeep.transcripts import TranscriptPage, transcript_page
from schemas import topics
from schemas.requests import SessionReply, SessionRequest
from schemas.scope import first_error
from services.runtime import Runtime
from services.stream.consumers import EXPIRED, GroupRouter, expired

PART = "sessions"


def edit_of(rt: Runtime, request: SessionRequest, at: int) -> SessionEdit:
    """The request's edit with the configured buffer size and session TTL."""
    return SessionEdit(
        at=at,
        ttl_ms=int(rt.settings.session_ttl_days * DAY_MS),
        keep=rt.settings.working_lines,
        context=request.context,
        entities=request.entities,
        state=request.state,
        metadata=request.metadata,
        replace=request.replace,
    )


async def handle(rt: Runtime, request: SessionRequest, at: int) -> SessionDocument:
    where = tenant_filter(request.scope, durable=True)
    if request.op == "get":
        return await get_session(rt.sessions, where, request.session_id, at=at)
    return await update_session(rt.sessions, where, request.session_id, edit_of(rt, request, at))


async def compress(rt: Runtime, request: SessionRequest, at: int) -> Compressed:
    compressor = SessionCompressor(
        rt.transcripts, rt.sessions, rt.memory, rt.embedder, rt.summariser
    )
    where = tenant_filter(request.scope, durable=True)
    return await compressor.compress(where, request.session_id, at=at, model=request.model)


async def transcript(rt: Runtime, request: SessionRequest) -> TranscriptPage:
    where = tenant_filter(request.scope, durable=True)
    return await transcript_page(
        rt.transcripts, where, request.session_id, limit=request.limit, before=request.before
    )


def compressed_reply(done: Compressed) -> SessionReply:
    summary = done.summary
    return SessionReply(
        compression={
            "summary": summary.summary,
            "entitiesExtracted": len(summary.entities),
            "entities": summary.entities,
            "keyFacts": summary.key_facts,
            "vectorId": done.vector_id,
            "stored": done.stored,
            "summariser": summary.summariser,
        }
    )


def wire(group: GroupRouter[Runtime]) -> None:
    """Register the session request handler on the items group's router."""
    rt, changes = group.rt, group.changes

    @group.replier(topics.SESSIONS, part=PART)
    async def on_session_request(message: KafkaMessage) -> SessionReply:
        if expired(message):
            return SessionReply(error=EXPIRED)
        try:
            request = SessionRequest.model_validate_json(message.body)
            at = int(time.time() * 1000)
            if request.op == "compress":
                done = await compress(rt, request, at)
                if done.stored:
                    await changes.announce_at(scope_of(done.scope), ["vectors"])
                return compressed_reply(done)
            if request.op == "transcript":
                page = await transcript(rt, request)
                return SessionReply(transcript=page.json())
            session = await handle(rt, request, at)
        except ValidationError as exc:
            return SessionReply(error=first_error(exc))
        except NotFound as exc:
            return SessionReply(not_found=True, error=str(exc))
        except DependencyFailed as exc:
            return SessionReply(upstream=True, error=str(exc) or type(exc).__name__)
        except MemoryError_ as exc:
            return SessionReply(error=str(exc))
        if request.op == "update" and edit_of(rt, request, at).touches_working:
            await changes.announce_at(session_scope(session), ["working"])
        return SessionReply(session=session.json())
