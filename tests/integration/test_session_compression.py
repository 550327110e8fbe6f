"""Session compression through the SDK (`MemoryClient.compress_session`, request-reply on
`memory.sessions.v1`): with an OpenAI-compatible LLM (a local chat-completions server) its
JSON summary is stored, once per content, in the session's own scope; another tenant's
session is not found; an LLM failure is an `upstream` error reply."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.endpoints import Endpoints
from services.stream.offsets import wait_processed
from tests.support.http_server import Provider, Received, Reply, Responder
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


def chat(request: Received) -> Reply:
    body = request.json()
    if body["model"] == "broken":
        return Reply(500, {"error": "boom"})
    answer = {
        "summary": "Ida is moving to Porto for a nursing job.",
        "entities": ["Porto", "Ida"],
        "keyFacts": ["Ida is moving to Porto."],
    }
    text = "Here you go: " + json.dumps(answer)
    return Reply(200, {"choices": [{"message": {"role": "assistant", "content": text}}]})


async def test_an_llm_summary_is_stored_once_in_the_sessions_scope(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, provider: Callable[[Responder], Provider]
) -> None:
    server = provider(chat)
    async with groups_running(
        stack,
        minilm,
        "compress",
        ["transcripts", "items"],
        llm_base_url=server.url,
        llm_model="summary-model",
    ) as (rt, client):
        scope = {"agentWallet": "0xCmp", "userAddress": "ida", "threadId": "move"}
        await client.record_turn(
            {**scope, "userMessage": "I am moving to Porto.", "assistantMessage": "Great!"}
        )
        pos = client.last_position
        assert pos is not None
        await wait_processed(
            stack.kafka_bootstrap,
            rt.group_id("transcripts"),
            pos.topic,
            pos.partition,
            pos.offset,
            timeout=60,
        )
        session_id = "session:global:0xCmp:move"
        tenant = {"agentWallet": "0xCmp", "userAddress": "ida"}

        reply = await client.compress_session(session_id, tenant, model="coord", timeout=60)
        assert reply.error is None, reply.error
        done = reply.compression
        assert done is not None
        assert done["summary"] == "Ida is moving to Porto for a nursing job."
        assert done["keyFacts"] == ["Ida is moving to Porto."]
        assert done["entitiesExtracted"] == 2
        assert done["summariser"] == "llm:coord"
        assert done["stored"] is True
        sent = server.received[-1]
        assert sent.path == "/v1/chat/completions"
        assert sent.json()["model"] == "coord"
        assert sent.json()["temperature"] == 0.2
        assert "user: I am moving to Porto." in sent.json()["messages"][0]["content"]

        row = await client.item("get", done["vectorId"], tenant)
        assert row.items[0]["userAddress"] == "ida"
        assert row.items[0]["threadId"] == "move"
        assert row.items[0]["metadata"]["type"] == "session_compression"

        again = await client.compress_session(session_id, tenant, timeout=60)
        assert again.compression is not None
        assert again.compression["vectorId"] == done["vectorId"]
        assert again.compression["stored"] is False
        memory = rt.mongo[rt.settings.mongo.db]["memory"]
        rows = await memory.count_documents(
            {"metadata.sessionId": session_id, "metadata.type": "session_compression"}
        )
        assert rows == 1

        other = await client.compress_session(
            session_id, {"agentWallet": "0xCmp", "userAddress": "joe"}, timeout=60
        )
        assert other.not_found is True
        assert other.compression is None

        failed = await client.compress_session(session_id, tenant, model="broken", timeout=60)
        assert failed.upstream is True
        assert "500" in (failed.error or "")
