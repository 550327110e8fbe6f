"""A thread longer than any one document may be (issue 29): 50,000 turns with 2 KB messages
(about 200 MB of text, twelve times MongoDB's 16 MB document limit) stored by the transcript
adapter on the MongoDB-wire server, read back whole and in order, and no stored document of
the thread above 1 MB. Before, a thread was one document: at 16 MB the server refused it and
every later turn of the thread went to the dead-letter topic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from engine.adapters.mongo import TRANSCRIPT_TURNS, TRANSCRIPTS, MongoTranscriptStore, ensure_schema
from engine.records import ScopeFields, StoredMessage, TranscriptAppend
from engine.scoping import TenantFilter
from services.endpoints import Endpoints
from tests.support.mongo import mongo_database

pytestmark = pytest.mark.integration

TURNS = 50_000
BATCH = 1_000
MESSAGE_CHARS = 2_048
LARGEST_DOCUMENT = 1 << 20
T0 = 1_780_000_000_000
SCOPE = ScopeFields("0xLongThread", "user", "forever", None, None)


def said(n: int, role: str) -> str:
    head = f"{role} {n}: "
    return head + "x" * (MESSAGE_CHARS - len(head))


def turn(n: int) -> TranscriptAppend:
    at = T0 + 10 * n
    return TranscriptAppend(
        session_id="forever",
        scope=SCOPE,
        turn_id=f"turn-{n}",
        messages=[
            StoredMessage("user", said(n, "user"), at, turn_id=f"turn-{n}"),
            StoredMessage("assistant", said(n, "assistant"), at + 1, turn_id=f"turn-{n}"),
        ],
        summary=None,
        token_count=2,
        at=at,
    )


async def largest_document(col: Any, query: dict[str, Any]) -> int:
    """The byte size of the largest document `query` selects (each raw document starts with
    its int32 length)."""
    largest = 0
    async for batch in col.find_raw_batches(query):
        view, at = memoryview(cast(bytes, batch)), 0
        while at < len(view):
            size = int.from_bytes(view[at : at + 4], "little")
            largest = max(largest, size)
            at += size
    return largest


async def test_a_thread_of_50000_turns_is_stored_whole_in_bounded_documents(
    stack: Endpoints, unique: Callable[[str], str]
) -> None:
    async with mongo_database(stack, unique("db")) as db:
        await ensure_schema(db)
        store = MongoTranscriptStore(db)
        for start in range(0, TURNS, BATCH):
            batch = [turn(n) for n in range(start, start + BATCH)]
            assert await store.append_many(batch) == [True] * BATCH
        # a redelivered batch (the last one again) changes nothing
        again = [turn(n) for n in range(TURNS - BATCH, TURNS)]
        assert await store.append_many(again) == [False] * BATCH

        got = await store.of_session(TenantFilter(SCOPE.agent_wallet, "user"), "forever")

        assert got is not None
        assert len(got.messages) == 2 * TURNS
        assert [m.turn_id for m in got.messages[::2]] == [f"turn-{n}" for n in range(TURNS)]
        assert all(m.content.startswith(f"{m.role} ") for m in got.messages)
        assert got.messages[-1].content == said(TURNS - 1, "assistant")
        assert got.token_count == 2 * TURNS
        assert (got.created_at, got.updated_at) == (T0, T0 + 10 * (TURNS - 1))
        key = SCOPE.document_key("forever")
        assert await largest_document(db[TRANSCRIPTS], {"_id": key}) < 1024
        assert await largest_document(db[TRANSCRIPT_TURNS], {"thread": key}) < LARGEST_DOCUMENT
