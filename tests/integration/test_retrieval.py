"""Retrieval on the real stack (MongoDB-wire server + Redis, local MiniLM embedder), in
process: every layer answers a paraphrased question, tenants never see each other, and an
HTTP reranker reorders results while a dead one leaves the decayed order."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.mongo import MongoArchiveStore, MongoPatternStore
from engine.errors import InputRejected
from engine.records import ArchiveRecord, PatternRecord, ScopeFields
from schemas.inputs import context_request, memory_remembered, turn_recorded
from schemas.requests import LayerSearchRequest
from services.endpoints import Endpoints
from services.runtime import Runtime, open_runtime
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

AGENT = "0xRetrievalAgent"
USER = "ursula"


@pytest.fixture
async def rt(stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any) -> AsyncIterator[Runtime]:
    # the recorder embeds before it writes (no embeddings group runs here)
    settings = make_settings(stack, unique("retrieval"), embedding_deferred=False)
    async with open_runtime(settings, minilm) as runtime:
        yield runtime
        await runtime.mongo.drop_database(settings.mongo.db)


async def turn(
    rt: Runtime,
    now: datetime,
    days_ago: float,
    user: str | None,
    thread: str,
    said: str,
    answer: str = "Noted.",
) -> None:
    body: dict[str, Any] = {
        "agentWallet": AGENT,
        "threadId": thread,
        "userMessage": said,
        "assistantMessage": answer,
    }
    if user:
        body["userAddress"] = user
    await rt.recorder.record(turn_recorded(body, now=now - timedelta(days=days_ago)))


async def seed_everything(rt: Runtime, minilm: LocalMiniLMEmbedder, now: datetime) -> None:
    """One memory per layer, said relative to `now`."""
    now_ms = int(now.timestamp() * 1000)
    await turn(rt, now, 3, USER, "home", "We adopted a greyhound called Juniper last spring.")
    for i in range(8):  # push the greyhound out of the 12-line working buffer
        await turn(rt, now, 2, USER, "home", f"Reminder number {i} about the groceries list.")
    await turn(rt, now, 0, USER, "home", "My knee has been hurting since the marathon.")
    await rt.rememberer.remember(
        memory_remembered(
            {
                "agentWallet": AGENT,
                "userAddress": USER,
                "content": "Ursula is allergic to peanuts.",
                "type": "identity",
            },
            now=now - timedelta(days=1),
        )
    )
    db = rt.mongo[rt.settings.mongo.db]
    summary = "search flights -> compare fares -> book ticket"
    [pattern_vec, archive_vec] = await minilm.embed(
        [summary, "Kitchen renovation: new cabinets, tiles and a bigger oven."], "document"
    )
    await MongoPatternStore(db).upsert(
        PatternRecord(
            pattern_id="pat_travel",
            scope=ScopeFields(AGENT, USER, None, None, None),
            pattern_type="tool_sequence",
            trigger_type="context",
            trigger_value="search_flights",
            steps=["search_flights", "compare_fares", "book_ticket"],
            summary=summary,
            success_rate=0.9,
            execution_count=6,
            last_executed=now_ms - 86_400_000,
            created_at=now_ms - 9 * 86_400_000,
            embedding=pattern_vec,
            embedding_model=minilm.model,
        )
    )
    await MongoArchiveStore(db).insert_if_absent(
        ArchiveRecord(
            archive_id="arc_kitchen",
            scope=ScopeFields(AGENT, USER, None, None, None),
            summary="Kitchen renovation: new cabinets, tiles and a bigger oven.",
            topics=["kitchen", "renovation"],
            entry_count=14,
            start=now_ms - 400 * 86_400_000,
            end=now_ms - 300 * 86_400_000,
            created_at=now_ms - 290 * 86_400_000,
            embedding=archive_vec,
            embedding_model=minilm.model,
        )
    )


PARAPHRASES = {
    # layer: (question sharing no content word with what was stored, text the hit must hold)
    "working": ("Why does my leg ache?", "knee"),
    "scene": ("What is the name of our dog?", "Juniper"),
    "graph": ("Which nuts should I avoid eating?", "peanuts"),
    "patterns": ("How do I usually arrange air travel?", "book_ticket"),
    "archives": ("What did we change in the cooking area of the house?", "Kitchen"),
    "vectors": ("What is the name of our dog?", "Juniper"),
}


@pytest.mark.parametrize("layer", list(PARAPHRASES))
async def test_each_layer_answers_a_paraphrased_question(
    rt: Runtime, minilm: LocalMiniLMEmbedder, layer: str, now: datetime, now_ms: int
) -> None:
    await seed_everything(rt, minilm, now)
    question, expected = PARAPHRASES[layer]
    scope = {"agentWallet": AGENT, "userAddress": USER, "threadId": "home"}
    reply = await rt.search.layer_search(
        LayerSearchRequest.model_validate({"scope": scope, "query": question, "layers": [layer]}),
        now_ms,
    )
    hits = reply.layers[layer]
    assert hits, f"{layer} found nothing for {question!r}"
    assert expected in json.dumps(hits[0]), hits[0]
    # the reference's whole-query substring test would have found nothing (§16.10)
    assert question.lower() not in json.dumps(hits).lower()


async def test_the_packed_context_combines_layers_within_the_budget(
    rt: Runtime, minilm: LocalMiniLMEmbedder, now: datetime, now_ms: int
) -> None:
    await seed_everything(rt, minilm, now)
    reply = await rt.search.context(
        context_request(
            {
                "agentWallet": AGENT,
                "userAddress": USER,
                "threadId": "home",
                "query": "What is the name of our dog?",
                "budget": {"maxCharacters": 600},
            }
        ),
        now_ms,
    )
    assert reply.prompt is not None
    assert "Juniper" in reply.prompt
    assert len(reply.prompt) <= 600
    assert set(reply.totals) == set(PARAPHRASES)


async def test_an_operator_filter_is_rejected_with_a_clear_error(rt: Runtime, now_ms: int) -> None:
    request = context_request(
        {
            "agentWallet": AGENT,
            "userAddress": USER,
            "query": "dog",
            "filters": {"userAddress": {"$ne": None}},
        }
    )
    with pytest.raises(InputRejected, match="userAddress"):
        await rt.search.context(request, now_ms)


# --- tenancy ------------------------------------------------------------------------------

AGENTS = ["0xA", "0xB"]
USERS = [None, "u1", "u2"]
THREADS = ["t1", "t2"]
FACTS = ["likes jazz", "owns a red bicycle", "is learning Japanese", "moved to Porto"]


@pytest.fixture
async def tenants_rt(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any, now: datetime
) -> AsyncIterator[Runtime]:
    """Seeded once per test (hypothesis reuses it across its examples: reads only)."""
    name = unique("tenancy")
    async with open_runtime(make_settings(stack, name), minilm) as runtime:
        for agent in AGENTS:
            for user in USERS:
                for thread in THREADS:
                    for fact in FACTS:
                        body: dict[str, Any] = {
                            "agentWallet": agent,
                            "threadId": thread,
                            "userMessage": f"{agent}/{user}/{thread} {fact}",
                            "assistantMessage": "ok",
                        }
                        if user:
                            body["userAddress"] = user
                        await runtime.recorder.record(turn_recorded(body, now=now))
                        await runtime.rememberer.remember(
                            memory_remembered(
                                {**body, "content": f"{agent}/{user} {fact}"}, now=now
                            )
                        )
        yield runtime
        await runtime.mongo.drop_database(name)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    agent=st.sampled_from(AGENTS),
    user=st.sampled_from(USERS),
    thread=st.sampled_from([None, *THREADS]),
    query=st.sampled_from(FACTS),
)
async def test_no_query_returns_another_tenants_memory(
    tenants_rt: Runtime, agent: str, user: str | None, thread: str | None, query: str, now_ms: int
) -> None:
    body: dict[str, Any] = {"agentWallet": agent, "query": query, "includeRaw": True}
    if user:
        body["userAddress"] = user
    if thread:
        body["threadId"] = thread
    reply = await tenants_rt.search.context(context_request(body), now_ms)
    assert reply.raw is not None
    for layer, items in reply.raw.items():
        for item in items:
            text = json.dumps(item)
            owner = f"{agent}/{user}"
            assert owner in text, (layer, item)
            for other_agent in AGENTS:
                for other_user in USERS:
                    if (other_agent, other_user) != (agent, user):
                        assert f"{other_agent}/{other_user} " not in text, (layer, item)
    for item in reply.items:
        assert f"{agent}/{user}" in item.text


# --- reranker ----------------------------------------------------------------------------


class _Reverse(BaseHTTPRequestHandler):
    """A Cohere-style /rerank that scores documents in reverse order of appearance."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        n = len(body["documents"])
        results = [{"index": i, "relevance_score": (i + 1) / n} for i in range(n)]
        payload = json.dumps({"results": results}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def reranker_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Reverse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/rerank"
    server.shutdown()
    server.server_close()


async def _graph_order(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, db: str, now: datetime, **extra: Any
) -> list[str]:
    now_ms = int(now.timestamp() * 1000)
    async with open_runtime(make_settings(stack, db, **extra), minilm) as runtime:
        for i, fact in enumerate(
            [
                "Vera plays the cello in an orchestra.",
                "Vera plays the violin at weddings.",
                "Vera plays the piano at home.",
                "Vera plays the guitar on Sundays.",
            ]
        ):
            await runtime.rememberer.remember(
                memory_remembered(
                    {"agentWallet": AGENT, "userAddress": "vera", "content": fact},
                    now=now - timedelta(days=i),
                )
            )
        reply = await runtime.search.layer_search(
            LayerSearchRequest.model_validate(
                {
                    "scope": {"agentWallet": AGENT, "userAddress": "vera"},
                    "query": "Which instruments does Vera play?",
                    "layers": ["graph"],
                }
            ),
            now_ms,
        )
        await runtime.mongo.drop_database(db)
    return [hit["content"] for hit in reply.layers["graph"]]


async def test_a_local_http_reranker_reorders_and_a_dead_one_keeps_the_decayed_order(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, reranker_url: str, unique: Any, now: datetime
) -> None:
    plain = await _graph_order(stack, minilm, unique("plain"), now)
    reranked = await _graph_order(
        stack,
        minilm,
        unique("rr"),
        now,
        rerank_provider="http",
        rerank_url=reranker_url,
        rerank_dominance_delta=1.0,
        mmr_lambda=1.0,
    )
    dead = await _graph_order(
        stack,
        minilm,
        unique("dead"),
        now,
        rerank_provider="http",
        rerank_url="http://127.0.0.1:9/v1/rerank",
        rerank_dominance_delta=1.0,
        rerank_timeout_seconds=0.5,
    )
    assert len(plain) >= 3
    assert reranked != plain  # the provider's order won
    assert dead == plain  # fail-soft: the decayed (and MMR'd) order
