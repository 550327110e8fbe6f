"""Invalidation: a write bumps the namespace counters of the scopes it wrote
(`engine.scoping.invalidation_keys`), so every query-cache entry and in-process read kept
under their old tokens is never used again. The invalidation group bumps a batch's counters
in one round trip (`invalidate_many`); a request that wrote bumps its own before it replies
(read-your-writes)."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from engine.ports import QueryCache
from engine.retrieval.search import SearchPolicy
from engine.scoping import invalidation_keys
from schemas.scope import Scope


async def invalidate(
    cache: QueryCache,
    scope: Scope,
    policy: SearchPolicy | None = None,
    layers: Collection[str] | None = None,
) -> int:
    """Bump exactly the written scope's namespace chain (never the global key), and the
    chains of the token families the written `layers` feed (None: every family; see
    `engine.scoping.invalidation_keys`)."""
    return await invalidate_many(cache, [(scope, layers)], policy)


async def invalidate_many(
    cache: QueryCache,
    writes: Iterable[tuple[Scope, Collection[str] | None]],
    policy: SearchPolicy | None = None,
) -> int:
    """`invalidate` for each (scope, layers) of `writes` in one `bump`: every counter their
    chains name, each once (the scopes of one agent share its agent-level counters), so a
    batch costs the cache one round trip, not one per scope. Bumped once or ten times, a
    counter moves forward and every token it is part of changes. Returns how many counters
    were bumped."""
    keys = list(
        dict.fromkeys(k for scope, layers in writes for k in invalidation_keys(scope, layers))
    )
    if not keys:
        return 0
    ttl = (policy or SearchPolicy()).namespace_ttl_seconds
    return await cache.bump(keys, ttl)
