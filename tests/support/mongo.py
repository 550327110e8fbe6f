"""A fresh MongoDB database on the test stack's server, dropped afterwards: what every
store contract suite runs its Mongo implementation on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from services.endpoints import Endpoints

IMPLEMENTATIONS = [
    pytest.param("memory", id="memory"),
    pytest.param("mongo", id="mongo", marks=pytest.mark.integration),
]
"""The two implementations of a store port a contract suite runs on."""


@asynccontextmanager
async def mongo_database(
    stack: Endpoints, name: str
) -> AsyncIterator[AsyncDatabase[dict[str, Any]]]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        stack.mongo_uri, serverSelectionTimeoutMS=10_000
    )
    try:
        yield client[name]
    finally:
        await client.drop_database(name)
        await client.close()


async def stored_transcripts(
    db: AsyncDatabase[dict[str, Any]], query: dict[str, Any]
) -> list[dict[str, Any]]:
    """The transcripts `query` selects among the heads (`session_transcripts`), each with its
    turns (`transcript_turns`) read back as a thread: `turnIds` in turn order (`at`, `seq`)
    and `messages` in timestamp order, what tests inspect of a stored transcript."""
    heads = await db["session_transcripts"].find(query).sort("_id", 1).to_list(length=None)
    out: list[dict[str, Any]] = []
    for head in heads:
        turns = await db["transcript_turns"].find({"thread": head["_id"]}).to_list(length=None)
        turns.sort(key=lambda d: (d["at"], d.get("seq", 0), d["_id"]))
        messages = [m for d in turns for m in d["messages"]]
        messages.sort(key=lambda m: m["timestamp"])
        out.append({**head, "turnIds": [d["turnId"] for d in turns], "messages": messages})
    return out
