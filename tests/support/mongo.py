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
