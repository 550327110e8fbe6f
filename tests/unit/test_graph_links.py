"""Issue 32: a graph that generalises. Turns go through the real extraction step (the rule
extractor, then the untyped links) and the fact writer into in-memory stores; the graph
layer alone must then answer a question whose answer sits one or two links from the user,
in wordings no rule enumerates. The cases were written before running the link finder on
them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.memory import (
    InMemoryArchiveStore,
    InMemoryMemoryStore,
    InMemoryPatternStore,
    InMemoryQueryCache,
    InMemoryRelationStore,
    InMemoryTranscriptStore,
    InMemoryWorkingStore,
)
from engine.ingest.extraction.links import find_links
from engine.ingest.extraction.rules import RuleBasedExtractor, extract_sync
from engine.ingest.extraction.turns import extract_turn
from engine.ingest.extraction.types import ExtractionPolicy, TurnText
from engine.ingest.facts import FactWriter, entity_id
from engine.records import RelationRecord, ScopeFields
from engine.retrieval.hits import Hit
from engine.retrieval.layers.graph import hydrate
from engine.retrieval.search import MemorySearch
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter
from schemas.ids import to_ms
from schemas.inputs import turn_recorded
from schemas.scope import Scope

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


async def _graph_answer(
    minilm: LocalMiniLMEmbedder, said: list[str], question: str, user: str
) -> str:
    """What the graph layer alone shows for `question` after the user said `said`, one
    turn a day, each in its own thread."""
    memory, relations = InMemoryMemoryStore(), InMemoryRelationStore()
    writer = FactWriter(memory, relations, minilm)
    for i, text in enumerate(said):
        body = {
            "agentWallet": "0xLinks",
            "userAddress": user,
            "threadId": f"t{i}",
            "userMessage": text,
            "assistantMessage": "Noted.",
        }
        event = turn_recorded(body, now=NOW - timedelta(days=len(said) - i))
        found = await extract_turn(event, RuleBasedExtractor(), ExtractionPolicy())
        if found is not None:
            await writer.store(found)
    search = MemorySearch(
        transcripts=InMemoryTranscriptStore(),
        working=InMemoryWorkingStore(),
        patterns=InMemoryPatternStore(),
        archives=InMemoryArchiveStore(),
        index=ExactVectorIndex(memory),
        embedder=minilm,
        cache=InMemoryQueryCache(),
        relations=relations,
    )
    scope = Scope.parse({"agentWallet": "0xLinks", "userAddress": user, "threadId": "ask"})
    result = await search.search(scope, question, ["graph"], 5, to_ms(NOW))
    return "\n".join(h.text for h in result.hits.get("graph", []))


async def test_my_company_follows_the_user_to_initech_and_its_head_office(
    minilm: LocalMiniLMEmbedder,
) -> None:
    answer = await _graph_answer(
        minilm,
        [
            "These days I'm employed by Initech as an analyst.",
            "Initech's head office sits in Austin, Texas.",
        ],
        "Which city is my company located in?",
        "u-initech",
    )
    assert "Initech's head office sits in Austin, Texas." in answer


@pytest.mark.parametrize(
    ("said", "question", "evidence"),
    [
        (
            [
                "My partner Yusuf teaches maths at Brambleton Academy.",
                "Brambleton Academy moved its whole campus to Leeds last spring.",
            ],
            "In which town is the school where my partner teaches?",
            "Brambleton Academy moved its whole campus to Leeds last spring.",
        ),
        (
            [
                "Since January I've been climbing twice a week at Vertigo Works.",
                "Vertigo Works is run by a former Olympian, Petra Lind.",
            ],
            "Who runs the gym I go to?",
            "Vertigo Works is run by a former Olympian, Petra Lind.",
        ),
        (
            [
                "Our family doctor is Dr. Okafor, she's been great with the kids.",
                "Dr. Okafor's practice is on Wren Street in Galway.",
            ],
            "Where is our GP's practice?",
            "Dr. Okafor's practice is on Wren Street in Galway.",
        ),
    ],
    ids=["partner-school-town", "gym-owner", "doctor-practice"],
)
async def test_held_out_wordings_reach_the_second_hop(
    minilm: LocalMiniLMEmbedder, said: list[str], question: str, evidence: str
) -> None:
    answer = await _graph_answer(minilm, said, question, "u-" + question[:12])
    assert evidence in answer


def _relation(
    fields: ScopeFields, source: str, kind: str, target: str, said: str, at: int
) -> RelationRecord:
    source_id, target_id = entity_id(fields, source), entity_id(fields, target)
    return RelationRecord(
        relation_id=f"rel_{source}_{kind}_{target}",
        scope=fields,
        source_id=source_id,
        source_name=source,
        type=kind,
        target_id=target_id,
        target_name=target,
        created_at=at,
        metadata={"evidence": said} if said else {},
    )


async def test_hydration_shows_evidence_and_walks_a_second_hop_from_an_entity() -> None:
    """An entity hit shows the sentences of its untyped links, its step back to the user
    and its neighbours' links (not the user's other links), each sentence once."""
    fields = ScopeFields("0xH", "u1", None, None, None)
    store = InMemoryRelationStore()
    employed = "These days I'm employed by Initech as an analyst."
    office = "Initech's head office sits in Austin, Texas."
    weather = "Austin gets very hot in August, or so I hear."
    unrelated = "I am reading a novel by Zadie Smith."
    for i, r in enumerate(
        [
            _relation(fields, "user", "MENTIONS", "Initech", employed, 1),
            _relation(fields, "Initech", "RELATED", "Austin", office, 2),
            _relation(fields, "Initech", "RELATED", "Texas", office, 3),
            _relation(fields, "Austin", "RELATED", "August", weather, 4),
            _relation(fields, "user", "MENTIONS", "Zadie Smith", unrelated, 5),
        ]
    ):
        assert await store.insert_if_absent(r), i
    where = TenantFilter(agent_wallet="0xH", user_address="u1")
    hit = Hit(
        layer="graph",
        id=entity_id(fields, "Initech"),
        text="Initech (name)",
        source="entity",
        raw={"agentWallet": "0xH", "userAddress": "u1"},
    )
    [shown] = await hydrate(store, where, [hit])
    assert employed in shown.text  # the step back to the user
    assert shown.text.count(office) == 1  # two links, one sentence
    assert weather in shown.text  # the second hop: Initech → Austin → August
    assert unrelated not in shown.text  # never through the user node
    assert {"source": "Initech", "type": "RELATED", "target": "Austin", "evidence": office} in (
        shown.raw["relations"]
    )


def _links(messages: list[TurnText]) -> set[tuple[str, str, str]]:
    """Every relation of the turn (typed or untyped), each with its sentence as evidence."""
    found = find_links(messages, extract_sync(messages, ExtractionPolicy()))
    assert all(r.evidence for r in found.relations)
    return {(r.source, r.type, r.target) for r in found.relations}


def _joined(links: set[tuple[str, str, str]], a: str, b: str) -> bool:
    return any({s, t} == {a, b} for s, _, t in links)


def test_links_join_named_speakers_to_what_they_mention_and_skip_questions() -> None:
    links = _links(
        [
            TurnText("user", "Do you know if Orbis Bank has an office in Zurich?"),
            TurnText("assistant", "I moved to Tallinn to join Bolt last year.", "Kadri"),
            TurnText("assistant", "I think Tallinn is lovely in winter."),  # unnamed: not read
        ]
    )
    assert _joined(links, "Kadri", "Tallinn")
    assert ("Kadri", "MENTIONS", "Bolt") in links
    assert ("Tallinn", "RELATED", "Bolt") in links
    assert not any("Orbis Bank" in link or "Zurich" in link for link in links)
    assert not any(link[0] == "user" for link in links)
