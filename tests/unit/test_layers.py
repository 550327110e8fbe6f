"""The six layers end to end over in-memory ports with the real local MiniLM embedder.

Every layer finds a paraphrase that shares no content word with what was stored, where the
reference's whole-query substring test (reference §3, §16.10) finds nothing; patterns and
archives honour tenant scope (§16.12); the double-ranking rule (§3); MMR that survives the
final sort (§16.7); decay that survives rerank (§16.17).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.memory import (
    InMemoryArchiveStore,
    InMemoryMemoryStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.errors import DependencyFailed
from engine.ingest.remember import Rememberer
from engine.ingest.turns import TurnRecorder
from engine.records import ArchiveRecord, PatternRecord, ScopeFields
from engine.retrieval.hits import Hit
from engine.retrieval.lexical import all_terms, terms
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter
from schemas.ids import thread_session_id, to_ms
from schemas.inputs import memory_remembered, turn_recorded
from schemas.requests import LayerSearchRequest
from schemas.scope import Scope

AGENT = "0xAgent"
NOW = datetime(2024, 9, 2, 12, 0, tzinfo=UTC)
NOW_MS = to_ms(NOW)
DAY = timedelta(days=1)

DOG_LINE = "We adopted a greyhound called Juniper"
CLARA_LINE = "My sister Clara works as a cardiologist in Toronto"
VIOLIN_LINE = "My daughter starts violin lessons on Saturday"
CAR_FACT = "Our car is a blue Toyota Corolla"
TRAVEL_PATTERN = "Trip planning: search flights -> compare prices -> book ticket"
RENOVATION_ARCHIVE = (
    "Home improvements in 2023: the kitchen was remodelled with new cabinets and tiles"
)

UNRELATED_TURNS = [
    ("Can you suggest a pasta recipe?", "Try spaghetti aglio e olio"),
    ("Fix this Python traceback", "The list index is out of range"),
    ("Will it rain tomorrow in Lisbon?", "Expect light showers"),
    ("Recommend a sci-fi novel", "Try The Left Hand of Darkness"),
    ("Convert 5 miles to km", "About 8 kilometres"),
    ("Write a haiku about autumn", "Leaves drift on cold wind"),
    ("How do I reset my router?", "Hold the reset button for ten seconds"),
]


@dataclass
class Engine:
    embedder: LocalMiniLMEmbedder
    memory: InMemoryMemoryStore = field(default_factory=InMemoryMemoryStore)
    transcripts: InMemoryTranscriptStore = field(default_factory=InMemoryTranscriptStore)
    working: InMemoryWorkingStore = field(default_factory=InMemoryWorkingStore)
    patterns: InMemoryPatternStore = field(default_factory=InMemoryPatternStore)
    archives: InMemoryArchiveStore = field(default_factory=InMemoryArchiveStore)
    stored_texts: list[str] = field(default_factory=list)
    """Every text stored anywhere, for the reference's substring test."""

    def search_engine(self, **kw: Any) -> MemorySearch:
        """A `MemorySearch` over the stores with a fresh query cache."""
        return MemorySearch(
            transcripts=self.transcripts,
            working=self.working,
            patterns=self.patterns,
            archives=self.archives,
            index=ExactVectorIndex(self.memory),
            embedder=self.embedder,
            cache=InMemoryQueryCache(),
            **kw,
        )

    async def turn(
        self, user_msg: str, assistant_msg: str, at: datetime, *, turn_id: str, **scope: Any
    ) -> str:
        body = {
            "agentWallet": AGENT,
            "userAddress": "U1",
            "threadId": "T1",
            **scope,
            "turnId": turn_id,
            "userMessage": user_msg,
            "assistantMessage": assistant_msg,
        }
        stored = await TurnRecorder(
            self.transcripts, self.working, self.memory, self.embedder
        ).record(turn_recorded(body, now=at))
        self.stored_texts += [
            user_msg,
            assistant_msg,
            f"user: {user_msg}\nassistant: {assistant_msg}",
        ]
        return stored.vector_id

    async def fact(self, content: str, at: datetime, **scope: Any) -> str:
        body = {"agentWallet": AGENT, "userAddress": "U1", **scope, "content": content}
        stored = await Rememberer(self.memory, self.embedder).remember(
            memory_remembered(body, now=at)
        )
        self.stored_texts.append(content)
        return stored.vector_id

    async def pattern(
        self,
        pattern_id: str,
        summary: str,
        *,
        user: str | None = "U1",
        agent: str = AGENT,
        steps: Sequence[str] = (),
    ) -> None:
        [embedding] = await self.embedder.embed([summary], "document")
        await self.patterns.upsert(
            PatternRecord(
                pattern_id=pattern_id,
                scope=ScopeFields(agent, user, thread_id=None, mode=None, hai_id=None),
                pattern_type="tool_sequence",
                trigger_type="tool_sequence",
                trigger_value="",
                steps=list(steps),
                summary=summary,
                success_rate=0.9,
                execution_count=12,
                last_executed=NOW_MS - 3 * 86_400_000,
                created_at=NOW_MS - 60 * 86_400_000,
                embedding=embedding,
                embedding_model=self.embedder.model,
            )
        )
        self.stored_texts.append(summary)

    async def archive(
        self,
        archive_id: str,
        summary: str,
        *,
        user: str | None = "U1",
        agent: str = AGENT,
        topics: Sequence[str] = (),
    ) -> None:
        [embedding] = await self.embedder.embed([summary], "document")
        start, end = datetime(2023, 3, 1, tzinfo=UTC), datetime(2023, 6, 30, tzinfo=UTC)
        assert await self.archives.insert_if_absent(
            ArchiveRecord(
                archive_id=archive_id,
                scope=ScopeFields(agent, user, thread_id=None, mode=None, hai_id=None),
                summary=summary,
                topics=list(topics),
                entry_count=40,
                start=to_ms(start),
                end=to_ms(end),
                created_at=to_ms(end + DAY),
                embedding=embedding,
                embedding_model=self.embedder.model,
            )
        )
        self.stored_texts.append(summary)


