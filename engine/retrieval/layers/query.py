"""The query every layer search receives."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np

from engine.filters import NO_FILTERS, Filters, matches, narrow
from engine.ports import Vector
from engine.retrieval.lexical import terms
from engine.retrieval.reads import ReadMemo
from engine.retrieval.relevance import RelevancePolicy
from engine.scoping import TenantFilter, tenant_filter
from schemas.scope import Scope

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ReadTokens:
    """The namespace tokens of one request (None: the counters are unavailable, nothing is
    kept). `thread` and `tenant` change with every write to the scope (its thread chain, its
    user's chain); the others only with a write of their layers (`engine.scoping.
    TOKEN_FAMILIES`)."""

    thread: str | None = None
    tenant: str | None = None
    patterns: str | None = None
    archives: str | None = None
    relations: str | None = None
    shared: str | None = None
    """The agent's user-less rows' counter (`engine.scoping.shared_chain`)."""


NO_TOKENS = ReadTokens()


@dataclass(frozen=True)
class LayerQuery:
    """`vector` is the query embedded once per request by `model` (unit length), or None.

    It may still be on its way: a layer fetches its candidates first, then calls
    `with_vector()`, so the database reads overlap the embedding."""

    scope: Scope
    query: str
    limit: int
    vector: Vector | None
    model: str
    now_ms: int
    relevance: RelevancePolicy = field(default_factory=RelevancePolicy)
    filters: Filters = NO_FILTERS
    """The caller's validated filters (all layers; each layer keeps the ones it honours)."""
    as_of: int | None = None
    """Recall what was true at this time (ms); None = now (current facts only)."""
    pending: Awaitable[Vector | None] | None = None
    """The embedding in progress (shared by every layer of the request)."""
    reads: ReadMemo | None = None
    """The search's in-process tier for store reads (`engine.retrieval.reads`), or None."""
    tokens: ReadTokens = field(default_factory=lambda: NO_TOKENS)
    """The namespace tokens the in-process tier keeps each read under."""
    dimension: int | None = None
    """The dimension of `model`'s vectors, when known before the query is embedded: the
    memory layers then start their index's catch-up with the store at once."""
    fill: bool = False
    """The caller gave only a budget, to be filled (issue 16): a memory layer's pool then
    keeps what plain cosine top-`limit` would show, below the relevance floors too."""

    async def read(
        self, key: Hashable, load: Callable[[], Awaitable[T]], *, token: str | None
    ) -> T:
        """A store read, through the in-process tier when the search has one, kept under
        `token` (one of `self.tokens`: the counter a write of what it reads bumps), so a
        write that bumps that namespace is never answered from memory."""
        if self.reads is None:
            return await load()
        return await self.reads.read(key, token, load)

    async def with_vector(self) -> LayerQuery:
        """This query once its vector is known (None if the embedding failed)."""
        if self.pending is None:
            return self
        return replace(self, vector=await self.pending, pending=None)

    def where(
        self,
        layer: str,
        *,
        durable: bool,
        shared: bool = False,
        shared_sources: tuple[str, ...] = (),
    ) -> TenantFilter | None:
        """The layer's read filter with the tenant-path filters folded in; None when the
        filters contradict the scope (the layer then returns nothing). `shared` /
        `shared_sources`: see `TenantFilter`."""
        base = tenant_filter(
            self.scope, durable=durable, shared=shared, shared_sources=shared_sources
        )
        return narrow(base, self.filters.applies_to(layer))

    def keep(self, layer: str, view: Mapping[str, object]) -> bool:
        """Whether a candidate (as a document view) passes the layer's other filters."""
        own = self.filters.applies_to(layer)
        return not own or matches(own, view)

    def existed(self, at: int | None) -> bool:
        """Whether something made at `at` (ms) existed at `as_of`: every layer honours
        `as_of` (issue 17 §2), so a question about the past never sees a later memory."""
        return self.as_of is None or (at is not None and at <= self.as_of)

    @property
    def terms(self) -> list[str]:
        return terms(self.query)

    def cosine(self, embedding: Vector | None, model: str | None) -> float | None:
        """Cosine with a stored vector; None if it is missing or from another vector space."""
        if self.vector is None or embedding is None or model != self.model:
            return None
        if embedding.shape != self.vector.shape:
            return None
        return float(np.dot(embedding, self.vector))
