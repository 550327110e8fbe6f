"""post_turn persistence (reference §7.1-§7.2), idempotent and in event time.

One `TurnRecorded` → (1) the turn's messages appended to the thread's transcript (not
overwritten: fixes §16.11), (2) its user/assistant lines appended to the thread's working
buffer, keeping the newest 12, (3) one `session` memory row with the turn summary, embedded
(or, with the deferred embedding stage, written at once and embedded later by the
`embeddings` group). Turns are stored in batches (`TurnRecorder.record_many`). Each write is
keyed by the turn id, so a redelivered or replayed event changes nothing; every timestamp
comes from the event's `occurred_at`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.embedding_store import StoredEmbedder
from engine.ingest.dates import with_resolved_dates
from engine.ingest.message_units import unit_texts
from engine.ingest.outcomes import tool_content
from engine.ports import Embedder, MemoryStore, TranscriptStore, Vector, WorkingStore
from engine.records import (
    MemoryRow,
    ScopeFields,
    StoredMessage,
    TranscriptAppend,
    WorkingAppend,
    turn_row_id,
)
from engine.scoping import scope_fields
from schemas.events import TurnRecorded
from schemas.ids import thread_session_id, to_ms

DAY_MS = 86_400_000
PENDING: Vector = np.zeros(0, dtype=np.float32)
"""The embedding of a row whose vector is not computed yet (`MemoryRow.pending`)."""
SYSTEM_METADATA_KEYS = ("type", "source", "layer", "status", "contextId", "turnId", "sessionId")
"""Keys the system owns; caller metadata never overrides them (fixes reference §16.27)."""


@dataclass(frozen=True, slots=True)
class IngestPolicy:
    working_lines: int = 12
    working_line_chars: int = 1000
    session_ttl_ms: int = 30 * DAY_MS
    summary_messages: int = 6
    summary_chars: int = 1800


@dataclass(frozen=True, slots=True)
class TurnStored:
    """What `record_turn` did. `*_applied` is False when the turn was already stored."""

    session_id: str
    working_session_id: str
    transcript_applied: bool
    working_applied: bool
    vector_id: str
    vector_inserted: bool
    pending: bool = False
    """The row was written without its vector (the `embeddings` group fills it)."""
    content: str = ""
    """The row's text (what its vector is computed from)."""


def _collapse(text: str) -> str:
    """Runs of whitespace as one space, trimmed (`str.split` splits where `\\s` matches)."""
    return " ".join(text.split())


def turn_messages(event: TurnRecorded) -> list[StoredMessage]:
    """Messages and tool events merged into one list, ascending by timestamp (stable)."""
    merged = [
        StoredMessage(
            role=m.role,
            content=m.content,
            timestamp=m.timestamp,
            tool_calls=[c.model_dump() for c in m.tool_calls] if m.tool_calls else None,
            turn_id=event.turn_id,
            name=m.name,
            raw=m.raw,
        )
        for m in event.messages
    ]
    for tool in event.tool_events:
        merged.append(
            StoredMessage(
                role="tool",
                content=tool_content(tool.name, tool.status, tool.result),
                timestamp=tool.timestamp,
                tool_calls=[{"name": tool.name, "args": dict(tool.args)}],
                turn_id=event.turn_id,
            )
        )
    return sorted(merged, key=lambda m: m.timestamp)


def compact_summary(messages: list[StoredMessage], policy: IngestPolicy = IngestPolicy()) -> str:
    """Last 6 user/assistant/tool messages as `role: text` lines, ≤ 1800 chars (§7.1 step 6)."""
    picked = [m for m in messages if m.role in ("user", "assistant", "tool")]
    lines = []
    for m in picked[-policy.summary_messages :]:
        limit = 500 if m.role == "tool" else 800
        lines.append(f"{m.role}: {_collapse(m.said)[:limit]}")
    return "\n".join(lines)[: policy.summary_chars]


def working_lines(
    messages: list[StoredMessage], policy: IngestPolicy = IngestPolicy()
) -> list[str]:
    """`role: content` lines of the non-blank user/assistant messages, oldest first."""
    return [
        f"{m.role}: {m.said.strip()}"[: policy.working_line_chars]
        for m in messages
        if m.role in ("user", "assistant") and m.content.strip()
    ]


