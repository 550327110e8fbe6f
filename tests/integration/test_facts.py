"""Facts and the context graph on the real stack: extraction through an OpenAI-compatible
HTTP server, entities and relations recalled from another thread, failures retried or
dead-lettered, one row for a fact stored concurrently twice, contradictions over time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from aiokafka import AIOKafkaConsumer

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from schemas.events import FactItem, FactsExtracted
from schemas.inputs import context_request
from schemas.scope import Scope
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.runtime import Runtime, open_runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import start_at_end, wait_processed
from tests.support.pipeline import drained, subscriptions
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration


# --- an OpenAI-compatible chat-completions server ---------------------------------------


class _Chat(BaseHTTPRequestHandler):
    """Answers from the turn it is sent: a fixed extraction for the greyhound turn, garbage
    the first time for "flaky" turns, always garbage for "poison" turns, a slow reply for
    "slow" turns."""

    calls: ClassVar[dict[str, int]] = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        turn = body["messages"][-1]["content"]
        key = next((k for k in ("greyhound", "flaky", "poison", "slow") if k in turn), "other")
        _Chat.calls[key] = _Chat.calls.get(key, 0) + 1
        if key == "slow":
            time.sleep(3.0)
        if key == "poison" or (key == "flaky" and _Chat.calls[key] == 1):
            content = "I'm sorry, I can't produce JSON today."
        elif key == "greyhound":
            content = json.dumps(
                {
                    "facts": [
                        {
                            "fact": "The user has a greyhound named Juniper.",
                            "type": "relationship",
                            "confidence": 0.92,
                        },
                        {
                            "fact": "The user lives in Lisbon.",
                            "type": "identity",
                            "confidence": 0.9,
                            "slot": "residence",
                        },
                    ],
                    "entities": [
                        {"name": "Juniper", "type": "pet", "summary": "the user's greyhound"},
                        {"name": "Lisbon", "type": "place", "summary": "city in Portugal"},
                    ],
                    "relations": [
                        {"source": "Juniper", "type": "PET_OF", "target": "user"},
                        {"source": "user", "type": "LIVES_IN", "target": "Lisbon"},
                    ],
                }
            )
        elif key == "flaky":
            content = json.dumps(
                {
                    "facts": [
                        {"fact": "The user plays the cello.", "type": "skill", "confidence": 0.9}
                    ]
                }
            )
        else:
            content = json.dumps({"facts": []})
        payload = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": content}}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # client timed out
            self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def llm_url() -> Iterator[str]:
    _Chat.calls = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Chat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
async def pipeline(
    stack: Endpoints, llm_url: str, minilm: LocalMiniLMEmbedder, unique: Any
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    settings = make_settings(
        stack,
        unique("facts"),
        group_prefix=unique("facts-g"),
        extractor="llm",
        llm_base_url=llm_url,
        # room for a loaded CI machine (a timed-out extraction is dead-lettered, and the
        # recall test then waits for facts that never come); "slow" replies take 3 s
        llm_timeout_seconds=2.0,
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
        retry_backoff_ms=50,
        max_attempts=3,
    )
    # the topics are shared by the session's tests: start at their ends (see groups_running)
    await start_at_end(stack.kafka_bootstrap, subscriptions(settings.group_prefix, ["all"]))
    async with (
        running_groups(settings, ["all"], embedder=minilm, broker_logs=False) as rt,
        MemoryClient(
            stack.kafka_bootstrap, timeout=15, group_prefix=settings.group_prefix
        ) as client,
    ):
        yield rt, client
        await rt.mongo.drop_database(settings.mongo.db)


async def _stored(rt: Runtime, client: MemoryClient, group: str) -> None:
    pos = client.last_position
    assert pos is not None
    await wait_processed(
        rt.endpoints.kafka_bootstrap,
        rt.group_id(group),
        pos.topic,
        pos.partition,
        pos.offset,
        timeout=60,
    )


async def test_llm_facts_entities_and_relations_are_recalled_from_another_thread(
    pipeline: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = pipeline
    scope = {"agentWallet": "0xGraph", "userAddress": "gina"}
    turn = await client.record_turn(
        {
            **scope,
            "threadId": "pets",
            "userMessage": "Our greyhound Juniper loves Lisbon's parks.",
            "assistantMessage": "Juniper sounds lovely!",
        }
    )
    # the facts stored, their vectors filled and the query cache told: no polling needed
    await client.wait_processed(turn.turn_id, ["facts"], timeout=60)
    db = rt.mongo[rt.settings.mongo.db]
    stored = await db["memory"].count_documents({"userAddress": "gina", "source": "fact"})
    assert stored == 2, f"extraction calls {_Chat.calls}: {stored} facts stored"
    reply = await client.context(
        "Tell me about my dog Juniper", {**scope, "threadId": "work"}, layers=["graph"]
    )
    assert reply.prompt is not None
    assert "The user has a greyhound named Juniper." in reply.prompt
    assert "Juniper PET_OF the user" in reply.prompt  # hydrated neighbourhood
    assert await db["memory"].count_documents({"userAddress": "gina", "source": "entity"}) == 2
    typed = {"userAddress": "gina", "type": {"$nin": ["MENTIONS", "RELATED"]}}
    assert await db["relations"].count_documents(typed) == 2
    # the untyped links run after the LLM too (issue 32), with the sentence as evidence
    link = await db["relations"].find_one({"userAddress": "gina", "type": "RELATED"})
    assert link is not None
    assert {link["sourceName"], link["targetName"]} == {"Juniper", "Lisbon"}
    assert link["metadata"]["evidence"] == "Our greyhound Juniper loves Lisbon's parks."
    fact = await db["memory"].find_one({"userAddress": "gina", "metadata.slot": "residence"})
    assert fact is not None
    assert fact["metadata"]["extractor"] == "llm:gpt-4o-mini"


async def test_a_malformed_reply_is_retried_and_a_poison_turn_is_dead_lettered(
    pipeline: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = pipeline
    scope = {"agentWallet": "0xGraph", "userAddress": "fred", "threadId": "music"}
    await client.record_turn(
        {
            **scope,
            "userMessage": "flaky: I play the cello every evening.",
            "assistantMessage": "Wonderful.",
        }
    )
    await _stored(rt, client, "extraction")
    poison = await client.record_turn(
        {**scope, "userMessage": "poison: hello there", "assistantMessage": "hi"}
    )
    poison_pos = client.last_position
    await client.record_turn(
        {**scope, "userMessage": "slow: what a day", "assistantMessage": "indeed"}
    )
    await _stored(rt, client, "extraction")  # the partition moved past both
    assert _Chat.calls["flaky"] == 2  # failed once, retried, stored
    assert _Chat.calls["poison"] == 3
    assert _Chat.calls["slow"] == 3
    db = rt.mongo[rt.settings.mongo.db]
    deadline = time.monotonic() + 30
    while not await db["memory"].count_documents({"content": "The user plays the cello."}):
        assert time.monotonic() < deadline, "the retried extraction was not stored"
        await asyncio.sleep(0.1)

    consumer = AIOKafkaConsumer(
        topics.DLQ,
        bootstrap_servers=rt.endpoints.kafka_bootstrap,
        auto_offset_reset="earliest",
        group_id=None,
    )
    await consumer.start()
    try:
        letters: list[dict[str, Any]] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(letters) < 2:
            batch = await consumer.getmany(timeout_ms=500)
            letters += [json.loads(r.value or b"{}") for rs in batch.values() for r in rs]
            letters = [d for d in letters if d.get("group") == rt.group_id("extraction")]
    finally:
        await consumer.stop()
    assert poison_pos is not None
    kinds = {d["offset"]: d["error_type"] for d in letters}
    assert kinds.get(poison_pos.offset) == "DependencyFailed"
    assert len(letters) == 2  # the poison turn and the timed-out one
    assert all(d["attempts"] == 3 for d in letters)
    assert poison.turn_id in json.dumps(letters)  # the whole turn is kept for a redrive


# --- storage: concurrency and contradictions ----------------------------------------------


def extracted(user: str, thread: str, at: datetime, *facts: FactItem) -> FactsExtracted:
    return FactsExtracted(
        occurred_at=at,
        scope=Scope.parse({"agentWallet": "0xFacts", "userAddress": user, "threadId": thread}),
        turn_id=f"turn-{thread}-{at.timestamp()}",
        session_id=f"session-{thread}",
        extractor="test",
        facts=list(facts),
    )


@pytest.fixture
async def rt(stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any) -> AsyncIterator[Runtime]:
    settings = make_settings(stack, unique("facts_store"), extractor="none")
    async with open_runtime(settings, minilm) as runtime:
        yield runtime
        await runtime.mongo.drop_database(settings.mongo.db)


async def test_the_same_fact_from_two_threads_stored_concurrently_is_one_row(
    rt: Runtime, stack: Endpoints, minilm: LocalMiniLMEmbedder, now: datetime
) -> None:
    fact = FactItem(text="The user is allergic to shellfish.", type="identity", confidence=0.9)
    one = extracted("hana", "t1", now, fact)
    two = extracted("hana", "t2", now + timedelta(seconds=1), fact)
    async with open_runtime(rt.settings, minilm) as other:  # a second consumer process
        await asyncio.gather(
            *(w.facts.store(e) for w, e in ((rt, one), (other, two)) for _ in range(3))
        )
    db = rt.mongo[rt.settings.mongo.db]
    assert await db["memory"].count_documents({"userAddress": "hana", "source": "fact"}) == 1


async def test_a_move_replaces_the_old_city_and_as_of_recalls_it(
    rt: Runtime, now: datetime, now_ms: int
) -> None:
    lived = now - timedelta(days=40)
    moved = now - timedelta(days=5)
    lisbon = FactItem(
        text="The user lives in Lisbon.", type="identity", confidence=0.9, slot="residence"
    )
    porto = FactItem(
        text="The user lives in Porto.", type="identity", confidence=0.9, slot="residence"
    )
    # stored out of order: the later move arrives first (replays and partitions may do this)
    await rt.facts.store(extracted("ivo", "t2", moved, porto))
    await rt.facts.store(extracted("ivo", "t1", lived, lisbon))

    def ask(**extra: Any) -> Any:
        return rt.search.context(
            context_request(
                {
                    "agentWallet": "0xFacts",
                    "userAddress": "ivo",
                    "query": "Where do I live?",
                    "layers": ["graph", "vectors"],
                    **extra,
                }
            ),
            now_ms,
        )

    now_reply = await ask()
    assert now_reply.prompt is not None
    assert "Porto" in now_reply.prompt
    assert "Lisbon" not in now_reply.prompt
    before = await ask(asOf=int((moved - timedelta(days=1)).timestamp() * 1000))
    assert before.prompt is not None
    assert "Lisbon" in before.prompt
    assert "Porto" not in before.prompt
    db = rt.mongo[rt.settings.mongo.db]
    rows = {
        d["content"]: d
        for d in await db["memory"]
        .find({"userAddress": "ivo", "source": "fact"})
        .to_list(length=None)
    }
    assert set(rows) == {"The user lives in Lisbon.", "The user lives in Porto."}  # both kept
    old, new = rows["The user lives in Lisbon."], rows["The user lives in Porto."]
    assert old["invalidAt"] == int(moved.timestamp() * 1000)
    assert old["supersededBy"] == new["_id"]
    assert old["metadata"]["status"] == "superseded"
    assert new["invalidAt"] is None


async def test_live_in_lisbon_then_moved_to_porto_end_to_end_with_the_rule_extractor(
    rules_pipeline: tuple[Runtime, MemoryClient],
    now: datetime,
) -> None:
    rt, client = rules_pipeline
    scope = {"agentWallet": "0xMover", "userAddress": "joana"}
    lived = now - timedelta(days=60)
    moved = now - timedelta(days=3)
    await client.record_turn(
        {
            **scope,
            "threadId": "intro",
            "occurredAt": lived.isoformat(),
            "userMessage": "Hi! I live in Lisbon with my two cats.",
            "assistantMessage": "Nice to meet you!",
        }
    )
    await client.record_turn(
        {
            **scope,
            "threadId": "news",
            "occurredAt": moved.isoformat(),
            "userMessage": "Big news: I moved to Porto last weekend.",
            "assistantMessage": "Congratulations on the move!",
        }
    )
    # the two threads' turns are on different partitions: seeing Porto proves nothing about
    # Lisbon (its turn may be extracted later), so wait until both turns' facts are stored
    # and embedded (a new entity's row is found by its vector, which the embeddings group
    # fills after the facts group wrote it: without that wait the entity line was missing
    # now and then) and their changes have reached the cache before asking anything
    await drained(
        rt.endpoints.kafka_bootstrap,
        rt.settings.group_prefix,
        [
            ("extraction", topics.TURNS),
            ("facts", topics.FACTS),
            ("embeddings", topics.EMBEDDINGS),
            ("invalidation", topics.CHANGED),
        ],
    )
    question = {**scope, "threadId": "elsewhere"}
    now_reply = await client.context("Which city do I live in?", question, layers=["graph"])
    assert now_reply.prompt is not None
    assert "Porto" in now_reply.prompt
    assert "lives in Lisbon" not in now_reply.prompt  # replaced, not current
    assert "LIVES_IN Lisbon" not in now_reply.prompt
    assert "LIVES_IN Porto" in now_reply.prompt
    before = await client.context(
        "Which city do I live in?",
        question,
        layers=["graph"],
        as_of=(moved - timedelta(days=1)).isoformat(),
    )
    assert before.prompt is not None
    assert "lives in Lisbon" in before.prompt
    assert "Porto" not in before.prompt
    db = rt.mongo[rt.settings.mongo.db]
    rows = (
        await db["memory"]
        .find({"userAddress": "joana", "metadata.slot": "residence"})
        .to_list(length=None)
    )
    assert sorted(r["metadata"]["status"] for r in rows) == ["active", "superseded"]


async def test_a_fact_stated_again_after_a_delete_returns_fixes_16_13(
    rt: Runtime, now: datetime, now_ms: int
) -> None:
    fact = FactItem(text="The user runs marathons.", type="skill", confidence=0.9)
    await rt.facts.store(extracted("kim", "t1", now - timedelta(days=10), fact))
    db = rt.mongo[rt.settings.mongo.db]
    await db["memory"].update_one(
        {"userAddress": "kim", "source": "fact"},
        {"$set": {"metadata.status": "deleted", "metadata.deletedAt": 1}},
    )
    await rt.facts.store(extracted("kim", "t2", now, fact))  # the user says it again
    rows = await db["memory"].find({"userAddress": "kim", "source": "fact"}).to_list(length=None)
    assert len(rows) == 1
    assert rows[0]["metadata"]["status"] == "active"
    assert rows[0]["createdAt"] == now_ms
    assert "deletedAt" not in rows[0]["metadata"]
