"""The Atlas vector index itself: its definition from the embedder's dimension, and
`ensure_vector_index`, which creates or updates it (or reports a server without Atlas Search,
which then uses the exact path). The search over it is `engine.adapters.atlas_vectors`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure, PyMongoError
from pymongo.operations import SearchIndexModel

from engine.adapters.atlas_vectors import ATLAS_FILTER_FIELDS, INDEX_NAME, VECTOR_PATH, Doc
from engine.errors import DependencyFailed

log = logging.getLogger(__name__)

MAX_DIMENSIONS = 8192
SIMILARITIES = ("cosine", "dotProduct", "euclidean")

_UNSUPPORTED_CODES = frozenset(
    {
        59,  # CommandNotFound: a server that predates search index commands
        115,  # CommandNotSupported: community / non-Atlas mongod (and SecantusDB)
        31082,  # SearchNotEnabled: mongod without a search process
        40324,  # unrecognized pipeline stage name `$vectorSearch`
    }
)


def vector_index_definition(dimensions: int, similarity: str = "cosine") -> Doc:
    """The `vectorSearch` index definition: `embedding` with the embedder's dimension (not a
    hard-coded 1024: fixes §16.25) plus one `filter` field per `ATLAS_FILTER_FIELDS` entry."""
    if isinstance(dimensions, bool) or not 1 <= dimensions <= MAX_DIMENSIONS:
        raise ValueError(f"dimensions must be within 1..{MAX_DIMENSIONS}, got {dimensions!r}")
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
    vector: Doc = {
        "type": "vector",
        "path": VECTOR_PATH,
        "numDimensions": dimensions,
        "similarity": similarity,
    }
    return {"fields": [vector, *({"type": "filter", "path": p} for p in ATLAS_FILTER_FIELDS)]}


def search_unsupported(exc: OperationFailure) -> bool:
    """Whether the server said it has no Atlas Search (as opposed to a real failure)."""
    if exc.code in _UNSUPPORTED_CODES:
        return True
    details = exc.details or {}
    message = str(details.get("errmsg") or exc)
    return "Atlas" in message and (
        "requires additional configuration" in message or "only supported" in message
    )


_DEFINITION_KEYS = ("type", "path", "numDimensions", "similarity")


def _fields_key(definition: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The fields of a definition, order-free, on the keys we set (the server may add its
    defaults, which must not count as a change)."""
    fields = definition.get("fields") or []
    return sorted(tuple(str(f.get(key, "")) for key in _DEFINITION_KEYS) for f in fields)


async def _search_index(collection: AsyncCollection[Doc], name: str) -> Mapping[str, Any] | None:
    cursor = await collection.list_search_indexes(name)
    found: list[Mapping[str, Any]] = await cursor.to_list(length=None)
    return found[0] if found else None


async def _wait_queryable(collection: AsyncCollection[Doc], name: str, seconds: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        info = await _search_index(collection, name)
        status = None if info is None else info.get("status")
        if info is not None and info.get("queryable") and status in (None, "READY"):
            return
        if status == "FAILED":
            raise DependencyFailed(f"vector index {name!r} failed to build: {info}")
        if loop.time() >= deadline:
            raise DependencyFailed(
                f"vector index {name!r} not queryable after {seconds}s: {status}"
            )
        await asyncio.sleep(0.5)


async def ensure_vector_index(
    collection: AsyncCollection[Doc],
    dimensions: int,
    *,
    similarity: str = "cosine",
    name: str = INDEX_NAME,
    wait_seconds: float = 0.0,
) -> bool:
    """Create the vector index, or update it when its definition differs (an identical one is
    left alone: an update rebuilds the index). True when the index exists afterwards; False,
    with a warning logged, when the server has no Atlas Search (then use the exact path).

    The collection must exist (`ensure_schema` creates it). Atlas builds indexes
    asynchronously: with `wait_seconds > 0`, wait until the index is queryable and raise
    `DependencyFailed` if it is not by then. Other server errors raise `DependencyFailed`.
    """
    definition = vector_index_definition(dimensions, similarity)
    try:
        current = await _search_index(collection, name)
        if current is None:
            model = SearchIndexModel(definition, name=name, type="vectorSearch")
            await collection.create_search_index(model)
            log.info("vector index created", extra={"index": name, "dimensions": dimensions})
        elif _fields_key(current.get("latestDefinition") or {}) != _fields_key(definition):
            await collection.update_search_index(name, definition)
            log.info("vector index updated", extra={"index": name, "dimensions": dimensions})
        if wait_seconds > 0:
            await _wait_queryable(collection, name, wait_seconds)
    except OperationFailure as exc:
        if search_unsupported(exc):
            log.warning(
                "no Atlas vector search on this server, vector index %r not created: %s",
                name,
                (exc.details or {}).get("errmsg") or exc,
                extra={"index": name, "code": exc.code},
            )
            return False
        raise DependencyFailed(f"vector index {name!r} could not be ensured: {exc}") from exc
    except PyMongoError as exc:
        raise DependencyFailed(f"vector index {name!r} could not be ensured: {exc}") from exc
    return True
