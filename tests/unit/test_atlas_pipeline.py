"""The Atlas `$vectorSearch` pipeline, pinned without a server: the tenant is a pre-filter
(§16.2), a user-less scope sees user-less rows only (§16.3), the candidate counts stay within
Atlas's cap (§16.29) and the index follows the embedder's dimension (§16.25)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pymongo.errors import OperationFailure

from engine.adapters.atlas_index import search_unsupported, vector_index_definition
from engine.adapters.atlas_vectors import (
    ATLAS_FILTER_FIELDS,
    MAX_CANDIDATES,
    atlas_pipeline,
    atlas_prefilter,
    atlas_score_to_cosine,
    candidates_for,
)
from engine.errors import InputRejected
from engine.filters import mongo_clauses, parse_filters
from engine.scoping import TenantFilter

USER = TenantFilter(agent_wallet="agent-1", user_address="u1", mode="local", hai_id="h1")
USERLESS = TenantFilter(agent_wallet="agent-1", user_address=None)
VECTOR = [0.6, 0.8, 0.0]


def stages(pipeline: list[dict[str, Any]]) -> list[str]:
    return [next(iter(stage)) for stage in pipeline]


def search_stage(pipeline: list[dict[str, Any]]) -> dict[str, Any]:
    stage = pipeline[0]["$vectorSearch"]
    assert isinstance(stage, dict)
    return stage


def clauses(prefilter: dict[str, Any]) -> list[tuple[str, Any]]:
    """The `$and` clauses of a pre-filter as (path, condition) pairs."""
    assert list(prefilter) == ["$and"]
    out: list[tuple[str, Any]] = []
    for clause in prefilter["$and"]:
        ((path, condition),) = clause.items()
        out.append((path, condition))
    return out


def test_pipeline_is_vector_search_then_project_with_the_score() -> None:
    pipeline = atlas_pipeline(USER, VECTOR, k=5, sources=None)
    assert stages(pipeline) == ["$vectorSearch", "$project"]
    search = search_stage(pipeline)
    assert search["index"] == "vector_index"
    assert search["path"] == "embedding"
    assert search["queryVector"] == VECTOR
    project = pipeline[1]["$project"]
    assert project["score"] == {"$meta": "vectorSearchScore"}
    for needed in ("vectorId", "agentWallet", "userAddress", "content", "embedding", "metadata"):
        assert project[needed] == 1


def test_pipeline_prefilters_tenant_fixes_16_2() -> None:
    pipeline = atlas_pipeline(USER, VECTOR, k=5, sources=["fact", "session"], model="m-1")
    assert stages(pipeline)[0] == "$vectorSearch"  # no $match after the ANN decides the tenant
    assert "$match" not in stages(pipeline)
    assert clauses(search_stage(pipeline)["filter"]) == [
        ("agentWallet", {"$eq": "agent-1"}),
        ("userAddress", {"$eq": "u1"}),
        ("mode", {"$eq": "local"}),
        ("haiId", {"$eq": "h1"}),
        ("metadata.status", {"$nin": ["deleted", "superseded"]}),
        ("source", {"$in": ["fact", "session"]}),
        ("embeddingModel", {"$eq": "m-1"}),
    ]


def test_prefilter_userless_scope_matches_only_userless_rows_fixes_16_3() -> None:
    found = dict(clauses(atlas_prefilter(USERLESS, sources=None)))
    assert found["userAddress"] == {"$eq": None}
    assert "mode" not in found
    assert "haiId" not in found
    assert "threadId" not in found
    assert "source" not in found


def test_prefilter_keeps_a_thread_when_the_tenant_filter_has_one() -> None:
    where = TenantFilter(agent_wallet="a", user_address=None, thread_id="t-1")
    assert ("threadId", {"$eq": "t-1"}) in clauses(atlas_prefilter(where, sources=None))


@pytest.mark.parametrize(
    ("k", "num_candidates", "limit"),
    [(1, 100, 1), (5, 100, 5), (500, 10_000, 500), (100_000, 10_000, 10_000)],
)
def test_candidate_counts_are_clamped_fixes_16_29(k: int, num_candidates: int, limit: int) -> None:
    assert candidates_for(k) == (num_candidates, limit)
    search = search_stage(atlas_pipeline(USER, VECTOR, k=k, sources=None))
    assert search["numCandidates"] == num_candidates
    assert search["limit"] == limit
    assert search["limit"] <= search["numCandidates"] <= MAX_CANDIDATES


@pytest.mark.parametrize("k", [0, -1, True])
def test_non_positive_k_is_rejected(k: int) -> None:
    with pytest.raises(InputRejected, match="k must be"):
        atlas_pipeline(USER, VECTOR, k=k, sources=None)


@pytest.mark.parametrize("dimensions", [3, 384, 1024, 3072])
def test_index_definition_dimensions_follow_the_argument_fixes_16_25(dimensions: int) -> None:
    definition = vector_index_definition(dimensions)
    vector, *filters = definition["fields"]
    assert vector == {
        "type": "vector",
        "path": "embedding",
        "numDimensions": dimensions,
        "similarity": "cosine",
    }
    assert filters == [{"type": "filter", "path": p} for p in ATLAS_FILTER_FIELDS]


def test_index_definition_validates_its_arguments() -> None:
    assert vector_index_definition(8, "dotProduct")["fields"][0]["similarity"] == "dotProduct"
    for bad in (0, 8193):
        with pytest.raises(ValueError, match="dimensions"):
            vector_index_definition(bad)
    with pytest.raises(ValueError, match="similarity"):
        vector_index_definition(8, "manhattan")


def test_filter_fields_cover_tenant_status_source_and_model() -> None:
    assert set(ATLAS_FILTER_FIELDS) >= {
        "agentWallet",
        "userAddress",
        "mode",
        "haiId",
        "threadId",
        "source",
        "metadata.status",
        "embeddingModel",
    }
    assert len(set(ATLAS_FILTER_FIELDS)) == len(ATLAS_FILTER_FIELDS)


@pytest.mark.parametrize(
    ("where", "sources", "extra"),
    [
        (USER, ["fact"], {"metadata.app_id": "app", "scopeKind": {"$in": ["local"]}}),
        (USERLESS, None, None),
        (TenantFilter("a", "u", "global", None, "t"), ["session"], {"metadata.type": "x"}),
    ],
)
def test_only_index_filter_fields_are_used_in_the_filter(
    where: TenantFilter, sources: list[str] | None, extra: dict[str, Any] | None
) -> None:
    search = search_stage(
        atlas_pipeline(where, VECTOR, k=3, sources=sources, extra=extra, model="m")
    )
    used = {path for path, _ in clauses(search["filter"])}
    assert used <= set(ATLAS_FILTER_FIELDS)


def test_extra_clauses_from_caller_filters_are_anded_and_cannot_widen() -> None:
    filters = parse_filters({"source": ["fact", "knowledge"], "app_id": "app"})
    prefilter = atlas_prefilter(USER, sources=["fact", "session"], extra=mongo_clauses(filters))
    found = clauses(prefilter)
    # the caller's source list is ANDed with the layer's, never replacing it
    assert ("source", {"$in": ["fact", "session"]}) in found
    assert ("source", {"$in": ["fact", "knowledge"]}) in found
    assert ("metadata.app_id", {"$eq": "app"}) in found
    assert found[:2] == [("agentWallet", {"$eq": "agent-1"}), ("userAddress", {"$eq": "u1"})]


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"metadata.topic": "x"}, "not a vector index filter field"),
        ({"content": "x"}, "not a vector index filter field"),
        ({"metadata.app_id": {"$regex": ".*"}}, "expected a value"),
        ({"metadata.app_id": {"$in": []}}, "expected a value"),
        ({"metadata.app_id": {"$in": [{"$gt": 1}]}}, "expected a value"),
        ({"metadata.app_id": {"$eq": "a", "$ne": "b"}}, "expected a value"),
        ({"metadata.app_id": ["a"]}, "expected a value"),
    ],
)
def test_extra_clauses_are_validated(extra: dict[str, Any], reason: str) -> None:
    with pytest.raises(InputRejected, match=reason):
        atlas_prefilter(USER, sources=None, extra=extra)


def test_empty_sources_are_rejected_and_query_vectors_must_be_finite() -> None:
    with pytest.raises(InputRejected, match="sources"):
        atlas_prefilter(USER, sources=[])
    with pytest.raises(InputRejected, match="query vector"):
        atlas_pipeline(USER, [], k=1, sources=None)
    with pytest.raises(InputRejected, match="query vector"):
        atlas_pipeline(USER, [0.1, float("nan")], k=1, sources=None)


def test_numpy_query_vectors_become_plain_floats() -> None:
    vector = np.asarray(VECTOR, dtype=np.float32)
    sent = search_stage(atlas_pipeline(USER, vector, k=1, sources=None))["queryVector"]
    assert all(type(x) is float for x in sent)
    assert sent == pytest.approx(VECTOR)


@pytest.mark.parametrize(
    ("score", "cosine"), [(1.0, 1.0), (0.5, 0.0), (0.0, -1.0), (0.6, 0.2), (0.2, -0.6)]
)
def test_atlas_score_maps_back_to_cosine(score: float, cosine: float) -> None:
    # Atlas reports (1 + cos) / 2: the reference's 0.2 threshold only rejected cos < -0.6 (§16.15)
    assert atlas_score_to_cosine(score) == pytest.approx(cosine)


SECANTUS_SAID = (
    "Using Atlas Search Database Commands and the $listSearchIndexes aggregation stage requires "
    "additional configuration. Please connect to Atlas or an Atlas-compatible deployment to use "
    "this feature."
)


@pytest.mark.parametrize(
    ("code", "message", "unsupported"),
    [
        (115, SECANTUS_SAID, True),  # what the local SecantusDB answers
        (31082, "Using $vectorSearch requires additional configuration", True),
        (59, "no such command: 'createSearchIndexes'", True),
        (None, SECANTUS_SAID, True),
        (8, "Index already exists", False),
        (13, "not authorized on db to execute command", False),
        (2, "Path 'metadata.topic' needs to be indexed as filter", False),
    ],
)
def test_search_unsupported_tells_a_missing_feature_from_a_failure(
    code: int | None, message: str, unsupported: bool
) -> None:
    exc = OperationFailure(message, code=code, details={"errmsg": message, "code": code})
    assert search_unsupported(exc) is unsupported
