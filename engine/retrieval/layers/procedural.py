"""The durable text layers: patterns (procedures) and archives (compressed history)."""

from __future__ import annotations

from engine.ingest.patterns import validate_counts
from engine.ports import ArchiveStore, PatternStore
from engine.records import ArchiveRecord, PatternRecord
from engine.retrieval.hits import Hit
from engine.retrieval.layers.query import LayerQuery
from engine.retrieval.layers.scene import best
from engine.retrieval.lexical import all_terms, bm25
from engine.retrieval.relevance import relevance


def pattern_text(p: PatternRecord) -> str:
    """What a pattern is matched on and shown as."""
    steps = " -> ".join(p.steps)
    when = f"when {p.trigger_type} '{p.trigger_value}'" if p.trigger_value else ""
    return " ".join(
        part
        for part in (
            p.summary,
            f"({steps})" if steps and steps not in p.summary else "",
            when,
            f"success {p.success_rate:.0%} over {p.execution_count} runs",
        )
        if part
    )


async def search_patterns(store: PatternStore, q: LayerQuery) -> list[Hit]:
    """Validated patterns (reference §9.2: ≥ 2 runs, ≥ 55 % successful, confidence ≥ 0.2) of
    the tenant plus the agent's user-less (agent-wide) ones; never another user's (the
    reference's patterns carried no scope at all, §16.12)."""
    where = q.where("patterns", durable=True, shared=True)
    if where is None:
        return []
    patterns = [
        p
        for p in await store.active(where, 4 * q.limit)
        if q.keep("patterns", p.view())
        and validate_counts(p.execution_count, p.success_rate)[0]
        and q.existed(p.created_at)
    ]
    q = await q.with_vector()
    texts = [pattern_text(p) for p in patterns]
    lexical = bm25(
        q.terms,
        [all_terms(f"{t} {' '.join(p.tags)}") for p, t in zip(patterns, texts, strict=True)],
    )
    hits: list[Hit] = []
    for p, text, lex in zip(patterns, texts, lexical, strict=True):
        score = relevance(q.cosine(p.embedding, p.embedding_model), lex, q.relevance)
        if score is None:
            continue
        hits.append(
            Hit(
                layer="patterns",
                id=p.pattern_id,
                text=text,
                score=score,
                created_at=p.last_executed,
                confidence=p.success_rate,
                source="pattern",
                raw={
                    "patternId": p.pattern_id,
                    "mode": p.scope.mode,
                    "haiId": p.scope.hai_id,
                    "summary": p.summary,
                    "trigger": {"type": p.trigger_type, "value": p.trigger_value},
                    "steps": p.steps,
                    "successRate": p.success_rate,
                    "executionCount": p.execution_count,
                    "lastExecuted": p.last_executed,
                },
            )
        )
    return best(hits, q.limit)


def archive_text(a: ArchiveRecord) -> str:
    topics = f" Topics: {', '.join(a.topics)}." if a.topics else ""
    return f"{a.summary}{topics}"


async def search_archives(store: ArchiveStore, q: LayerQuery) -> list[Hit]:
    """Archives of the tenant, matched on their summary and topics (never on the payload)."""
    where = q.where("archives", durable=True)
    if where is None:
        return []
    archives = [
        a
        for a in await store.active(where, 4 * q.limit)
        if q.keep("archives", a.view()) and q.existed(a.created_at)
    ]
    q = await q.with_vector()
    texts = [archive_text(a) for a in archives]
    lexical = bm25(q.terms, [all_terms(t) for t in texts])
    hits: list[Hit] = []
    for a, text, lex in zip(archives, texts, lexical, strict=True):
        score = relevance(q.cosine(a.embedding, a.embedding_model), lex, q.relevance)
        if score is None:
            continue
        hits.append(
            Hit(
                layer="archives",
                id=a.archive_id,
                text=text,
                score=score,
                created_at=a.end,
                source="archive",
                raw={
                    "archiveId": a.archive_id,
                    "mode": a.scope.mode,
                    "haiId": a.scope.hai_id,
                    "summary": a.summary,
                    "topics": a.topics,
                    "dateRange": {"start": a.start, "end": a.end},
                    "entryCount": a.entry_count,
                    "createdAt": a.created_at,
                },
            )
        )
    return best(hits, q.limit)
