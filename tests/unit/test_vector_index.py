"""`ExactVectorIndex`: exact cosine top-k within a tenant, and its per-tenant LRU of matrices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest

from engine.adapters.memory import InMemoryMemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.retrieval.lexical import all_terms
from engine.retrieval.tenant_rows import TenantRows
from engine.retrieval.vector_index import ExactVectorIndex
from engine.scoping import TenantFilter

AGENT = "0xAgent"
MODEL = "test-model"
DIM = 48
T0 = 1_700_000_000_000


def unit_rows(rng: np.random.Generator, n: int, dim: int = DIM) -> npt.NDArray[np.float32]:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def row(
    vector_id: str,
    embedding: npt.NDArray[np.float32],
    *,
    agent: str = AGENT,
    user: str | None = "U1",
    source: str = "fact",
    model: str = MODEL,
    status: str | None = None,
) -> MemoryRow:
    return MemoryRow(
        vector_id=vector_id,
        scope=ScopeFields(agent, user, thread_id="T1", mode=None, hai_id=None),
        content=f"content of {vector_id}",
        embedding=embedding,
        embedding_model=model,
        source=source,
        created_at=T0,
        metadata={"status": status} if status else {},
    )


async def store_of(rows: Sequence[MemoryRow]) -> InMemoryMemoryStore:
    store = InMemoryMemoryStore()
    for r in rows:
        assert await store.insert_if_absent(r)
    return store


def tenant(agent: str = AGENT, user: str | None = "U1") -> TenantFilter:
    return TenantFilter(agent_wallet=agent, user_address=user)


def brute_force(
    matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32], k: int
) -> tuple[list[int], npt.NDArray[np.float64]]:
    scores = matrix.astype(np.float64) @ query.astype(np.float64)
    order = np.argsort(-scores)[:k]
    return [int(i) for i in order], scores[order]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240601)


# --- exactness ------------------------------------------------------------------------------


async def test_top_k_equals_a_brute_force_cosine_ranking(rng: np.random.Generator) -> None:
    matrix = unit_rows(rng, 2000)
    index = ExactVectorIndex(await store_of([row(f"r{i}", v) for i, v in enumerate(matrix)]))

    for query in unit_rows(rng, 5):
        found = await index.search(tenant(), query, model=MODEL, k=25)
        expected_ids, expected_scores = brute_force(matrix, query, 25)
        assert [r.vector_id for r, _ in found] == [f"r{i}" for i in expected_ids]
        np.testing.assert_allclose([s for _, s in found], expected_scores, atol=1e-5)


async def test_scores_are_cosines_best_first(rng: np.random.Generator) -> None:
    matrix = unit_rows(rng, 300)
    index = ExactVectorIndex(await store_of([row(f"r{i}", v) for i, v in enumerate(matrix)]))
    query = matrix[42]

    found = await index.search(tenant(), query, model=MODEL, k=10)

    assert found[0][0].vector_id == "r42"
    assert found[0][1] == pytest.approx(1.0, abs=1e-5)
    scores = [s for _, s in found]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 - 1e-5 <= s <= 1.0 + 1e-5 for s in scores)


async def test_k_larger_than_the_tenant_returns_every_row_and_k_zero_returns_none(
    rng: np.random.Generator,
) -> None:
    matrix = unit_rows(rng, 7)
    index = ExactVectorIndex(await store_of([row(f"r{i}", v) for i, v in enumerate(matrix)]))

    assert len(await index.search(tenant(), matrix[0], model=MODEL, k=50)) == 7
    assert await index.search(tenant(), matrix[0], model=MODEL, k=0) == []


async def test_an_empty_tenant_returns_nothing(rng: np.random.Generator) -> None:
    index = ExactVectorIndex(InMemoryMemoryStore())
    assert await index.search(tenant(), unit_rows(rng, 1)[0], model=MODEL, k=5) == []


async def test_inactive_rows_are_never_returned(rng: np.random.Generator) -> None:
    matrix = unit_rows(rng, 3)
    rows = [
        row("live", matrix[0]),
        row("deleted", matrix[1], status="deleted"),
        row("superseded", matrix[2], status="superseded"),
    ]
    index = ExactVectorIndex(await store_of(rows))

    for query in matrix:
        found = await index.search(tenant(), query, model=MODEL, k=3)
        assert [r.vector_id for r, _ in found] == ["live"]


# --- sources, models, dimensions --------------------------------------------------------------


async def test_sources_restrict_the_candidates_and_stay_exact(rng: np.random.Generator) -> None:
    matrix = unit_rows(rng, 600)
    kinds = ["fact", "session", "knowledge"]
    rows = [row(f"r{i}", v, source=kinds[i % 3]) for i, v in enumerate(matrix)]
    index = ExactVectorIndex(await store_of(rows))
    query = unit_rows(rng, 1)[0]

    facts = await index.search(tenant(), query, model=MODEL, k=15, sources=["fact"])
    fact_positions = [i for i in range(600) if i % 3 == 0]
    expected, _ = brute_force(matrix[fact_positions], query, 15)
    assert [r.vector_id for r, _ in facts] == [f"r{fact_positions[i]}" for i in expected]

    two = await index.search(tenant(), query, model=MODEL, k=600, sources=["fact", "knowledge"])
    assert len(two) == 400
    assert {r.source for r, _ in two} == {"fact", "knowledge"}


async def test_sources_with_fewer_rows_than_k_return_only_those_rows(
    rng: np.random.Generator,
) -> None:
    matrix = unit_rows(rng, 10)
    rows = [row(f"r{i}", v, source="fact" if i < 2 else "session") for i, v in enumerate(matrix)]
    index = ExactVectorIndex(await store_of(rows))

    found = await index.search(tenant(), matrix[5], model=MODEL, k=8, sources=["fact"])

    assert sorted(r.vector_id for r, _ in found) == ["r0", "r1"]


async def test_rows_of_another_model_or_dimension_are_never_mixed_in(
    rng: np.random.Generator,
) -> None:
    shared = unit_rows(rng, 1)[0]
    rows = [
        row("a64", shared, model="model-a"),
        row("b64", shared, model="model-b"),  # same vector, other space
        row("a32", unit_rows(rng, 1, dim=32)[0], model="model-a"),
    ]
    index = ExactVectorIndex(await store_of(rows))

    a = await index.search(tenant(), shared, model="model-a", k=10)
    assert [r.vector_id for r, _ in a] == ["a64"]
    b = await index.search(tenant(), shared, model="model-b", k=10)
    assert [r.vector_id for r, _ in b] == ["b64"]
    small = await index.search(tenant(), unit_rows(rng, 1, dim=32)[0], model="model-a", k=10)
    assert [r.vector_id for r, _ in small] == ["a32"]
    assert await index.search(tenant(), shared, model="model-c", k=10) == []


# --- tenancy --------------------------------------------------------------------------------


async def test_rows_of_another_tenant_are_never_returned(rng: np.random.Generator) -> None:
    query = unit_rows(rng, 1)[0]
    owners = [(AGENT, "U1"), (AGENT, "U2"), (AGENT, None), ("0xOther", "U1"), ("0xOther", None)]
    rows = [
        # each tenant has an exact copy of the query (cosine 1) and some noise
        row(f"{agent}/{user}/{i}", query if i == 0 else v, agent=agent, user=user)
        for agent, user in owners
        for i, v in enumerate(unit_rows(rng, 20))
    ]
    index = ExactVectorIndex(await store_of(rows))

    for agent, user in owners:
        found = await index.search(tenant(agent, user), query, model=MODEL, k=100)
        assert len(found) == 20
        assert {(r.scope.agent_wallet, r.scope.user_address) for r, _ in found} == {(agent, user)}
        assert found[0][0].vector_id == f"{agent}/{user}/0"


async def test_a_shared_filter_adds_only_the_agents_user_less_rows(
    rng: np.random.Generator,
) -> None:
    vectors = unit_rows(rng, 4)
    rows = [
        row("mine", vectors[0], user="U1"),
        row("agent-wide", vectors[1], user=None),
        row("other-user", vectors[2], user="U2"),
        row("other-agent", vectors[3], agent="0xOther", user=None),
    ]
    index = ExactVectorIndex(await store_of(rows))
    where = TenantFilter(agent_wallet=AGENT, user_address="U1", shared=True)

    found = await index.search(where, vectors[2], model=MODEL, k=10)

    assert sorted(r.vector_id for r, _ in found) == ["agent-wide", "mine"]


async def test_two_tenants_do_not_share_a_cached_matrix(rng: np.random.Generator) -> None:
    v1, v2 = unit_rows(rng, 2)
    index = ExactVectorIndex(await store_of([row("u1", v1, user="U1"), row("u2", v2, user="U2")]))

    first = await index.search(tenant(user="U1"), v2, model=MODEL, k=5, version="same-token")
    second = await index.search(tenant(user="U2"), v1, model=MODEL, k=5, version="same-token")

    assert [r.vector_id for r, _ in first] == ["u1"]
    assert [r.vector_id for r, _ in second] == ["u2"]
    assert index.loads == 2


# --- the per-tenant matrix cache --------------------------------------------------------------


async def test_the_same_version_reuses_the_loaded_matrix(rng: np.random.Generator) -> None:
    matrix = unit_rows(rng, 50)
    store = await store_of([row(f"r{i}", v) for i, v in enumerate(matrix)])
    index = ExactVectorIndex(store)

    first = await index.search(tenant(), matrix[3], model=MODEL, k=5, version="v1")
    assert index.loads == 1
    for query in matrix[:10]:
        await index.search(tenant(), query, model=MODEL, k=5, version="v1")
    again = await index.search(tenant(), matrix[3], model=MODEL, k=5, version="v1")

    assert index.loads == 1
    assert [r.vector_id for r, _ in again] == [r.vector_id for r, _ in first]


async def test_sources_do_not_force_a_reload(rng: np.random.Generator) -> None:
    matrix = unit_rows(rng, 6)
    rows = [row(f"r{i}", v, source="fact" if i % 2 else "session") for i, v in enumerate(matrix)]
    index = ExactVectorIndex(await store_of(rows))

    await index.search(tenant(), matrix[0], model=MODEL, k=5, version="v1")
    facts = await index.search(
        tenant(), matrix[0], model=MODEL, k=5, version="v1", sources=["fact"]
    )

    assert index.loads == 1
    assert {r.source for r, _ in facts} == {"fact"}


async def test_a_new_version_reads_back_the_write_without_a_reload(
    rng: np.random.Generator,
) -> None:
    matrix = unit_rows(rng, 30)
    store = await store_of([row(f"r{i}", v) for i, v in enumerate(matrix)])
    index = ExactVectorIndex(store)
    query = unit_rows(rng, 1)[0]
    await index.search(tenant(), query, model=MODEL, k=3, version="v1")

    await store.insert_if_absent(row("new", query))  # the best possible match

    stale = await index.search(tenant(), query, model=MODEL, k=3, version="v1")
    assert "new" not in [r.vector_id for r, _ in stale]  # same version: the loaded matrix
    assert index.loads == 1
    fresh = await index.search(tenant(), query, model=MODEL, k=3, version="v2")
    assert (index.loads, index.deltas) == (1, 1)  # the new row read back, not the tenant
    assert fresh[0][0].vector_id == "new"
    assert fresh[0][1] == pytest.approx(1.0, abs=1e-5)


async def test_without_a_version_every_search_checks_the_store(
    rng: np.random.Generator,
) -> None:
    matrix = unit_rows(rng, 5)
    store = await store_of([row(f"r{i}", v) for i, v in enumerate(matrix)])
    index = ExactVectorIndex(store)
    query = unit_rows(rng, 1)[0]

    await index.search(tenant(), query, model=MODEL, k=3)
    await index.search(tenant(), query, model=MODEL, k=3)
    assert (index.loads, index.deltas) == (1, 1)

    await store.insert_if_absent(row("new", query))
    found = await index.search(tenant(), query, model=MODEL, k=3)
    assert (index.loads, index.deltas) == (1, 2)
    assert found[0][0].vector_id == "new"

    # a versioned read after unversioned ones checks the store too, once
    await index.search(tenant(), query, model=MODEL, k=3, version="v1")
    await index.search(tenant(), query, model=MODEL, k=3, version="v1")
    assert (index.loads, index.deltas) == (1, 3)


async def test_tenants_beyond_the_byte_budget_are_evicted_least_recently_used_first(
    rng: np.random.Generator,
) -> None:
    users = ["U1", "U2", "U3"]
    vectors = unit_rows(rng, 3)
    rows = [row(u, v, user=u) for u, v in zip(users, vectors, strict=True)]
    store = await store_of(rows)
    one = TenantRows(MODEL, DIM)
    one.apply(rows[:1])
    index = ExactVectorIndex(store, max_bytes=2 * one.nbytes + one.nbytes // 2)  # two fit
    query = vectors[0]

    async def search(user: str) -> None:
        await index.search(tenant(user=user), query, model=MODEL, k=1, version="v1")

    await search("U1")
    await search("U2")
    await search("U1")  # U1 is now the most recently used
    assert index.loads == 2
    await search("U3")  # evicts U2, the least recently used
    assert index.loads == 3
    await search("U1")
    await search("U3")
    assert index.loads == 3
    await search("U2")  # was evicted: reloaded (and evicts U1)
    assert index.loads == 4
    await search("U1")
    assert index.loads == 5
    assert index.tenants == 2
    assert index.nbytes <= 2 * one.nbytes + one.nbytes // 2


# --- lexical candidates (issue 16) ------------------------------------------------------------


async def test_a_rare_query_word_makes_its_row_a_candidate_over_common_ones(
    rng: np.random.Generator,
) -> None:
    # 300 rows hold the common word "trip", one holds the rare "pottery"; every cosine is
    # low for the rare row. With k = 5 lexical candidates, the rare row must be one of them:
    # rows are chosen by the IDF of the terms they hold, not by cosine among every holder.
    matrix = unit_rows(rng, 302)
    query = matrix[0]
    rows = [row("q", matrix[0])]
    rows += [
        MemoryRow(
            vector_id=f"trip{i}",
            scope=ScopeFields(AGENT, "U1", thread_id="T1", mode=None, hai_id=None),
            content=f"a trip number {i}",
            embedding=matrix[1 + i],
            embedding_model=MODEL,
            source="session",
            created_at=T0,
        )
        for i in range(300)
    ]
    rows.append(
        MemoryRow(
            vector_id="rare",
            scope=ScopeFields(AGENT, "U1", thread_id="T1", mode=None, hai_id=None),
            content="the pottery trip",
            embedding=-query,  # the worst cosine there is
            embedding_model=MODEL,
            source="session",
            created_at=T0,
        )
    )
    index = ExactVectorIndex(await store_of(rows))

    found = await index.search(tenant(), query, model=MODEL, k=5, terms=all_terms("pottery trip"))

    ids = [r.vector_id for r, _ in found]
    assert "rare" in ids
    assert len(ids) <= 10  # k by cosine, plus at most k lexical


async def test_a_reload_tokenises_an_edited_text_again(rng: np.random.Generator) -> None:
    # a reload reuses the terms of each row whose text is unchanged; an edited one (same
    # vector id) must be found by its new words only (the cosine top 1 is always r0)
    matrix = unit_rows(rng, 3)
    query = matrix[0]
    rows = [
        MemoryRow(
            vector_id=f"r{i}",
            scope=ScopeFields(AGENT, "U1", thread_id="T1", mode=None, hai_id=None),
            content=text,
            embedding=matrix[i],
            embedding_model=MODEL,
            source="fact",
            created_at=T0,
        )
        for i, text in enumerate(["alpha", "bravo", "the pottery class"])
    ]
    store = await store_of(rows)
    index = ExactVectorIndex(store)

    async def holders(word: str, version: str) -> set[str]:
        found = await index.search(
            tenant(), query, model=MODEL, k=1, version=version, terms=all_terms(word)
        )
        return {r.vector_id for r, _ in found if word in r.content}

    assert await holders("pottery", "v1") == {"r2"}
    store.put(replace(rows[2], content="the violin lesson"))
    assert await holders("violin", "v2") == {"r2"}
    assert await holders("pottery", "v3") == set()
    assert (index.loads, index.deltas) == (1, 2)


# --- deltas (issue 28) --------------------------------------------------------------------------


async def test_deltas_through_many_deletes_compact_and_still_find_every_live_row(
    rng: np.random.Generator,
) -> None:
    matrix = unit_rows(rng, 300)
    store = await store_of([row(f"r{i:03d}", v) for i, v in enumerate(matrix)])
    index = ExactVectorIndex(store, margin_ms=0)
    await index.search(tenant(), matrix[0], model=MODEL, k=5, version="v0")
    gone = {f"r{i:03d}" for i in range(0, 300, 3)} | {f"r{i:03d}" for i in range(1, 300, 3)}
    for n, vid in enumerate(sorted(gone)):
        found = store.row(vid)
        assert found is not None
        store.put(replace(found, metadata={"status": "deleted"}))
        if n % 25 == 0:  # a search now and then: several deltas, each with deletes
            await index.search(tenant(), matrix[0], model=MODEL, k=5, version=f"d{n}")
    for i in (2, 299, 149):  # each live row (i % 3 == 2) is still its own best match
        [(best, cosine), *_] = await index.search(
            tenant(), matrix[i], model=MODEL, k=3, version="end"
        )
        assert (best.vector_id, round(cosine or 0, 4)) == (f"r{i:03d}", 1.0)
    state = next(iter(index._states.values())).rows
    assert state.size == 100
    assert state.used < 200  # the dead slots were compacted away
    assert index.loads == 1
    live = await index.search(tenant(), matrix[2], model=MODEL, k=300, version="end")
    fresh = await ExactVectorIndex(store).search(tenant(), matrix[2], model=MODEL, k=300)
    # the same rows in the same order; cosines to the matrix product's rounding (its blocking
    # differs with a row's position)
    assert [r.vector_id for r, _ in live] == [r.vector_id for r, _ in fresh]
    assert [c for _, c in live] == pytest.approx([c for _, c in fresh], abs=1e-6)
    assert len(live) == 100


def test_the_byte_estimate_follows_edits_and_removals(rng: np.random.Generator) -> None:
    matrix = unit_rows(rng, 3)
    rows = [row(f"r{i}", v) for i, v in enumerate(matrix)]
    state = TenantRows(MODEL, DIM)
    state.apply(rows)
    edited = replace(rows[1], content="a much longer text than before " * 20)
    state.apply([edited])
    state.apply([replace(edited, content="short")])
    state.apply([replace(rows[2], metadata={"status": "deleted"})])
    last = replace(rows[1], content="the final text")
    state.apply([last])

    fresh = TenantRows(MODEL, DIM)  # the same live rows, loaded at once (same capacity)
    fresh.apply([rows[0], last])
    assert state.nbytes == fresh.nbytes