def turn_row_id_of(event: TurnRecorded) -> str:
    """Deterministic id of the turn's turn row (same turn ⇒ same id)."""
    return turn_row_id(event.scope.agent_wallet, event.session_id, event.turn_id)


def _metadata(event: TurnRecorded, **system: Any) -> dict[str, Any]:
    caller = {k: v for k, v in event.metadata.items() if k not in SYSTEM_METADATA_KEYS}
    return {**caller, **{k: v for k, v in system.items() if v is not None}}


async def embed_units(
    embedder: Embedder, texts: Sequence[str], turns: Collection[str] | None = None
) -> tuple[list[Vector], list[Vector]]:
    """Each text's vector and, for the turn texts among them (`turns`; None: all), its
    units' (`engine.ingest.message_units.unit_texts`: one row per message, a (messages, dim)
    matrix; an empty one for a text that is no turn), embedded in one call as documents.
    The live embedding stage and an inline ingest (a replay) both call this, so a replayed
    row holds the same units as the live one.

    A turn's words go through the model twice, whole and by message, on purpose: MiniLM
    weighs the speakers' names heavily in the whole turn's vector, and the units are
    embedded without them. The turn's vector as its messages' mean by length (one pass,
    2.2x fewer tokens; stop 42, docs/benchmarks.md) kept overall evidence in context on
    `benchmarks.quality --dataset handwritten --split tune` but lost multi-hop questions,
    which go through people (900 characters: 0.71 -> 0.48 there, 0.69 -> 0.58 on `long`)."""
    parts = [unit_texts(t) if turns is None or t in turns else [] for t in texts]
    if isinstance(embedder, StoredEmbedder):  # a turn and its messages: one stored record
        groups = [[t, *units] for t, units in zip(texts, parts, strict=True)]
        grouped = await embedder.embed_groups(groups)
        return [g[0] for g in grouped], [_matrix(g[1:]) for g in grouped]
    flat = list(dict.fromkeys([*texts, *(u for units in parts for u in units)]))
    embedded = dict(zip(flat, await embedder.embed(flat, "document"), strict=True))
    return [embedded[t] for t in texts], [_matrix([embedded[u] for u in units]) for units in parts]


def _matrix(vectors: Sequence[Vector]) -> Vector:
    """Message units' vectors as one (messages, dim) float32 matrix; (0, 0) for none."""
    if not vectors:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack(vectors).astype(np.float32)


KnownVectors = Callable[[Sequence[str]], Awaitable[list[Vector | None]]]
"""The stored document vector of each text, None where there is none
(`engine.embedding_store.StoredEmbedder.known`)."""


@dataclass(frozen=True, slots=True)
class _Planned:
    event: TurnRecorded
    messages: list[StoredMessage]
    summary: str
    content: str
    fields: ScopeFields
    vector_id: str
    working_id: str
    at: int