def scope(**kw: Any) -> Scope:
    return Scope.parse({"agentWallet": AGENT, "userAddress": "U1", "threadId": "T1", **kw})


async def hits_of(
    search: MemorySearch, query: str, layers: list[str], limit: int = 5, **kw: Any
) -> dict[str, list[Hit]]:
    return (await search.search(scope(**kw), query, layers, limit, NOW_MS)).hits


def reference_match(query: str, text: str) -> bool:
    """The reference's "match": the whole query, case-insensitively, as a substring."""
    return query.lower() in text.lower()


# --- the world of the paraphrase tests ---------------------------------------------------------


@pytest.fixture
async def world(minilm: LocalMiniLMEmbedder) -> Engine:
    e = Engine(minilm)
    # working: thread T1, the dog turn is the newest
    for i, (u, a) in enumerate(UNRELATED_TURNS[:2]):
        await e.turn(u, a, NOW - (3 - i) * DAY, turn_id=f"t1-{i}", threadId="T1")
    await e.turn(
        DOG_LINE,
        "Congratulations on the new family member!",
        NOW - timedelta(hours=3),
        turn_id="t1-dog",
        threadId="T1",
    )
    # scene: thread T2, the Clara turn is followed by 14 more lines (the buffer keeps 12)
    await e.turn(
        CLARA_LINE,
        "That must be a demanding job",
        NOW - 20 * DAY,
        turn_id="t2-clara",
        threadId="T2",
    )
    for i, (u, a) in enumerate(UNRELATED_TURNS):
        await e.turn(u, a, NOW - (19 - i) * DAY, turn_id=f"t2-{i}", threadId="T2")
    # vectors: thread T3
    await e.turn(
        VIOLIN_LINE,
        "Wonderful, music lessons are great for children",
        NOW - 5 * DAY,
        turn_id="t3-violin",
        threadId="T3",
    )
    # graph: remembered facts
    for i, content in enumerate(
        [
            CAR_FACT,
            "I am allergic to peanuts",
            "I work as a nurse at the city hospital",
            "My favourite cuisine is Thai curry",
        ]
    ):
        await e.fact(content, NOW - timedelta(hours=6 + i))
    # patterns and archives
    await e.pattern(
        "p-travel", TRAVEL_PATTERN, steps=["search flights", "compare prices", "book ticket"]
    )
    await e.pattern(
        "p-expenses",
        "Expense report: collect receipts -> fill form -> submit to finance",
        user=None,
    )
    await e.pattern("p-review", "Weekly review: export metrics -> write summary -> email team")
    await e.archive("a-home", RENOVATION_ARCHIVE, topics=["kitchen", "cabinets"])
    await e.archive("a-work", "Q3 2023 work log: migrated the billing service to Postgres")
    await e.archive("a-garden", "Garden work in 2023: planted apple trees and built a shed")
    return e


