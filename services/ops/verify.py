"""Compare a rebuilt database with the live one, document by document (`replay --verify`).

Documents are matched by `_id` (every collection the stream writes has natural keys) and
compared field by field, except fields that change without an event: access counters, the
stored decay score (maintenance jobs), and wall-clock stamps of reads. Floats (embeddings,
scores) are compared with a small relative tolerance: the same model on another CPU may round
the last bits differently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pymongo import AsyncMongoClient

from engine.adapters.mongo import (
    MEMORY,
    PATTERNS,
    RELATIONS,
    SESSIONS,
    TRANSCRIPT_TURNS,
    TRANSCRIPTS,
)
from services.runtime import endpoints
from services.settings import Settings
from services.stream.security import mongo_options

COMPARED: Mapping[str, frozenset[str]] = {
    # the turns a head counts (the search's turn windows): absent from heads written before
    TRANSCRIPTS: frozenset({"turns"}),
    TRANSCRIPT_TURNS: frozenset({"seq"}),  # the writer's clock: its order, not its value
    SESSIONS: frozenset({"lastAccessedAt", "rev"}),
    MEMORY: frozenset({"accessCount", "lastAccessedAt", "decayScore", "changedAt"}),
    RELATIONS: frozenset(),
    PATTERNS: frozenset(),
}
"""The collections the stream writes, with the fields that change without an event."""

UNORDERED: Mapping[str, frozenset[str]] = {
    PATTERNS: frozenset({"turnIds"}),
}
"""Lists compared as sets: a pattern's counted turn ids (idempotency bookkeeping) are kept in
the order the turns of its different sessions happened to be processed."""

REL_TOLERANCE = 1e-5


@dataclass(slots=True)
class CollectionDiff:
    name: str
    live: int = 0
    rebuilt: int = 0
    missing: list[str] = field(default_factory=list)
    """Ids live has and the rebuild lacks."""
    extra: list[str] = field(default_factory=list)
    """Ids the rebuild has and live lacks."""
    changed: dict[str, list[str]] = field(default_factory=dict)
    """Id → field paths that differ."""

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or self.changed)


@dataclass(frozen=True, slots=True)
class VerifyReport:
    collections: list[CollectionDiff]

    @property
    def equal(self) -> bool:
        return all(c.equal for c in self.collections)


def differences(live: Any, rebuilt: Any, path: str = "") -> list[str]:
    """Field paths where two documents differ (floats within `REL_TOLERANCE`)."""
    if isinstance(live, Mapping) and isinstance(rebuilt, Mapping):
        found: list[str] = []
        for key in sorted(set(live) | set(rebuilt), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in live or key not in rebuilt:
                found.append(sub)
            else:
                found.extend(differences(live[key], rebuilt[key], sub))
        return found
    if isinstance(live, list) and isinstance(rebuilt, list):
        if len(live) != len(rebuilt):
            return [path]
        pairs = zip(live, rebuilt, strict=True)
        return [path] if any(differences(a, b) for a, b in pairs) else []
    if isinstance(live, float) or isinstance(rebuilt, float):
        if isinstance(live, int | float) and isinstance(rebuilt, int | float):
            same = math.isclose(live, rebuilt, rel_tol=REL_TOLERANCE, abs_tol=1e-9)
            return [] if same else [path]
        return [path]
    return [] if live == rebuilt else [path]


async def compare(
    settings: Settings, live_db: str, rebuilt_db: str, *, agents: Sequence[str] = ()
) -> VerifyReport:
    """Compare every stream-written collection of two databases (of `agents` only, if given)."""
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        endpoints(settings).mongo_uri, retryWrites=False, tz_aware=True, **mongo_options(settings)
    )
    query: dict[str, Any] = {"agentWallet": {"$in": list(agents)}} if agents else {}
    try:
        diffs = []
        for name, volatile in COMPARED.items():
            unordered = UNORDERED.get(name, frozenset())
            live = await _documents(mongo[live_db][name], query, volatile, unordered)
            rebuilt = await _documents(mongo[rebuilt_db][name], query, volatile, unordered)
            diff = CollectionDiff(name, live=len(live), rebuilt=len(rebuilt))
            diff.missing = sorted(set(live) - set(rebuilt))
            diff.extra = sorted(set(rebuilt) - set(live))
            for key in sorted(set(live) & set(rebuilt)):
                changed = differences(live[key], rebuilt[key])
                if changed:
                    diff.changed[key] = changed
            diffs.append(diff)
        return VerifyReport(diffs)
    finally:
        await mongo.close()


async def _documents(
    collection: Any, query: dict[str, Any], volatile: frozenset[str], unordered: frozenset[str]
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    async for doc in collection.find(query):
        found[str(doc["_id"])] = {
            k: sorted(v, key=str) if k in unordered and isinstance(v, list) else v
            for k, v in doc.items()
            if k not in volatile
        }
    return found
