"""The durable text layers: patterns (procedures) and archives (compressed history).

A pattern enters a context only when it is relevant to the query, by the relevance every
layer uses (`engine.retrieval.relevance`) over what the pattern *is*: its steps (the tool
names), not its generated summary, whose words ("tool sequence", "used 3 times",
"successful") every pattern shares. One rule is the patterns' own: a query that shares with
a pattern only what its tools *do* (`TOOL_ACTIONS`: book, search, send, …) and none of what
they work on (flights, a confirmation) asks for that action on something else ("How do I
book a hotel?" against `search_flights → book_flight → send_confirmation`). The shared word
is then no evidence, and it lifts the cosine too, so the pattern needs a cosine of at least
`ACTION_ONLY_MIN_COSINE` (issue 17: the hotel question was answered with the flight
procedure). "How do I book a flight?" shares `flight` and is a hit as before.
"""

from __future__ import annotations

from engine.ingest.patterns import validate_counts
from engine.ports import ArchiveStore, PatternStore
from engine.records import ArchiveRecord, PatternRecord
from engine.retrieval.hits import Hit
from engine.retrieval.layers.query import LayerQuery
from engine.retrieval.layers.scene import best
from engine.retrieval.lexical import all_terms, bm25, stem
from engine.retrieval.relevance import RelevancePolicy, combined, relevance

_ACTION_WORDS = (
    "add apply approve assign book buy calculate call cancel change check close collect "
    "compare compute confirm convert create delete download edit execute export fetch "
    "fill find generate get import invite list load log look lookup make modify notify "
    "open order parse pay post publish query read reject remove render reserve retrieve "
    "review run save schedule search send set share start stop store submit sync track "
    "translate update upload validate verify write"
)
TOOL_ACTIONS = frozenset(stem(word) for word in _ACTION_WORDS.split())
"""Verbs tool names use for what a tool does, whatever it works on (stemmed like query terms)."""
ACTION_ONLY_MIN_COSINE = 0.42
"""The cosine a pattern needs when the query shares only tool actions with it. Measured with
the local MiniLM against the embedded steps (`engine.ingest.patterns.steps_text`) of two
flight-booking procedures: questions about booking or searching hotels, restaurants or
accommodation reach at most 0.38, questions about flights in other words ("book a plane
ticket", "book an airline seat") at least 0.45."""


def pattern_text(p: PatternRecord) -> str:
    """What a pattern is shown as."""
    steps = " -> ".join(p.steps)
    when = f"when {p.trigger_type} '{p.trigger_value}'" if p.trigger_value else ""
    return " ".join(
        part
        for part in (
            p.summary,
            f"({steps})" if steps and steps not in p.summary else "",
            when,
            f"success {p.success_rate:.0%} over {p.known_count} runs"
            + (" with a known outcome" if p.unknown_count else ""),
        )
        if part
    )


def pattern_terms(p: PatternRecord) -> list[str]:
    """What a pattern is matched on, with repetitions (for BM25): the terms of its steps
    (`book_flight` → book, flight), or of its summary when it has no steps."""
    return all_terms(" ".join(p.steps) if p.steps else p.summary)


def pattern_relevance(
    asked: set[str],
    terms: set[str],
    cosine: float | None,
    lexical: float,
    policy: RelevancePolicy,
) -> float | None:
    """The relevance of a pattern with `terms` to a query with the terms `asked`, or None
    when it is not a hit: `relevance`, except that a query sharing only tool actions with a
    pattern that has other terms needs `ACTION_ONLY_MIN_COSINE` (see the module doc)."""
    shared = asked & terms
    if shared and shared <= TOOL_ACTIONS and not terms <= TOOL_ACTIONS:
        if cosine is None or cosine < ACTION_ONLY_MIN_COSINE:
            return None
        return combined(cosine, lexical, policy)
    return relevance(cosine, lexical, policy)


async def search_patterns(store: PatternStore, q: LayerQuery) -> list[Hit]:
    """Validated patterns (reference §9.2 over the runs with a known outcome: ≥ 2 runs,
    ≥ 55 % successful, confidence ≥ 0.2) of the tenant plus the agent's user-less
    (agent-wide) ones, relevant to the query (see the module doc); never another user's
    (the reference's patterns carried no scope at all, §16.12)."""
    where = q.where("patterns", durable=True, shared=True)
    if where is None:
        return []
    patterns = [
        p
        for p in await q.read(
            ("patterns", id(store), where, 4 * q.limit),
            lambda: store.active(where, 4 * q.limit),
            token=q.tokens.patterns,
        )
        if q.keep("patterns", p.view())
        and validate_counts(p.known_count, p.success_rate)[0]
        and q.existed(p.created_at)
    ]
    q = await q.with_vector()
    documents = [pattern_terms(p) for p in patterns]
    lexical = bm25(q.terms, documents)
    asked = set(q.terms)
    hits: list[Hit] = []
    for p, words, lex in zip(patterns, documents, lexical, strict=True):
        cosine = q.cosine(p.embedding, p.embedding_model)
        score = pattern_relevance(asked, set(words), cosine, lex, q.relevance)
        if score is None:
            continue
        hits.append(
            Hit(
                layer="patterns",
                id=p.pattern_id,
                text=pattern_text(p),
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
                    "unknownCount": p.unknown_count,
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
        for a in await q.read(
            ("archives", id(store), where, 4 * q.limit),
            lambda: store.active(where, 4 * q.limit),
            token=q.tokens.archives,
        )
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
