"""Model providers misbehaving, with the consumer groups running over Kafka: local HTTP servers
play the reranker, the OpenAI-compatible extractor and a Voyage-style embeddings API, and
answer garbage or too late. pre_turn is fail-soft (every request answered, the decayed order
kept; without query vectors, from the text layers); extraction and storing embeddings are not
(a turn whose facts or vectors cannot be read is retried, then dead-lettered); no partition
stops: every other turn is stored and every later message processed."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.adapters.memory import HashingEmbedder
from schemas import topics
from services.endpoints import Endpoints
from services.stream.dead_letters import read_letters
from services.stream.offsets import end_offsets, wait_caught_up
from tests.support.http_server import Provider, Received, Reply, Responder
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration

TURNS = 12


def misbehave(request: Received) -> Reply:
    """Rerank: garbage JSON, an error status or a reply too late, in turn. Chat completions
    (extraction): prose instead of JSON, or too late."""
    n = len(request.path) + int(request.headers.get("content-length", "0"))
    if request.path.endswith("/rerank"):
        return [
            Reply(200, b"{not json"),
            Reply(200, {"results": "nope"}),
            Reply(503, b"overloaded"),
            Reply(200, {"results": []}, delay_s=1.0),
        ][n % 4]
    if n % 2:
        return Reply(200, {"choices": [{"message": {"content": "Sorry, no JSON today."}}]})
    return Reply(200, {"choices": []}, delay_s=1.0)


async def test_garbage_and_slow_providers_never_stop_a_partition(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, provider: Callable[[Responder], Provider]
) -> None:
    server = provider(misbehave)
    agent = f"0xprov{uuid.uuid4().hex[:10]}"
    scope = {"agentWallet": agent, "userAddress": "kai"}
    groups = ["transcripts", "extraction", "facts", "search"]
    async with groups_running(
        stack,
        minilm,
        "providers",
        groups,
        extractor="llm",
        llm_base_url=server.url,
        llm_timeout_seconds=0.3,
        rerank_provider="http",
        rerank_url=f"{server.url}/v1/rerank",
        rerank_timeout_seconds=0.3,
        rerank_dominance_delta=1.0,  # always ask the reranker
        rerank_min_candidates=2,
        max_attempts=2,
        retry_backoff_ms=10,
    ) as (rt, client):
        turns: dict[tuple[str, int], int] = {}
        for n in range(TURNS):
            await client.record_turn(
                {
                    **scope,
                    "threadId": f"t{n % 3}",
                    "userMessage": f"I booked table {n} at the harbour restaurant.",
                    "assistantMessage": f"Table {n} it is.",
                }
            )
            pos = client.last_position
            assert pos is not None
            key = (pos.topic, pos.partition)
            turns[key] = max(turns.get(key, 0), pos.offset + 1)
        remembered: dict[tuple[str, int], int] = {}
        for n in range(4):  # graph candidates for the reranker
            await client.remember({**scope, "content": f"Kai likes harbour table {n} best."})
            pos = client.last_position
            assert pos is not None
            remembered[(pos.topic, pos.partition)] = pos.offset + 1
        for group in ("transcripts", "extraction"):
            await wait_caught_up(stack.kafka_bootstrap, rt.group_id(group), turns, timeout=120)
        await wait_caught_up(
            stack.kafka_bootstrap, rt.group_id("facts.remember"), remembered, timeout=60
        )

        answered: list[Any] = []
        for n in range(8):
            reply = await client.context(f"Which table at the harbour, number {n}?", scope)
            answered.append(reply)
        assert all(reply.error is None for reply in answered)
        assert all("harbour" in (reply.prompt or "") for reply in answered)
        assert any(r.path.endswith("/rerank") for r in server.received)  # it was asked

        db = rt.mongo[rt.settings.mongo.db]
        stored = await db["memory"].count_documents({"agentWallet": agent, "source": "session"})
        assert stored == TURNS  # every turn stored although no fact could be read
        letters = await read_letters(stack.kafka_bootstrap, group=rt.group_id("extraction"))
        assert len(letters) == TURNS  # each retried, then dead-lettered with its error
        assert {letter.letter.source_topic for letter in letters} == {topics.TURNS}
        assert all(letter.letter.attempts == 2 for letter in letters)
        ends = await end_offsets(stack.kafka_bootstrap, [topics.TURNS])
        assert all(turns[k] <= ends[k] for k in turns)


HTTP_DIM = 64


def embeddings_api(state: dict[str, bool]) -> Responder:
    """A Voyage-style `/embeddings` server: real (hashing) vectors for the texts, a vector of
    the wrong size for a text saying POISON, and 503 for everything while `state["down"]`."""
    vectors = HashingEmbedder(HTTP_DIM)

    def respond(request: Received) -> Reply:
        if state["down"]:
            return Reply(503, b"embeddings under maintenance")
        texts = request.json()["input"]
        data = [
            {"embedding": [0.5, 0.5] if "POISON" in t else vectors.vector(t).tolist(), "index": i}
            for i, t in enumerate(texts)
        ]
        return Reply(200, {"data": data, "model": "voyage-4-large"})

    return respond


async def test_an_http_embedder_that_answers_garbage_dead_letters_the_turn_and_search_degrades(
    stack: Endpoints, provider: Callable[[Responder], Provider]
) -> None:
    state = {"down": False}
    server = provider(embeddings_api(state))
    agent = f"0xembed{uuid.uuid4().hex[:10]}"
    scope = {"agentWallet": agent, "userAddress": "kai"}
    async with groups_running(
        stack,
        None,  # the embedder comes from the settings: the HTTP one
        "httpembed",
        ["transcripts", "search"],
        embedder="voyage",
        embedding_base_url=f"{server.url}/v1",
        embedding_dimensions=HTTP_DIM,
        embedding_timeout_seconds=2.0,
        max_attempts=2,
        retry_backoff_ms=10,
    ) as (rt, client):
        ends: dict[tuple[str, int], int] = {}
        for n in range(6):
            word = "POISON" if n == 2 else "harbour"
            await client.record_turn(
                {
                    **scope,
                    "threadId": "t1",
                    "turnId": f"{agent}-{n}",
                    "userMessage": f"Turn {n}: I booked table {n} at the {word} restaurant.",
                    "assistantMessage": f"Table {n} it is.",
                }
            )
            pos = client.last_position
            assert pos is not None
            ends[(pos.topic, pos.partition)] = pos.offset + 1
        await wait_caught_up(stack.kafka_bootstrap, rt.group_id("transcripts"), ends, timeout=60)

        db = rt.mongo[rt.settings.mongo.db]
        rows = await db["memory"].find({"agentWallet": agent, "source": "session"}).to_list()
        assert len(rows) == 5  # every turn but the poisoned one
        assert {(r["embeddingModel"], r["embeddingDim"]) for r in rows} == {
            ("voyage-4-large", HTTP_DIM)
        }
        letters = await read_letters(stack.kafka_bootstrap, group=rt.group_id("transcripts"))
        assert [(x.letter.error_type, x.letter.attempts) for x in letters] == [
            ("EmbeddingFailed", 2)
        ]
        assert "has 2 components, not 64" in letters[0].letter.error
        assert "POISON" in letters[0].letter.payload  # the turn is kept for a redrive

        reply = await client.context("Which table did I book at the harbour?", scope)
        assert reply.error is None
        assert "harbour" in (reply.prompt or "")
        asked = [r.json() for r in server.received]
        assert {"input_type": "query", "output_dimension": HTTP_DIM}.items() <= asked[-1].items()

        state["down"] = True  # the API is down: pre_turn answers from the text layers
        before = len(server.received)
        reply = await client.context("What about the harbour restaurant table?", scope)
        assert reply.error is None
        assert "harbour" in (reply.prompt or "")
        assert len(server.received) > before  # it was asked, and failed