@dataclass(frozen=True)
class Paraphrase:
    layer: str
    query: str
    stored: str
    thread: str = "T1"


PARAPHRASES = [
    Paraphrase("working", "what is the name of our dog?", DOG_LINE),
    Paraphrase("scene", "which relative is a heart doctor?", CLARA_LINE, thread="T2"),
    Paraphrase("graph", "what vehicle do we drive?", CAR_FACT),
    Paraphrase("patterns", "how do I usually arrange travel?", TRAVEL_PATTERN),
    Paraphrase("archives", "what did we do to the house last year?", RENOVATION_ARCHIVE),
    Paraphrase("vectors", "when does my kid begin learning an instrument?", VIOLIN_LINE),
]


@pytest.mark.parametrize("case", PARAPHRASES, ids=[c.layer for c in PARAPHRASES])
async def test_each_layer_finds_a_paraphrase_sharing_no_content_word_fixes_16_10(
    world: Engine, case: Paraphrase
) -> None:
    hits = (await hits_of(world.search_engine(), case.query, [case.layer], threadId=case.thread))[
        case.layer
    ]

    assert hits, f"{case.layer} found nothing for {case.query!r}"
    top = hits[0]
    assert case.stored in top.text
    # found by meaning only: no content term in common, so the lexical part is zero
    assert set(terms(case.query)).isdisjoint(all_terms(top.text))
    assert top.score is not None
    assert 0.0 < top.score <= 0.7 + 1e-9
    # and the reference would have returned nothing at all from any stored text
    assert not any(reference_match(case.query, t) for t in world.stored_texts)


async def test_the_paraphrases_are_found_through_layer_search_too(world: Engine) -> None:
    search = world.search_engine()
    found: dict[str, list[dict[str, Any]]] = {}
    for case in PARAPHRASES:
        request = LayerSearchRequest(
            scope=scope(threadId=case.thread), query=case.query, layers=[case.layer], limit=3
        )
        found[case.layer] = (await search.layer_search(request, NOW_MS)).layers[case.layer]

    assert found["working"][0]["sessionId"] == f"session:global:{AGENT}:T1"
    assert f"user: {DOG_LINE}" in found["working"][0]["context"]
    assert found["scene"][0]["turnId"] == "t2-clara"
    assert found["graph"][0]["content"] == CAR_FACT
    assert found["patterns"][0]["patternId"] == "p-travel"
    assert found["archives"][0]["archiveId"] == "a-home"
    assert found["vectors"][0]["source"] == "session"
    assert VIOLIN_LINE in found["vectors"][0]["content"]


async def test_scene_returns_the_matching_turn_older_than_the_working_buffer(world: Engine) -> None:
    query = "which relative is a heart doctor?"
    hits = await hits_of(world.search_engine(), query, ["scene", "working"], threadId="T2")

    [buffer] = await world.working.recent(TenantFilter(AGENT, "U1", thread_id="T2"), limit=1)
    assert len(buffer.lines) == 12
    assert not any("Clara" in line for line in buffer.lines)  # pushed out of working memory
    assert hits["working"] == []
    top = hits["scene"][0]
    assert top.id == f"{thread_session_id(scope(threadId='T2'))}#t2-clara"
    assert top.text == f"user: {CLARA_LINE}\nassistant: That must be a demanding job"
    assert top.raw["turnId"] == "t2-clara"
    assert top.created_at == to_ms(NOW - 20 * DAY) + 1  # the turn's own (assistant) time


