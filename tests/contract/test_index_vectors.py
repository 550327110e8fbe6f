"""`VectorIndex.vectors`: the stored vectors of named rows, as the thread layers read their
turns' vectors (issue 29). The same suite runs on the exact index over the in-memory store,
the exact index over the MongoDB-wire server, and the Atlas index's read (a plain `find`,
which any MongoDB-wire server answers): only rows the filter admits, filled, not deleted,
of the model and dimension asked."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import numpy as np
import numpy.typing as npt
import pytest

from engine.adapters.atlas_vectors import AtlasVectorIndex
from engine.adapters.memory import InMemoryMemoryStore
from engine.adapters.mongo import MEMORY, MongoMemoryStore, ensure_schema
from engine.ports import MemoryStore, VectorIndex
from engine.records import MemoryRow, ScopeFields
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter
from tests.support.mongo import mongo_database

AGENT = "0xAgent"
MODEL = "m"
DIM = 8
T0 = 1_780_000_000_000
MINE = TenantFilter(AGENT, "U1")

Vec = npt.NDArray[np.float32]


def unit(seed: int, dim: int = DIM) -> Vec:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def row(
    vector_id: str,
    embedding: Vec,
    *,
    user: str = "U1",
    model: str = MODEL,
    status: str = "active",
) -> MemoryRow:
    return MemoryRow(
        vector_id=vector_id,
        scope=ScopeFields(AGENT, user, thread_id="T1", mode=None, hai_id=None),
        content=f"turn {vector_id}",
        embedding=embedding,
        embedding_model=model,
        source="session",
        created_at=T0,
        metadata={"status": status},
    )


ROWS = [
    row("filled", unit(1)),
    row("pending", np.zeros(0, dtype=np.float32)),
    row("deleted", unit(2), status="deleted"),
    row("theirs", unit(3), user="U2"),
    row("other-model", unit(4), model="other"),
    row("other-dim", unit(5, dim=4)),
]
ASKED = [r.vector_id for r in ROWS] + ["absent"]


@pytest.fixture(
    params=[
        pytest.param("exact-memory", id="exact-memory"),
        pytest.param("exact-mongo", id="exact-mongo", marks=pytest.mark.integration),
        pytest.param("atlas-read", id="atlas-read", marks=pytest.mark.integration),
    ]
)
async def index(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[VectorIndex]:
    if request.param == "exact-memory":
        memory: MemoryStore = InMemoryMemoryStore()
        await memory.insert_many_if_absent(ROWS)
        yield ExactVectorIndex(memory)
        return
    async with mongo_database(request.getfixturevalue("stack"), unique("db")) as db:
        await ensure_schema(db)
        store = MongoMemoryStore(db)
        await store.insert_many_if_absent(ROWS)
        yield (
            ExactVectorIndex(store)
            if request.param == "exact-mongo"
            else AtlasVectorIndex(db[MEMORY])
        )


async def test_only_the_filled_rows_the_filter_admits_come_back(index: VectorIndex) -> None:
    found = await index.vectors(MINE, ASKED, model=MODEL, dim=DIM, version="v1")

    assert set(found) == {"filled"}
    assert np.allclose(found["filled"], unit(1))
    assert await index.vectors(MINE, [], model=MODEL, dim=DIM) == {}
    theirs = await index.vectors(TenantFilter(AGENT, "U2"), ASKED, model=MODEL, dim=DIM)
    assert set(theirs) == {"theirs"}
