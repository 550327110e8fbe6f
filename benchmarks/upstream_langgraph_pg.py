"""What `benchmarks.upstream_langgraph` points LangGraph's Postgres store tests at
(`libs/checkpoint-postgres/tests/test_store.py`, `test_async_store.py`), as one would for a
new backend: their `store` and `vector_store` fixtures and their `_create_vector_store`
helper, rebound by a line the runner appends to each copied module, build the backend under
test (`upstream_langgraph_plugin.make_store`: `InMemoryStore` for the control, else a
`MnemoStore` of a fresh tenant) with the tests' own TTL and index configuration.

`stub_postgres` makes their imports of psycopg and of LangGraph's Postgres packages resolve
to placeholders, so no Postgres server or driver is needed: a test that uses Postgres itself
(a connection, SQL, `PostgresStore.from_conn_string`) fails on both backends and is not
counted against ours.
"""

from __future__ import annotations

import sys
import types
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest

from benchmarks.upstream_langgraph_plugin import make_store

TTL_MINUTES = 6 / 60
"""The tests' TTL (their `TTL_SECONDS = 6`)."""
SYNC_VECTOR_TTL_MINUTES = 2
"""The TTL the sync module's vector stores have (its `_create_vector_store`)."""
STUBBED = (
    "psycopg",
    "psycopg.errors",
    "psycopg.rows",
    "langgraph.checkpoint.postgres",
    "langgraph.checkpoint.postgres._ainternal",
    "langgraph.store.postgres",
    "langgraph.store.postgres.base",
)


class Unavailable:
    """Any name of a stubbed module: using it fails, as there is no Postgres here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("Postgres is not available in this run")


def _placeholder(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (Unavailable,), {})


def stub_postgres() -> None:
    """Placeholders for the Postgres modules the tests import (left alone when installed)."""
    for name in STUBBED:
        if name in sys.modules:
            continue
        module = types.ModuleType(name)
        module.__getattr__ = _placeholder  # type: ignore[method-assign]
        sys.modules[name] = module


def _ttl() -> dict[str, Any]:
    return {
        "default_ttl": TTL_MINUTES,
        "refresh_on_read": True,
        "sweep_interval_minutes": TTL_MINUTES / 2,
    }


def _index(embeddings: Any, fields: list[str] | None = None) -> dict[str, Any]:
    index: dict[str, Any] = {"dims": embeddings.dims, "embed": embeddings}
    if fields is not None:
        index["fields"] = fields
    return index


@pytest.fixture
def store() -> Any:
    return make_store(ttl=_ttl())


@pytest.fixture
def vector_store(fake_embeddings: Any) -> Any:
    return make_store(index=_index(fake_embeddings))


@contextmanager
def create_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
    enable_ttl: bool = True,
) -> Iterator[Any]:
    """The sync module's helper: a TTL of `SYNC_VECTOR_TTL_MINUTES` unless `enable_ttl` is
    false, as its own helper sets."""
    ttl = {"default_ttl": SYNC_VECTOR_TTL_MINUTES, "refresh_on_read": True}
    yield make_store(index=_index(fake_embeddings, text_fields), ttl=ttl if enable_ttl else None)


@asynccontextmanager
async def acreate_vector_store(
    vector_type: str,
    distance_type: str,
    fake_embeddings: Any,
    text_fields: list[str] | None = None,
) -> AsyncIterator[Any]:
    """The async module's helper: no TTL, as its own helper sets."""
    yield make_store(index=_index(fake_embeddings, text_fields))