async def test_thread_layers_do_not_answer_from_another_thread(world: Engine) -> None:
    hits = await hits_of(
        world.search_engine(),
        "which relative is a heart doctor?",
        ["scene", "working", "vectors"],
        threadId="T1",
    )
    assert all("Clara" not in h.text for h in hits["scene"] + hits["working"])
    assert any(CLARA_LINE in h.text for h in hits["vectors"])  # durable: every thread


async def test_a_query_without_a_thread_gets_no_working_hits_issue_16(world: Engine) -> None:
    # the working buffer is one thread's current conversation; user-wide, every thread's
    # recent small talk outranked the relevant memories and filled the budget
    search = world.search_engine()
    query = "what is the name of our dog?"
    unthreaded = Scope.parse({"agentWallet": AGENT, "userAddress": "U1"})
    hits = (await search.search(unthreaded, query, ["working", "vectors"], 5, NOW_MS)).hits
    assert hits["working"] == []
    assert any(DOG_LINE in h.text for h in hits["vectors"])
    threaded = await hits_of(search, query, ["working"], threadId="T1")
    assert any(DOG_LINE in h.text for h in threaded["working"])


async def test_a_working_hit_is_scored_on_the_lines_it_shows_issue_16(
    minilm: LocalMiniLMEmbedder,
) -> None:
    e = Engine(minilm)
    query = "what is the name of our dog?"
    await e.turn(DOG_LINE, "Congratulations!", NOW - 2 * DAY, turn_id="w-dog", threadId="T9")
    [shown] = (await hits_of(e.search_engine(), query, ["working"], threadId="T9"))["working"]
    assert shown.score is not None
    for i, (u, a) in enumerate(UNRELATED_TURNS[:4]):  # the dog turn leaves the shown lines
        await e.turn(u, a, NOW - DAY + timedelta(minutes=i), turn_id=f"w-{i}", threadId="T9")
    [buffer] = await e.working.recent(TenantFilter(AGENT, "U1", thread_id="T9"), limit=1)
    assert any("greyhound" in line.lower() for line in buffer.lines[5:])
    hits = await hits_of(e.search_engine(), query, ["working"], threadId="T9")
    for h in hits["working"]:  # the newest lines, judged on themselves, not on the dog turn
        assert "greyhound" not in h.text.lower()
        assert h.score is not None
        assert h.score < shown.score - 0.1


# --- patterns and archives scope -----------------------------------------------------------------

TRAVEL_QUERY = "how do I usually arrange travel?"


@pytest.fixture
async def procedural(minilm: LocalMiniLMEmbedder) -> Engine:
    e = Engine(minilm)
    await e.pattern("p-u1", TRAVEL_PATTERN, user="U1")
    await e.pattern(
        "p-agent", "Journey planning: check train times -> buy rail pass -> book seat", user=None
    )
    await e.pattern(
        "p-u2", "Vacation planning: search flights -> compare hotels -> book package", user="U2"
    )
    await e.pattern("p-other-agent", TRAVEL_PATTERN, user=None, agent="0xOther")
    await e.archive("a-u1", RENOVATION_ARCHIVE, user="U1")
    await e.archive("a-u2", RENOVATION_ARCHIVE, user="U2")
    await e.archive("a-agent", RENOVATION_ARCHIVE, user=None)
    await e.archive("a-other-agent", RENOVATION_ARCHIVE, user="U1", agent="0xOther")
    return e


async def pattern_ids(e: Engine, **kw: Any) -> set[str]:
    hits = await hits_of(e.search_engine(), TRAVEL_QUERY, ["patterns"], **kw)
    return {h.id for h in hits["patterns"]}


async def test_a_user_sees_own_and_agent_wide_patterns_never_another_users_fixes_16_12(
    procedural: Engine,
) -> None:
    assert await pattern_ids(procedural) == {"p-u1", "p-agent"}
    assert await pattern_ids(procedural, userAddress="U2") == {"p-u2", "p-agent"}


async def test_a_user_less_scope_sees_only_agent_wide_patterns_fixes_16_12(
    procedural: Engine,
) -> None:
    body = {"agentWallet": AGENT, "threadId": "T1"}
    hits = await procedural.search_engine().search(
        Scope.parse(body), TRAVEL_QUERY, ["patterns"], 5, NOW_MS
    )
    assert {h.id for h in hits.hits["patterns"]} == {"p-agent"}
    assert await pattern_ids(procedural, agentWallet="0xOther") == {"p-other-agent"}


