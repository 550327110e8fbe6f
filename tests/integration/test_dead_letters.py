"""Dead letters: listed from the DLQ, and re-driven to their source topic after a fix."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from schemas import topics
from schemas.inputs import turn_recorded
from services.endpoints import Endpoints
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.dead_letters import read_letters
from services.stream.guard import DeadLetter, redrive_command
from tests.support.mongo import stored_transcripts
from tests.support.pipeline import groups_running

pytestmark = pytest.mark.integration


@pytest.fixture
async def transcripts(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Any
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    async with groups_running(stack, minilm, "dlq", ["transcripts"]) as pair:
        yield pair


async def test_a_dead_letter_is_listed_and_stored_after_a_redrive(
    transcripts: tuple[Runtime, MemoryClient], stack: Endpoints, unique: Any
) -> None:
    rt, client = transcripts
    group = unique("flaky-group")
    turn = turn_recorded(
        {
            "agentWallet": "0xDLQ",
            "userAddress": "zoe",
            "threadId": "t",
            "userMessage": "Remember my gate code 7741.",
            "assistantMessage": "OK.",
        }
    )
    # what a handler that failed three times (MongoDB unreachable) left behind
    letter = DeadLetter(
        group=group,
        source_topic=topics.TURNS,
        partition=0,
        offset=123,
        key=turn.session_id,
        error="transcript append failed: timed out",
        error_type="DependencyFailed",
        attempts=3,
        payload=turn.model_dump_json(),
        failed_at=datetime.now(UTC),
        redrive=redrive_command(group, topics.TURNS, 0, 123),
    )
    for _ in range(2):  # dead-lettered twice (say, a first redrive failed too)
        await client.publish(topics.DLQ, letter, turn.session_id)

    listed = [x for x in await read_letters(stack.kafka_bootstrap) if x.letter.group == group]
    assert len(listed) == 2
    assert listed[0].letter.error_type == "DependencyFailed"
    cli = subprocess.run(
        [sys.executable, "-m", "services", "dlq", "list", "--group", group],
        env={**os.environ, **stack.to_env(), "COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert listed[0].ref in cli.stdout
    assert "DependencyFailed" in cli.stdout

    # the cause is fixed: run the command the letter names (the message is sent once)
    command = listed[0].letter.redrive.split()
    assert command[:3] == ["mnemostream", "dlq", "redrive"]
    again = subprocess.run(
        [sys.executable, "-m", "services", *command[1:]],
        env={**os.environ, **stack.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "re-published 1 message(s)" in again.stdout
    db = rt.mongo[rt.settings.mongo.db]
    deadline = time.monotonic() + 30
    while not await stored_transcripts(db, {"sessionId": turn.session_id}):
        assert time.monotonic() < deadline, "the re-driven turn was not stored"
        await asyncio.sleep(0.1)
    [doc] = await stored_transcripts(db, {"sessionId": turn.session_id})
    assert doc["messages"][0]["content"] == "Remember my gate code 7741."
