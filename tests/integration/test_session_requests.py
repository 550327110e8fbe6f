"""Working-memory sessions over Kafka (request-reply on `memory.sessions.v1`): read and edited
only inside the caller's scope (outside it the session is "not found"), merged or replaced
(reference §7.2), and an edit reaches pre_turn's working layer at once (its cache moves on)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import ValidationError

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from services.endpoints import Endpoints
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import wait_processed
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


@pytest.fixture
async def sessions(
    stack: Endpoints, minilm: LocalMiniLMEmbedder
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(
        stack, minilm, "sessions", ["transcripts", "items", "invalidation", "search"]
    ) as pair:
        yield pair


async def turn(rt: Runtime, client: MemoryClient, scope: dict[str, Any], user: str) -> str:
    """Record one turn and wait until the transcripts group stored it; the working id."""
    await client.record_turn({**scope, "userMessage": user, "assistantMessage": "Noted."})
    pos = client.last_position
    assert pos is not None
    await wait_processed(
        rt.endpoints.kafka_bootstrap,
        rt.group_id("transcripts"),
        pos.topic,
        pos.partition,
        pos.offset,
        timeout=60,
    )
    return f"session:global:{scope['agentWallet']}:{scope['threadId']}"


async def working_prompt(client: MemoryClient, scope: dict[str, Any], want: str) -> str:
    deadline = time.monotonic() + 20
    while True:
        reply = await client.context("locker code", scope, layers=["working"])
        prompt = reply.prompt or ""
        if want in prompt or time.monotonic() > deadline:
            return prompt
        await asyncio.sleep(0.2)


async def test_sessions_outside_the_callers_scope_are_not_found(
    sessions: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = sessions
    agent = f"0xsess{uuid.uuid4().hex[:8]}"
    mine = {"agentWallet": agent, "userAddress": "ann", "threadId": "t1"}
    session_id = await turn(rt, client, mine, "My locker code is 4711.")
    owner = {"agentWallet": agent, "userAddress": "ann"}
    got = await client.session("get", session_id, owner)
    assert got.session is not None, got
    assert got.session["workingMemory"]["context"] == [
        "user: My locker code is 4711.",
        "assistant: Noted.",
    ]
    assert got.session["sessionId"] == session_id
    assert got.session["userAddress"] == "ann"
    assert "turnIds" not in got.session
    assert "vectors" not in got.session["workingMemory"]
    for outsider in (
        {"agentWallet": agent, "userAddress": "bob"},
        {"agentWallet": agent},  # no user: user-less sessions only
        {"agentWallet": "0xsomeoneelse", "userAddress": "ann"},
    ):
        for op, fields in (("get", {}), ("update", {"context": ["user: hacked"]})):
            reply = await client.session(op, session_id, outsider, **fields)
            assert reply.not_found, (op, outsider)
            assert reply.session is None
    assert (await client.session("get", "session:global:nope:t9", owner)).not_found
    after = await client.session("get", session_id, owner)
    assert after.session is not None
    assert "user: hacked" not in after.session["workingMemory"]["context"]


async def test_merge_and_replace_and_the_edit_reaches_pre_turn(
    sessions: tuple[Runtime, MemoryClient],
) -> None:
    rt, client = sessions
    agent = f"0xsess{uuid.uuid4().hex[:8]}"
    scope = {"agentWallet": agent, "userAddress": "cy", "threadId": "t2"}
    session_id = await turn(rt, client, scope, "I am planning a trip.")
    owner = {"agentWallet": agent, "userAddress": "cy"}
    # cache a working-layer answer without the new line, then edit the buffer
    assert "4242" not in await working_prompt(client, scope, "trip")

    merged = await client.session(
        "update",
        session_id,
        owner,
        context=["user: My locker code is 4242.", "   "],
        entities={"locker": "4242"},
        state={"mood": "calm"},
        metadata={"app_id": "demo"},
    )
    assert merged.session is not None, merged
    memory = merged.session["workingMemory"]
    assert memory["context"] == [
        "user: I am planning a trip.",
        "assistant: Noted.",
        "user: My locker code is 4242.",
    ]
    assert memory["entities"] == {"locker": "4242"}
    assert memory["state"]["mood"] == "calm"
    assert memory["state"]["lastTurnId"]  # merged: post_turn's state kept
    assert merged.session["metadata"] == {"app_id": "demo"}
    assert merged.session["expiresAt"] > merged.session["lastAccessedAt"]
    assert "4242" in await working_prompt(client, scope, "4242")

    many = [f"user: line {i}" for i in range(20)]
    trimmed = await client.session("update", session_id, owner, context=many)
    assert trimmed.session is not None
    assert trimmed.session["workingMemory"]["context"] == many[-12:]

    replaced = await client.session(
        "update", session_id, owner, context=many, state={"only": 1}, replace=True
    )
    assert replaced.session is not None
    assert replaced.session["workingMemory"]["context"] == many  # replace: not trimmed
    assert replaced.session["workingMemory"]["state"] == {"only": 1}
    assert replaced.session["workingMemory"]["entities"] == {"locker": "4242"}  # not given

    with pytest.raises(ValidationError, match="at most 100"):  # refused before publishing
        await client.session("update", session_id, owner, context=["x"] * 101)