@dataclass(slots=True)
class TurnRecorder:
    """Stores turns. `deferred` (the embedding stage runs): a turn is written at once with a
    pending vector (`TurnStored.pending`) for the `embeddings` group to fill, which looks the
    text up among the stored vectors first; otherwise the turn is embedded before it is
    written (through the embedder's durable store: a replay runs no model for stored text)."""

    transcripts: TranscriptStore
    working: WorkingStore
    memory: MemoryStore
    embedder: Embedder
    policy: IngestPolicy = IngestPolicy()
    deferred: bool = False

    async def record(self, event: TurnRecorded) -> TurnStored:
        """Store one turn (`record_many` of one)."""
        [stored] = await self.record_many([event])
        return stored

    async def record_many(self, events: Sequence[TurnRecorded]) -> list[TurnStored]:
        """Store turns with three bulk writes and no read: one insert of the turns'
        transcript documents (and a head per thread), one guarded update per thread's working
        buffer, one unordered insert of the turn rows. Every
        write is idempotent on its own (turn-id guards, deterministic row ids), so a
        redelivered turn changes nothing. A turn repeated within `events` is stored once.
        One result per event, in order; with `deferred`, every first occurrence is `pending`
        (a redelivered turn asks for its vector again: the request is idempotent, and a crash
        between the write and the request must not leave a row without a vector)."""
        planned = [self._plan(e) for e in events]
        todo: dict[str, _Planned] = {}
        for p in planned:
            todo.setdefault(p.vector_id, p)
        vectors, units = await self._vectors([p.content for p in todo.values()])
        by_id = dict(zip(todo, vectors, strict=True))
        units_by_id = dict(zip(todo, units, strict=True))
        # one after the other: sent together (asyncio.gather), the MongoDB-wire server here
        # stored 1,243 turns/s at batches of 2,000 against 1,883 in turn (store_ceiling)
        applied = await self.transcripts.append_many([self._transcript(p) for p in todo.values()])
        working_applied = await self.working.append_many(
            [self._working(p) for p in todo.values()],
            keep=self.policy.working_lines,
        )
        inserted = await self.memory.insert_many_if_absent(
            [self._row(p, by_id[vid], units_by_id[vid]) for vid, p in todo.items()]
        )
        outcome = {vid: (t, w) for vid, t, w in zip(todo, applied, working_applied, strict=True)}
        results: list[TurnStored] = []
        for p in planned:
            first = todo.get(p.vector_id) is p
            transcript_applied, working_done = outcome[p.vector_id] if first else (False, False)
            results.append(
                TurnStored(
                    session_id=p.event.session_id,
                    working_session_id=p.working_id,
                    transcript_applied=transcript_applied,
                    working_applied=working_done,
                    vector_id=p.vector_id,
                    vector_inserted=first and p.vector_id in inserted,
                    pending=first and by_id[p.vector_id] is None,
                    content=p.content,
                )
            )
        return results

    async def _vectors(self, texts: list[str]) -> tuple[list[Vector | None], list[Vector | None]]:
        """Each text's vector and the vectors of its message units (`embed_units`), in one
        call of the model; None for both with `deferred` (the embedding stage fills them)."""
        if not texts or self.deferred:
            return [None] * len(texts), [None] * len(texts)
        vectors, units = await embed_units(self.embedder, texts)
        return list(vectors), list(units)

    def _plan(self, event: TurnRecorded) -> _Planned:
        messages = turn_messages(event)
        summary = event.summary or compact_summary(messages, self.policy)
        at = to_ms(event.occurred_at)
        content = summary or "\n".join(f"{m.role}: {m.content}" for m in messages)
        return _Planned(
            event=event,
            messages=messages,
            summary=summary,
            # the row (what search finds across threads) says when "yesterday" was
            content=with_resolved_dates(content, at),
            fields=scope_fields(event.scope, event.thread_id),
            vector_id=turn_row_id_of(event),
            working_id=thread_session_id(event.scope, event.thread_id),
            at=at,
        )

    @staticmethod
    def _transcript(p: _Planned) -> TranscriptAppend:
        event = p.event
        return TranscriptAppend(
            session_id=event.session_id,
            scope=p.fields,
            turn_id=event.turn_id,
            messages=p.messages,
            summary=p.summary,
            token_count=event.total_tokens,
            at=p.at,
            metadata={"modelUsed": event.model_used, "contextWindow": event.context_window},
        )

    def _working(self, p: _Planned) -> WorkingAppend:
        event = p.event
        return WorkingAppend(
            session_id=p.working_id,
            scope=p.fields,
            turn_id=event.turn_id,
            lines=working_lines(p.messages, self.policy),
            at=p.at,
            expires_at=p.at + self.policy.session_ttl_ms,
            state={
                "lastSessionId": event.session_id,
                "lastTurnAt": p.at,
                "lastTurnId": event.turn_id,
            },
            row_id=p.vector_id,
        )

    def _row(self, p: _Planned, vector: Vector | None, units: Vector | None) -> MemoryRow:
        event = p.event
        return MemoryRow(
            vector_id=p.vector_id,
            scope=p.fields,
            content=p.content,
            embedding=vector if vector is not None else PENDING,
            embedding_model=self.embedder.model,
            units=units if vector is not None else None,
            source="session",
            created_at=p.at,
            metadata=_metadata(
                event,
                type="agent_memory_turn",
                source="agent_loop",
                contextId=event.context_id,
                turnId=event.turn_id,
                sessionId=event.session_id,
            ),
        )