async def test_archives_carry_their_scope_and_honour_it(procedural: Engine) -> None:
    query = "what did we do to the house last year?"

    async def archive_ids(body: dict[str, Any]) -> set[str]:
        reply = await procedural.search_engine().search(
            Scope.parse({"threadId": "T1", **body}), query, ["archives"], 5, NOW_MS
        )
        return {h.id for h in reply.hits["archives"]}

    assert await archive_ids({"agentWallet": AGENT, "userAddress": "U1"}) == {"a-u1"}
    assert await archive_ids({"agentWallet": AGENT, "userAddress": "U2"}) == {"a-u2"}
    assert await archive_ids({"agentWallet": AGENT}) == {"a-agent"}
    assert await archive_ids({"agentWallet": "0xOther", "userAddress": "U1"}) == {"a-other-agent"}
    assert await archive_ids({"agentWallet": "0xOther", "userAddress": "U2"}) == set()


# --- the double-ranking rule -------------------------------------------------------------------

DOG_QUERY = "what is the name of our dog?"


async def test_with_graph_and_vectors_vectors_keep_raw_order_and_graph_is_decayed(
    minilm: LocalMiniLMEmbedder,
) -> None:
    e = Engine(minilm)
    old = await e.fact("Our dog is a greyhound named Juniper", NOW - 90 * DAY)  # more relevant
    fresh = await e.fact("Our greyhound Juniper turned three", NOW - timedelta(hours=1))

    both = await hits_of(e.search_engine(), DOG_QUERY, ["graph", "vectors"])

    vectors = both["vectors"]
    assert [h.id for h in vectors] == [old, fresh]  # raw relevance: decay ignored
    assert [h.score for h in vectors] == [h.raw["score"] for h in vectors]
    graph = {h.id: h.score or 0.0 for h in both["graph"]}
    assert [h.id for h in both["graph"]] == [fresh, old]  # decayed
    assert graph[old] < graph[fresh]
    raw_old = vectors[0].score or 0.0
    # 90 days = 3 half-lives; MMR may lower the near-duplicate further, never raise it
    assert graph[old] <= raw_old * 0.125 + 1e-9

    alone = await hits_of(e.search_engine(), DOG_QUERY, ["vectors"])
    assert [h.id for h in alone["vectors"]] == [fresh, old]  # without graph, vectors are ranked


async def test_an_old_fact_scores_lower_than_a_fresh_equally_relevant_one(
    minilm: LocalMiniLMEmbedder,
) -> None:
    e = Engine(minilm)
    # the same words (fact hashes differ by the inner double space), so the same relevance
    old = await e.fact("Our dog is a greyhound named Juniper", NOW - 30 * DAY)
    fresh = await e.fact("Our dog is a greyhound  named Juniper", NOW - timedelta(minutes=5))

    both = await hits_of(e.search_engine(), DOG_QUERY, ["graph", "vectors"])

    vectors = {h.id: h.score for h in both["vectors"]}
    assert vectors[old] == pytest.approx(vectors[fresh])
    assert [h.id for h in both["graph"]] == [fresh, old]
    graph = {h.id: h.score or 0.0 for h in both["graph"]}
    assert graph[old] <= graph[fresh] * 0.5 * (1 + 1e-3)  # one half-life (MMR: lower still)


# --- MMR ---------------------------------------------------------------------------------------

PET_QUERY = "what pets do we have?"
DUPLICATES = ["Our dog is a greyhound named Juniper", "Our dog is a greyhound called Juniper"]
DISTINCT = "We also keep a tabby cat named Miso"


async def test_mmr_keeps_the_distinct_fact_in_a_limit_2_result_fixes_16_7(
    minilm: LocalMiniLMEmbedder,
) -> None:
    e = Engine(minilm)
    at = NOW - timedelta(hours=1)
    dup_ids = {await e.fact(text, at) for text in DUPLICATES}
    distinct = await e.fact(DISTINCT, at)
    await e.fact("We feed the birds in the garden every winter", at)  # a weaker, other hit

    both = await hits_of(e.search_engine(), PET_QUERY, ["graph", "vectors"], limit=2)

    # the raw order (vectors, undiversified) would keep the two near-duplicates…
    assert {h.id for h in both["vectors"]} == dup_ids
    # …while the graph layer's MMR order survives the final sort and keeps the distinct fact
    graph = both["graph"]
    assert len(graph) == 2
    assert distinct in {h.id for h in graph}
    assert len(dup_ids & {h.id for h in graph}) == 1
    assert graph[0].score is not None
    assert graph[1].score is not None
    assert graph[0].score >= graph[1].score


