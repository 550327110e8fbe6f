"""Maintenance over the `memory` collection: consolidate, decay, cleanup (reference §10.3-§10.5,
with its bugs fixed).

* **consolidate** works per agent *and user* (and mode/hai): duplicates are rows of one tenant
  with the same normalised content and source; among the **active** ones the newest stays and
  the older ones are superseded by it. Deleted rows are never touched and never make an active
  copy lose (fixes §16.5: the reference compared across users and ignored status).
* **decay_update** recomputes `decayScore = 0.5^(age/half-life)` for active rows only, in
  batches, so it never undoes a delete (decay 0) or a supersede (fixes §16.16); pinned rows are
  not decayed.
* **cleanup** deletes rows older than the cutoff whose decay fell below the floor, unless
  pinned, plus tombstones (soft-deleted rows) older than the cutoff. Transcripts are kept: the
  log and the transcripts are the source of truth everything else is rebuilt from.

Given a `Ledger` (`engine.history`), consolidate records each row it supersedes and
cleanup each row it purges, caused by the job.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.decay import DEFAULT_HALF_LIFE_DAYS, MS_PER_DAY, decay_multiplier
from engine.history import Ledger, of_row, validity
from engine.ports import MemoryStore
from engine.records import MemoryRow, ScopeFields
from engine.scoping import TenantFilter


@dataclass(frozen=True, slots=True)
class Purged:
    """A row a cleanup removed: its id and tenant (for its history)."""

    vector_id: str
    scope: ScopeFields


class MaintenanceStore(Protocol):
    async def users_of(self, agent: str) -> list[str | None]:
        """Distinct `userAddress` values of the agent's rows (None = agent-level rows)."""
        ...

    async def agents(self) -> list[str]: ...

    async def set_decay(self, scores: Sequence[tuple[str, float]], at: int) -> int:
        """Write decay scores, only on rows that are still active and not pinned."""
        ...

    async def purge(self, cutoff: int, min_decay: float) -> list[Purged]:
        """Delete unpinned rows created before `cutoff` with decay below `min_decay`, and
        soft-deleted rows created before `cutoff`. Returns the rows deleted."""
        ...


@dataclass(frozen=True, slots=True)
class Consolidated:
    users: int
    superseded: int


def fingerprint(row: MemoryRow) -> str:
    text = " ".join(row.content.lower().split())
    parts = f"{text}::{row.source}::{row.scope.mode or '_'}::{row.scope.hai_id or '_'}"
    return hashlib.sha256(parts.encode()).hexdigest()[:20]


async def consolidate(
    memory: MemoryStore,
    maintenance: MaintenanceStore,
    agent: str,
    *,
    ledger: Ledger | None = None,
    at: int = 0,
) -> Consolidated:
    """Supersede the older duplicates of each tenant of `agent` by the newest (see the module
    doc); each is recorded in the `ledger` as `superseded` at `at` (the job's time)."""
    users = await maintenance.users_of(agent)
    superseded = 0
    for user in users:
        rows = await memory.active_rows(TenantFilter(agent_wallet=agent, user_address=user))
        groups: dict[str, list[MemoryRow]] = {}
        for row in rows:
            groups.setdefault(fingerprint(row), []).append(row)
        for same in groups.values():
            if len(same) < 2:
                continue
            same.sort(key=lambda r: (r.created_at, r.vector_id), reverse=True)
            newest = same[0]
            for older in same[1:]:
                await memory.set_validity(older.vector_id, newest.created_at, newest.vector_id)
                superseded += 1
                if ledger is not None:
                    details = {
                        **validity(older, newest.created_at, newest.vector_id),
                        "reason": "duplicate",
                    }
                    await ledger.note(
                        [of_row(older, "superseded", ledger.cause, at, details=details)]
                    )
    return Consolidated(len(users), superseded)


@dataclass(frozen=True, slots=True)
class Decayed:
    updated: int
    average: float


async def decay_update(
    memory: MemoryStore,
    maintenance: MaintenanceStore,
    *,
    agents: Sequence[str],
    now: int,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
    batch: int = 500,
) -> Decayed:
    updated, total = 0, 0.0
    for agent in agents:
        for user in await maintenance.users_of(agent):
            rows = [
                r
                for r in await memory.active_rows(
                    TenantFilter(agent_wallet=agent, user_address=user)
                )
                if r.metadata.get("retention") != "pinned"
            ]
            scores = [
                (r.vector_id, decay_multiplier(r.created_at, now, half_life_days)) for r in rows
            ]
            for start in range(0, len(scores), batch):
                chunk = scores[start : start + batch]
                updated += await maintenance.set_decay(chunk, now)
                total += sum(score for _, score in chunk)
    return Decayed(updated, total / updated if updated else 0.0)


async def cleanup(
    maintenance: MaintenanceStore,
    *,
    now: int,
    older_than_days: float = 90,
    min_decay: float = 0.2,
    ledger: Ledger | None = None,
) -> int:
    """Purge (see the module doc); how many rows. Each is recorded in the `ledger` as
    `purged` at `now`, and what its history said is erased (`Ledger.purged`)."""
    purged = await maintenance.purge(int(now - older_than_days * MS_PER_DAY), min_decay)
    if ledger is not None:
        await ledger.purged([(p.vector_id, p.scope) for p in purged], now)
    return len(purged)
