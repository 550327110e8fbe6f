"""Approximate vector search with MongoDB Atlas `$vectorSearch`
(docs/architecture.md#vector-search).

The tenant scope is a **pre-filter** inside `$vectorSearch`, so the ANN candidates are drawn
from the tenant's own rows only (fixes reference §16.2, where the tenant was filtered after the
ANN and small tenants got empty or truncated results). A scope without a user pre-filters on
`userAddress: null`, i.e. user-less rows only (fixes §16.3); this relies on rows storing the
field explicitly, as `MongoMemoryStore.document` does, because Atlas matches `null` only
against an explicit null, not a missing field.

Filter clauses use the full `{"path": {"$eq": value}}` form joined by `$and`, which every Atlas
release accepts (early ones rejected the short `{path: value}` form). Every path in the
pre-filter must be declared a `filter` field of the index: `ATLAS_FILTER_FIELDS`.

Scores: for `cosine` similarity Atlas reports `(1 + cos) / 2` in [0, 1]; `atlas_score_to_cosine`
maps it back to the cosine in [-1, 1] that the exact path reports, so thresholds mean the same
on both paths (reference §16.15).

Documents are read back into `MemoryRow`s with `engine.adapters.mongo`'s
`row_of`, so every Mongo adapter decodes rows identically.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import PyMongoError

from engine.adapters.mongo import row_of, tenant_query
from engine.adapters.mongo.documents import unvector
from engine.errors import DependencyFailed, InputRejected
from engine.filters import NO_FILTERS, Filters, matches, mongo_clauses
from engine.records import INACTIVE_STATUSES, MemoryRow, Vector
from engine.scoping import TenantFilter

Doc = dict[str, Any]

INDEX_NAME = "vector_index"
VECTOR_PATH = "embedding"
SCORE_FIELD = "score"
MAX_CANDIDATES = 10_000
"""Atlas's upper bound on `numCandidates` (a larger value fails the query, §16.29)."""
MIN_CANDIDATES = 100
CANDIDATES_PER_RESULT = 20
"""Atlas recommends `numCandidates` of at least 20 x `limit` for good ANN recall."""

ATLAS_FILTER_FIELDS = (
    "agentWallet",
    "userAddress",
    "mode",
    "haiId",
    "threadId",
    "scopeKind",
    "scopeId",
    "source",
    "metadata.status",
    "metadata.app_id",
    "metadata.retention",
    "metadata.type",
    "embeddingModel",
)
"""The paths declared as `filter` fields of the vector index: the only ones a pre-filter may use."""

_EXTRA_OPERATORS = frozenset({"$eq", "$ne", "$in", "$nin"})
_PROJECTED = (
    "vectorId",
    "agentWallet",
    "userAddress",
    "threadId",
    "mode",
    "haiId",
    "content",
    "invalidAt",
    "supersededBy",
    VECTOR_PATH,
    "embeddingModel",
    "source",
    "createdAt",
    "metadata",
    "decayScore",
    "accessCount",
)


def candidates_for(k: int) -> tuple[int, int]:
    """`(numCandidates, limit)` for `k` results: `numCandidates = min(10000, max(100, 20k))` and
    `limit = min(k, numCandidates)`, so neither can exceed Atlas's cap (fixes §16.29)."""
    if isinstance(k, bool) or k < 1:
        raise InputRejected(f"k must be a positive integer, got {k!r}")
    candidates = min(MAX_CANDIDATES, max(MIN_CANDIDATES, CANDIDATES_PER_RESULT * k))
    return candidates, min(k, candidates)


