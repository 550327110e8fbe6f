"""Pending memory rows (`MemoryRow.pending`: stored before the embedding stage computed their
vector) in retrieval: the exact vector index finds them by their terms only and reports no
cosine for them, and the memory layers judge them by their text alone (issue 15)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from engine.adapters.memory import InMemoryMemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.retrieval.layers.memory import MemoryLayerOptions, search_memory
from engine.retrieval.layers.query import LayerQuery
from engine.retrieval.lexical import terms
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter
from schemas.scope import Scope

AGENT = "0xAgent"
MODEL = "test-model"
DIM = 32
T0 = 1_700_000_000_000
QUERY = "where did the user move, Lisbon?"
MINE = TenantFilter(agent_wallet=AGENT, user_address="U1")

Vec = npt.NDArray[np.float32]


def unit(seed: int) -> Vec:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


NOTHING: Vec = np.zeros(0, dtype=np.float32)


def row(
    vector_id: str,
    content: str,
    embedding: Vec,
    *,
    model: str = MODEL,
    source: str = "fact",
    status: str | None = None,
) -> MemoryRow:
    return MemoryRow(
        vector_id=vector_id,
        scope=ScopeFields(AGENT, "U1", thread_id="T1", mode=None, hai_id=None),
        content=content,
        embedding=embedding,
        embedding_model=model,
        source=source,
        created_at=T0,
        metadata={"status": status} if status else {},
    )


@pytest.fixture
def query() -> Vec:
    return unit(1000)


@pytest.fixture
async def store(query: Vec) -> InMemoryMemoryStore:
    rows = [
        row("close", "the user enjoys long walks", query),  # cosine 1 with the query
        *(row(f"filler-{n}", f"filler note number {n}", unit(n)) for n in range(20)),
        row("p-lisbon", "the user moved to Lisbon last spring", NOTHING),
        row("p-garden", "gardening notes about tomatoes", NOTHING),
        row("p-other-model", "a trip to Lisbon", NOTHING, model="other-model"),
        row("p-session", "Lisbon again, from a session", NOTHING, source="session"),
        row("p-replaced", "Lisbon, replaced since", NOTHING, status="superseded"),
    ]
    memory = InMemoryMemoryStore()
    assert await memory.insert_many_if_absent(rows) == {r.vector_id for r in rows}
    return memory


async def test_a_pending_row_is_found_by_its_terms_with_no_cosine(
    store: InMemoryMemoryStore, query: Vec
) -> None:
    found = await ExactVectorIndex(store).search(
        MINE, query, model=MODEL, k=3, sources=["fact"], terms=terms(QUERY)
    )

    cosines = {r.vector_id: c for r, c in found}
    assert "p-lisbon" in cosines
    assert cosines["p-lisbon"] is None
    # no other pending row: no query term (garden), another model, another source, replaced
    assert not {"p-garden", "p-other-model", "p-session", "p-replaced"} & set(cosines)
    embedded = {i: c for i, c in cosines.items() if i != "p-lisbon"}
    assert len(embedded) == 3  # the cosine top-k is made of embedded rows only
    assert all(isinstance(c, float) for c in embedded.values())
    assert embedded["close"] == pytest.approx(1.0, abs=1e-5)
    assert found[0][0].vector_id == "close"


async def test_without_terms_a_pending_row_is_never_a_candidate(
    store: InMemoryMemoryStore, query: Vec
) -> None:
    found = await ExactVectorIndex(store).search(MINE, query, model=MODEL, k=100)

    assert len(found) == 21  # "close" and the 20 fillers, even with room for every row
    assert all(not r.pending and c is not None for r, c in found)


async def test_once_filled_the_row_is_ranked_by_its_cosine(
    store: InMemoryMemoryStore, query: Vec
) -> None:
    index = ExactVectorIndex(store)
    lisbon = {"sources": ["fact"], "terms": ["lisbon"]}
    before = await index.search(MINE, query, model=MODEL, k=1, version="v1", **lisbon)
    assert ("p-lisbon", None) in [(r.vector_id, c) for r, c in before]

    assert await store.fill_embeddings(MODEL, {"p-lisbon": -query}) == 1
    after = await index.search(MINE, query, model=MODEL, k=1, version="v2", **lisbon)

    cosines = {r.vector_id: c for r, c in after}
    assert cosines["p-lisbon"] == pytest.approx(-1.0, abs=1e-5)
    assert (index.loads, index.deltas) == (1, 1)  # the filled row read back alone


def layer_query(query: Vec, text: str = QUERY, limit: int = 5) -> LayerQuery:
    scope = Scope.parse({"agentWallet": AGENT, "userAddress": "U1", "threadId": "T1"})
    return LayerQuery(
        scope=scope, query=text, limit=limit, vector=query, model=MODEL, now_ms=T0 + 1000
    )


@pytest.mark.parametrize("ranked", [False, True])
async def test_the_memory_layer_judges_a_pending_row_by_its_text_alone(
    store: InMemoryMemoryStore, query: Vec, ranked: bool
) -> None:
    options = MemoryLayerOptions(layer="vectors", sources=["fact"], ranked=ranked)

    hits = await search_memory(ExactVectorIndex(store), layer_query(query), options)

    by_id = {h.id: h for h in hits}
    assert set(by_id) == {"close", "p-lisbon"}
    pending: dict[str, Any] = by_id["p-lisbon"].raw
    assert pending["cosine"] is None
    assert by_id["close"].raw["cosine"] == pytest.approx(1.0, abs=1e-5)
    assert 0.34 <= (by_id["p-lisbon"].score or 0.0) <= 1.0


async def test_a_pending_row_without_a_matching_term_is_no_hit(
    store: InMemoryMemoryStore, query: Vec
) -> None:
    options = MemoryLayerOptions(layer="vectors", sources=None, ranked=True)

    hits = await search_memory(
        ExactVectorIndex(store), layer_query(query, "anything about walking"), options
    )

    assert {h.id for h in hits} == {"close"}