async def test_mmr_keeps_the_distinct_one_of_exactly_three_facts_fixes_16_7(
    minilm: LocalMiniLMEmbedder,
) -> None:
    e = Engine(minilm)
    at = NOW - timedelta(hours=1)
    for text in DUPLICATES:
        await e.fact(text, at)
    distinct = await e.fact(DISTINCT, at)

    graph = (await hits_of(e.search_engine(), PET_QUERY, ["graph"], limit=2))["graph"]

    assert distinct in {h.id for h in graph}


# --- rerank ------------------------------------------------------------------------------------


class EqualReranker:
    """A reranker that finds every candidate equally relevant."""

    name = "equal"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    async def rerank(self, query: str, documents: Sequence[tuple[str, str]]) -> dict[str, float]:
        self.calls.append([doc_id for doc_id, _ in documents])
        return {doc_id: 0.8 for doc_id, _ in documents}


class FailingReranker:
    name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    async def rerank(self, query: str, documents: Sequence[tuple[str, str]]) -> dict[str, float]:
        self.calls += 1
        raise DependencyFailed("reranker timed out")


@dataclass
class RerankWorld:
    engine: Engine
    old: str
    fresh: str
    third: str


@pytest.fixture
async def rerank_world(minilm: LocalMiniLMEmbedder) -> RerankWorld:
    e = Engine(minilm)
    old = await e.fact("We adopted a greyhound called Juniper", NOW - 2 * DAY)  # more relevant
    fresh = await e.fact("Juniper the greyhound loves squeaky toys", NOW - timedelta(minutes=1))
    third = await e.fact("Our greyhound Juniper turned three", NOW - 10 * DAY)
    return RerankWorld(e, old, fresh, third)


async def test_equal_rerank_scores_let_the_fresher_hit_win_fixes_16_17(
    rerank_world: RerankWorld,
) -> None:
    w = rerank_world
    decayed = (await hits_of(w.engine.search_engine(), DOG_QUERY, ["graph"], limit=3))["graph"]
    # precondition: without a reranker the older, more relevant fact still leads after decay
    assert [h.id for h in decayed][:2] == [w.old, w.fresh]

    reranker = EqualReranker()
    reranked = (
        await hits_of(w.engine.search_engine(reranker=reranker), DOG_QUERY, ["graph"], limit=3)
    )["graph"]

    assert len(reranker.calls) == 1
    assert sorted(reranker.calls[0]) == sorted([w.old, w.fresh, w.third])
    assert reranked[0].id == w.fresh  # equal relevance: decay decides, it is not erased
    assert {h.id for h in reranked} == {w.old, w.fresh, w.third}


async def test_a_failing_reranker_leaves_the_decayed_order_unchanged(
    rerank_world: RerankWorld,
) -> None:
    w = rerank_world
    decayed = (await hits_of(w.engine.search_engine(), DOG_QUERY, ["graph"], limit=3))["graph"]

    reranker = FailingReranker()
    failed = (
        await hits_of(w.engine.search_engine(reranker=reranker), DOG_QUERY, ["graph"], limit=3)
    )["graph"]

    assert reranker.calls == 1
    assert [(h.id, h.score) for h in failed] == [(h.id, h.score) for h in decayed]


async def test_a_reranker_is_not_asked_about_the_vectors_layer_when_graph_is_requested(
    rerank_world: RerankWorld,
) -> None:
    w = rerank_world
    reranker = EqualReranker()
    search = w.engine.search_engine(reranker=reranker)

    both = await hits_of(search, DOG_QUERY, ["graph", "vectors"], limit=3)

    assert len(reranker.calls) == 1  # graph only
    assert next(h.id for h in both["vectors"]) == w.old  # vectors: raw relevance order
