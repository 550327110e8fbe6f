"""Session compression (reference §10.9 `POST …/sessions/{id}/compress`), within a tenant.

The session's transcript (else its working buffer) is read by session id within an exact
tenant filter (another tenant's session is `NotFound`, like a missing one), summarised as
`{summary, entities, keyFacts}` by a `Summariser`, and stored as one embedded memory row:
`source: "archive"`, metadata `{type: "session_compression", sessionId, keyFacts, entities,
summariser}`, in the session's *own* tenant scope (agent, user, thread, mode, hai). The
reference stored it with the agent alone, so every user of the agent recalled it (§16.30).

Idempotent per content: the row id hashes the session's storage key and its messages, so
compressing the same transcript twice writes one row; a longer transcript is a new row.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from engine.errors import InputRejected, NotFound
from engine.ingest.extraction.rules.extractor import extract_sync
from engine.ingest.extraction.types import ExtractionPolicy, TurnText
from engine.ports import Embedder, MemoryStore
from engine.records import MemoryRow, ScopeFields, Transcript
from engine.scoping import TenantFilter
from engine.upkeep.sessions import SessionStore

TYPE = "session_compression"
MAX_MESSAGES = 400
"""Newest messages read into one summary (older ones are left out of the prompt)."""
SUMMARY_CHARS = 2_000
RULES = "rules-v1"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LINE = re.compile(r"^(user|assistant|system|tool):\s?(.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """`summary` (at most `SUMMARY_CHARS`), entity names and key facts, as produced by
    `summariser` (its name)."""

    summary: str
    entities: list[str] = field(default_factory=list)
    key_facts: list[str] = field(default_factory=list)
    summariser: str = RULES


class Summariser(Protocol):
    """Summarises a conversation (user/assistant messages, oldest first).

    Raises `engine.errors.DependencyFailed` when a remote model fails or answers without a
    summary. `model` is the caller's choice of model (None: the configured one)."""

    @property
    def name(self) -> str: ...

    async def summarise(
        self, messages: Sequence[TurnText], model: str | None
    ) -> SessionSummary: ...


class SessionTranscripts(Protocol):
    """Transcripts addressed by session id within a tenant filter."""

    async def of_session(self, where: TenantFilter, session_id: str) -> Transcript | None:
        """The most recently updated transcript of that id the filter admits, or None."""
        ...


def _first_sentence(text: str) -> str:
    return _SENTENCE.split(" ".join(text.split()), maxsplit=1)[0]


class RuleSummariser:
    """Offline and deterministic: the rule-based extractor's facts about the user are the
    key facts and its entities the entities; the summary is those facts, or (when the
    rules find none) the first sentence of each user message, with a message count."""

    name = RULES
    policy = ExtractionPolicy(max_facts=12, min_confidence=0.5, max_chars=240)

    async def summarise(self, messages: Sequence[TurnText], model: str | None) -> SessionSummary:
        extraction = extract_sync(messages, self.policy)
        facts = [f.text for f in extraction.facts]
        entities = list(dict.fromkeys(e.name for e in extraction.entities))
        users = [m.content for m in messages if m.role == "user" and m.content.strip()]
        points = facts or [_first_sentence(u) for u in users[:8]]
        head = f"Session of {len(messages)} messages ({len(users)} from the user)."
        summary = " ".join([head, *points])[:SUMMARY_CHARS]
        return SessionSummary(summary=summary, entities=entities, key_facts=facts)


@dataclass(frozen=True, slots=True)
class Compressed:
    """The summary stored as `vector_id` in `scope`; `stored` is False when that row
    existed already (the same content compressed before)."""

    summary: SessionSummary
    vector_id: str
    scope: ScopeFields
    stored: bool


def _lines(context: Sequence[str]) -> list[TurnText]:
    out: list[TurnText] = []
    for line in context:
        match = _LINE.match(line)
        out.append(TurnText(*match.groups()) if match else TurnText("user", line))
    return out


def compression_id(scope: ScopeFields, session_id: str, messages: Sequence[TurnText]) -> str:
    """`cmp_<hash>` of the session's storage key and its messages (idempotent per content)."""
    content = json.dumps([scope.document_key(session_id), [[m.role, m.content] for m in messages]])
    return "cmp_" + hashlib.sha256(content.encode()).hexdigest()[:32]


@dataclass(slots=True)
class SessionCompressor:
    transcripts: SessionTranscripts
    sessions: SessionStore
    memory: MemoryStore
    embedder: Embedder
    summariser: Summariser

    async def _conversation(
        self, where: TenantFilter, session_id: str, at: int
    ) -> tuple[ScopeFields, list[TurnText]]:
        transcript = await self.transcripts.of_session(where, session_id)
        if transcript is not None:
            messages = [
                TurnText(m.role, m.content)
                for m in transcript.messages
                if m.role in ("user", "assistant") and m.content.strip()
            ]
            if messages:
                return transcript.scope, messages[-MAX_MESSAGES:]
        working = await self.sessions.touch(where, session_id, at)
        if working is None:
            raise NotFound(f"session {session_id!r} not found")
        return working.scope, _lines(working.context)

    async def compress(
        self, where: TenantFilter, session_id: str, *, at: int, model: str | None = None
    ) -> Compressed:
        """Summarise and store (see the module docstring). `at` (ms) is the row's
        `createdAt`. NotFound outside `where`; InputRejected for a session with no text."""
        if not where.agent_wallet.strip() or not session_id.strip():
            raise InputRejected("agentWallet and a session id are required")
        where = where.exact()
        scope, messages = await self._conversation(where, session_id, at)
        if not messages:
            raise InputRejected(f"session {session_id!r} has no user or assistant text")
        summary = await self.summariser.summarise(messages, model)
        vector_id = compression_id(scope, session_id, messages)
        [embedding] = await self.embedder.embed([summary.summary], "document")
        stored = await self.memory.insert_if_absent(
            MemoryRow(
                vector_id=vector_id,
                scope=scope,
                content=summary.summary,
                embedding=embedding,
                embedding_model=self.embedder.model,
                source="archive",
                created_at=at,
                metadata={
                    "type": TYPE,
                    "sessionId": session_id,
                    "keyFacts": summary.key_facts,
                    "entities": summary.entities,
                    "summariser": summary.summariser,
                },
            )
        )
        return Compressed(summary, vector_id, scope, stored)
