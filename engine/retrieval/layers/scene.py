"""The thread-scoped text layers: working (the recent lines) and scene (the transcript).

A turn's meaning is ranked by its turn row's vector (`VectorIndex.vectors`, the tenant's rows
the memory layers hold too): the transcript and working buffer keep no vector of their own,
so the embedding stage writes a turn's vector once (issue 29)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from engine.ports import TranscriptStore, VectorIndex, WorkingStore
from engine.records import StoredMessage, Transcript, said_by, turn_row_id
from engine.retrieval.hits import Hit
from engine.retrieval.layers.query import LayerQuery
from engine.retrieval.lexical import all_terms, bm25
from engine.retrieval.relevance import pool_relevance, relevance
from engine.retrieval.units import shown_units
from engine.scoping import SHARED_SOURCES

WORKING_LINES_SHOWN = 5
SHOWN_TURNS = (WORKING_LINES_SHOWN + 1) // 2
"""Turns the shown lines cover (a turn is a user and an assistant line): a working hit is
scored by the newest turns' vectors only, the turns it shows."""
SCENE_TURNS = 1000
"""Turns of each thread the scene layer searches, the newest: a thread's transcript is no
longer bounded by a document's size (issue 29), and a search must not read a 50,000-turn
thread whole. Older turns are found by the vectors layer (every turn's turn row)."""
SCENE_VECTOR_TURNS = 64
"""Turns of each transcript ranked by their vector too, the newest (older turns rank by their
words here; their meaning is searched by the vectors layer)."""
_SPACES = re.compile(r"\s+")


def _line(m: StoredMessage) -> str:
    return _said_line(m.role, m.name, m.content)


@functools.lru_cache(maxsize=65536)
def _said_line(role: str, name: str | None, content: str) -> str:
    """A message as one "role: words" line. Memoised: the scene layer renders its newest
    `SCENE_TURNS` turns a request, the same stored messages request after request."""
    return f"{role}: {_SPACES.sub(' ', said_by(name, content)).strip()}"


async def row_cosines(
    index: VectorIndex | None, q: LayerQuery, vector_ids: Sequence[str]
) -> dict[str, float]:
    """The query's cosine with each row's stored vector, read through the memory layers'
    filter and tokens (the same tenant state); rows without a vector are left out."""
    if index is None or q.vector is None or not vector_ids:
        return {}
    where = q.where("vectors", durable=True, shared_sources=SHARED_SOURCES)
    if where is None:
        return {}
    found = await index.vectors(
        where,
        list(dict.fromkeys(vector_ids)),
        model=q.model,
        dim=int(q.vector.shape[0]),
        version=q.tokens.tenant,
        shared=q.tokens.shared,
    )
    return {i: c for i, v in found.items() if (c := q.cosine(v, q.model)) is not None}


def _best(cosines: dict[str, float], vector_ids: Sequence[str]) -> float | None:
    scores = [cosines[i] for i in vector_ids if i in cosines]
    return max(scores) if scores else None


async def search_working(
    store: WorkingStore, q: LayerQuery, index: VectorIndex | None = None
) -> list[Hit]:
    """Working buffers of the scope's thread that are relevant to the query. A hit's text is
    its newest lines, newest first (fixes reference §16.9), and it is scored on what it
    shows: a buffer whose older lines matched no longer packs newest lines that do not
    (issue 16: with only a budget, such hits filled user-wide contexts). A working buffer is
    one thread's: a query that names no thread has no current conversation, so the layer
    answers nothing (as the reference's per-call thread does, reference §1)."""
    where = q.where("working", durable=False)
    if where is None or q.scope.thread_id is None:
        return []
    sessions = [
        s
        for s in await q.read(
            ("working", id(store), where, 3 * q.limit),
            lambda: store.recent(where, 3 * q.limit),
            token=q.tokens.thread,
        )
        if s.lines and q.keep("working", s.view()) and q.existed(s.last_accessed_at)
    ]
    q = await q.with_vector()
    cosines = await row_cosines(index, q, [r for s in sessions for r in s.turn_rows[-SHOWN_TURNS:]])
    shown_lines = [s.lines[:WORKING_LINES_SHOWN] for s in sessions]
    lexical = bm25(q.terms, [all_terms("\n".join(lines)) for lines in shown_lines])
    hits: list[Hit] = []
    for s, shown, lex in zip(sessions, shown_lines, lexical, strict=True):
        score = relevance(_best(cosines, s.turn_rows[-SHOWN_TURNS:]), lex, q.relevance)
        if score is None:
            continue
        hits.append(
            Hit(
                layer="working",
                id=s.session_id,
                text="\n".join(shown),
                score=score,
                created_at=s.last_accessed_at,
                source="working",
                raw={
                    "sessionId": s.session_id,
                    "mode": s.scope.mode,
                    "haiId": s.scope.hai_id,
                    "context": shown,
                    "state": s.state,
                    "lastAccessedAt": s.last_accessed_at,
                },
            )
        )
    return best(hits, q.limit)