def _is_primitive(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _extra_condition(path: str, value: object) -> object:
    if path not in ATLAS_FILTER_FIELDS:
        raise InputRejected(f"filter {path!r} is not a vector index filter field")
    if _is_primitive(value):
        return {"$eq": value}
    if isinstance(value, Mapping) and len(value) == 1:
        op, operand = next(iter(value.items()))
        if op in ("$eq", "$ne") and _is_primitive(operand):
            return {op: operand}
        if (
            op in _EXTRA_OPERATORS
            and isinstance(operand, list | tuple)
            and operand
            and all(_is_primitive(v) for v in operand)
        ):
            return {op: list(operand)}
    raise InputRejected(
        f"filter {path!r}: expected a value or one of {sorted(_EXTRA_OPERATORS)} with plain values"
    )


def atlas_prefilter(
    where: TenantFilter,
    *,
    sources: Sequence[str] | None,
    model: str | None = None,
    extra: Mapping[str, object] | None = None,
    include_superseded: bool = False,
) -> Doc:
    """The `$vectorSearch.filter`: the tenant (`agentWallet`, `userAddress` with `None` meaning
    user-less rows only, or'ed with the agent's user-less rows of `where.shared_sources` when
    the filter is widened, `mode`/`haiId`/`threadId` when set), active rows only, `source` among
    `sources` when given, `embeddingModel` when given, then `extra` clauses (values as produced
    by `engine.filters.mongo_clauses`). Clauses are ANDed, so `extra` can only narrow."""
    users = where.users
    user: Doc = {"userAddress": {"$eq": users[0]} if len(users) == 1 else {"$in": list(users)}}
    if where.widened:
        # the agent's user-less rows of the shared sources (knowledge) as well
        shared = {
            "$and": [
                {"userAddress": {"$eq": None}},
                {"source": {"$in": list(where.shared_sources)}},
            ]
        }
        user = {"$or": [user, shared]}
    clauses: list[Doc] = [{"agentWallet": {"$eq": where.agent_wallet}}, user]
    modes = where.modes
    if modes is not None:
        clauses.append({"mode": {"$eq": modes[0]} if len(modes) == 1 else {"$in": list(modes)}})
    for path, value in (("haiId", where.hai_id), ("threadId", where.thread_id)):
        if value is not None:
            clauses.append({path: {"$eq": value}})
    hidden = ["deleted"] if include_superseded else list(INACTIVE_STATUSES)
    clauses.append({"metadata.status": {"$nin": hidden}})
    if sources is not None:
        if not sources:
            raise InputRejected("sources must not be empty (None means every source)")
        clauses.append({"source": {"$in": list(sources)}})
    if model is not None:
        clauses.append({"embeddingModel": {"$eq": model}})
    clauses.extend({path: _extra_condition(path, cond)} for path, cond in (extra or {}).items())
    return {"$and": clauses}


def _query_vector(query_vector: Sequence[float] | npt.NDArray[np.floating[Any]]) -> list[float]:
    values = [float(x) for x in query_vector]
    if not values or not all(math.isfinite(x) for x in values):
        raise InputRejected("the query vector must be non-empty and finite")
    return values


def atlas_pipeline(
    where: TenantFilter,
    query_vector: Sequence[float] | npt.NDArray[np.floating[Any]],
    *,
    k: int,
    sources: Sequence[str] | None,
    extra: Mapping[str, object] | None = None,
    index: str = INDEX_NAME,
    model: str | None = None,
    include_superseded: bool = False,
) -> list[Doc]:
    """The aggregation: `$vectorSearch` pre-filtered by `atlas_prefilter` (results best first),
    then a `$project` of the fields a `MemoryRow` needs plus `score` (Atlas's score, see
    `atlas_score_to_cosine`)."""
    num_candidates, limit = candidates_for(k)
    search: Doc = {
        "index": index,
        "path": VECTOR_PATH,
        "queryVector": _query_vector(query_vector),
        "numCandidates": num_candidates,
        "limit": limit,
        "filter": atlas_prefilter(
            where, sources=sources, model=model, extra=extra, include_superseded=include_superseded
        ),
    }
    project: Doc = {field: 1 for field in _PROJECTED}
    project[SCORE_FIELD] = {"$meta": "vectorSearchScore"}
    return [{"$vectorSearch": search}, {"$project": project}]


def atlas_score_to_cosine(score: float) -> float:
    """Cosine similarity in [-1, 1] of an Atlas `cosine` score `(1 + cos) / 2` in [0, 1]."""
    return 2.0 * score - 1.0


class AtlasVectorIndex:
    """ANN search over the `memory` collection through its Atlas vector index.

    Needs a `cosine` index made by `ensure_vector_index` with the embedder's dimension.
    """

    def __init__(self, collection: AsyncCollection[Doc], *, index: str = INDEX_NAME) -> None:
        self._col = collection
        self._index = index

    async def prepare(
        self,
        where: TenantFilter,
        *,
        model: str,
        dim: int,
        version: str | None = None,
        shared: str | None = None,
    ) -> None:
        """Nothing to catch up with: the server's index follows the writes itself."""

    def accessed(self, vector_ids: Sequence[str]) -> None:
        """Nothing held here: the server reads the counts with the rows."""

    async def vectors(
        self,
        where: TenantFilter,
        vector_ids: Sequence[str],
        *,
        model: str,
        dim: int,
        version: str | None = None,
        shared: str | None = None,
    ) -> dict[str, Vector]:
        """Read by `_id`, the tenant's fields and the model: one query, vectors only."""
        if not vector_ids:
            return {}
        query = {
            **tenant_query(where),
            "_id": {"$in": list(dict.fromkeys(vector_ids))},
            "embeddingModel": model,
            "embeddingDim": dim,
            "metadata.status": {"$ne": "deleted"},
        }
        try:
            cursor = self._col.find(query, {"embedding": 1})
            docs = await cursor.to_list(length=None)
        except PyMongoError as exc:
            raise DependencyFailed(f"vector read failed: {exc}") from exc
        return {str(d["_id"]): unvector(d["embedding"]) for d in docs if "embedding" in d}

    async def search(
        self,
        where: TenantFilter,
        query: Sequence[float] | npt.NDArray[np.floating[Any]],
        *,
        model: str,
        k: int,
        sources: Sequence[str] | None = None,
        version: str | None = None,
        shared: str | None = None,
        filters: Filters = NO_FILTERS,
        as_of: int | None = None,
        terms: Sequence[str] = (),
    ) -> list[tuple[MemoryRow, float | None]]:
        """Up to `k` active rows `where` admits, embedded by `model`, as `(row, cosine)` pairs,
        most similar first (cosine in [-1, 1], higher is more similar; never None here:
        pending rows have no `embedding` field, so the vector index does not hold them).
        Approximate: the best row may be missed when the tenant has far more rows than
        `numCandidates`.

        `terms` are not used: lexical candidates need an Atlas Search index (not built here).
        Caller filters on indexed filter fields join the pre-filter; the others are checked
        on the returned rows (and may then leave fewer than `k`).
        `version` (the `VectorIndex` port's reuse token) is ignored: Atlas always searches the
        current data, there is nothing process-local to reuse."""
        if sources is not None and not sources:
            return []
        clauses = mongo_clauses(filters)
        indexed = {k_: v for k_, v in clauses.items() if k_ in ATLAS_FILTER_FIELDS}
        pipeline = atlas_pipeline(
            where,
            query,
            k=k,
            sources=sources,
            index=self._index,
            model=model,
            extra=indexed or None,
            include_superseded=as_of is not None,
        )
        try:
            cursor = await self._col.aggregate(pipeline)
            docs = await cursor.to_list(length=None)
        except PyMongoError as exc:
            raise DependencyFailed(f"vector search failed: {exc}") from exc
        hits = [(row_of(d), atlas_score_to_cosine(float(d[SCORE_FIELD]))) for d in docs]
        if len(indexed) < len(clauses):
            hits = [(row, score) for row, score in hits if matches(filters, row.view())]
        if as_of is not None:
            hits = [(row, score) for row, score in hits if row.valid_at(as_of)]
        hits.sort(key=lambda hit: hit[1], reverse=True)
        return [(row, score) for row, score in hits]