def _turns(t: Transcript) -> list[tuple[str, list[StoredMessage]]]:
    """The transcript's turns in order, each with its user/assistant messages."""
    turns: dict[str, list[StoredMessage]] = {}
    for m in t.messages:
        if m.role in ("user", "assistant"):
            turns.setdefault(m.turn_id or "", []).append(m)
    return list(turns.items())


def _row_ids(t: Transcript, turn_ids: Sequence[str]) -> dict[str, str]:
    """Turn id → its turn row's id, for the newest `SCENE_VECTOR_TURNS` of `turn_ids`."""
    newest = [i for i in turn_ids if i][-SCENE_VECTOR_TURNS:]
    return {i: turn_row_id(t.scope.agent_wallet, t.session_id, i) for i in newest}


async def search_scene(
    store: TranscriptStore, q: LayerQuery, index: VectorIndex | None = None
) -> list[Hit]:
    """The thread's transcripts, one candidate per turn: a hit shows the turn that matched
    (the newest `SCENE_TURNS` turns are searched, not only the recent lines)."""
    where = q.where("scene", durable=False)
    if where is None:
        return []
    recent = await q.read(
        ("scene", id(store), where, 3 * q.limit),
        lambda: store.recent(where, 3 * q.limit, turns=SCENE_TURNS),
        token=q.tokens.thread,
    )
    transcripts = [t for t in recent if q.keep("scene", t.view())]
    q = await q.with_vector()
    by_thread = [(t, _turns(t)) for t in transcripts]
    rows = {id(t): _row_ids(t, [turn_id for turn_id, _ in turns]) for t, turns in by_thread}
    cosines = await row_cosines(index, q, [r for ids in rows.values() for r in ids.values()])
    candidates: list[tuple[Transcript, str, list[StoredMessage]]] = [
        (t, turn_id, msgs)
        for t, turns in by_thread
        for turn_id, msgs in turns
        if msgs and q.existed(msgs[-1].timestamp)
    ]
    texts = ["\n".join(map(_line, msgs)) for _, _, msgs in candidates]
    shown = shown_units(q.terms, texts)  # judged by its best message, shown as it
    turn_cosines = [cosines.get(rows[id(t)].get(turn_id, "")) for t, turn_id, _ in candidates]
    scores = pool_relevance(turn_cosines, [u.lexical for u in shown], q.relevance)
    hits: list[Hit] = []
    for (t, turn_id, msgs), unit, score in zip(candidates, shown, scores, strict=True):
        if score is None:
            continue
        hits.append(
            Hit(
                layer="scene",
                id=f"{t.session_id}#{turn_id}" if turn_id else t.session_id,
                text=unit.text,
                context=unit.context,
                score=score,
                created_at=msgs[-1].timestamp,
                source="transcript",
                turn=f"{t.session_id}#{turn_id}" if turn_id else None,
                raw={
                    "sessionId": t.session_id,
                    "threadId": t.scope.thread_id,
                    "turnId": turn_id or None,
                    "mode": t.scope.mode,
                    "haiId": t.scope.hai_id,
                    "messageCount": len(t.messages),
                    "summary": t.summary,
                    "messages": [
                        {"role": m.role, "content": m.content, "timestamp": m.timestamp}
                        | ({"name": m.name} if m.name else {})
                        for m in msgs
                    ],
                    "tokenCount": t.token_count,
                    "createdAt": t.created_at,
                },
            )
        )
    return best(hits, q.limit)


def best(hits: list[Hit], limit: int) -> list[Hit]:
    """Highest score first, then newest, then id (deterministic)."""
    return sorted(hits, key=lambda h: (-(h.score or 0.0), -(h.created_at or 0), h.id))[:limit]
