"""In-memory implementations of every port, for unit tests of the engine.

They follow the same contracts as the real adapters (the contract suite in
`tests/contract/` runs against both), including idempotent appends and tenant filtering.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from engine.ports import InputType, Vector, VectorStats
from engine.records import (
    INACTIVE_STATUSES,
    ArchiveRecord,
    MemoryRow,
    PatternRecord,
    RelationRecord,
    StoredMessage,
    Transcript,
    TranscriptAppend,
    WorkingAppend,
    WorkingSession,
)
from engine.scoping import TenantFilter
from engine.upkeep.jobs import JobRecord

WORKING_TURN_VECTORS = 6
"""Turn vectors kept per working buffer (about the turns its 12 lines come from)."""


class InMemoryTranscriptStore:
    def __init__(self) -> None:
        self._docs: dict[str, Transcript] = {}
        self._turns: dict[str, set[str]] = {}

    async def append(self, turn: TranscriptAppend) -> bool:
        key = turn.scope.document_key(turn.session_id)
        seen = self._turns.setdefault(key, set())
        if turn.turn_id in seen:
            return False
        seen.add(turn.turn_id)
        old = self._docs.get(key)
        messages: list[StoredMessage] = [*(old.messages if old else []), *turn.messages]
        messages.sort(key=lambda m: m.timestamp)
        self._docs[key] = Transcript(
            session_id=turn.session_id,
            scope=old.scope if old else turn.scope,
            messages=messages,
            summary=turn.summary if turn.summary is not None else (old.summary if old else None),
            token_count=(old.token_count if old else 0) + turn.token_count,
            created_at=min(turn.at, old.created_at) if old else turn.at,
            updated_at=max(turn.at, old.updated_at) if old else turn.at,
            turn_vectors=[
                *(old.turn_vectors if old else []),
                *([turn.vector] if turn.vector else []),
            ],
        )
        return True

    async def recent(self, where: TenantFilter, limit: int) -> list[Transcript]:
        docs = [d for d in self._docs.values() if where.admits(d.scope)]
        docs.sort(key=lambda d: (-d.updated_at, d.session_id))
        return docs[:limit]

    async def of_session(self, where: TenantFilter, session_id: str) -> Transcript | None:
        docs = [
            d for d in self._docs.values() if d.session_id == session_id and where.admits(d.scope)
        ]
        return max(docs, key=lambda d: d.updated_at, default=None)

    async def count(self, agent_wallet: str, user_address: str | None = None) -> int:
        return sum(
            1
            for d in self._docs.values()
            if d.scope.agent_wallet == agent_wallet
            and (user_address is None or d.scope.user_address == user_address)
        )


class InMemoryWorkingStore:
    def __init__(self) -> None:
        self._docs: dict[str, WorkingSession] = {}
        self._turns: dict[str, list[str]] = {}

    async def append(self, lines: WorkingAppend, keep: int) -> bool:
        key = lines.scope.document_key(lines.session_id)
        seen = self._turns.setdefault(key, [])
        if lines.turn_id in seen:
            return False
        seen.append(lines.turn_id)
        old = self._docs.get(key)
        newest_first = [*reversed(lines.lines), *(old.lines if old else [])][:keep]
        self._docs[key] = WorkingSession(
            session_id=lines.session_id,
            scope=old.scope if old else lines.scope,
            lines=newest_first,
            state={**(old.state if old else {}), **lines.state},
            last_accessed_at=max(lines.at, old.last_accessed_at) if old else lines.at,
            created_at=min(lines.at, old.created_at) if old else lines.at,
            turn_vectors=[
                *(old.turn_vectors if old else []),
                *([lines.vector] if lines.vector else []),
            ][-WORKING_TURN_VECTORS:],
        )
        return True

    async def recent(self, where: TenantFilter, limit: int) -> list[WorkingSession]:
        docs = [d for d in self._docs.values() if where.admits(d.scope)]
        docs.sort(key=lambda d: (-d.last_accessed_at, d.session_id))
        return docs[:limit]


class InMemoryMemoryStore:
    def __init__(self) -> None:
        self._rows: dict[str, MemoryRow] = {}

    def rows(self) -> list[MemoryRow]:
        """Every row (for in-memory maintenance and tests)."""
        return list(self._rows.values())

    def row(self, vector_id: str) -> MemoryRow | None:
        return self._rows.get(vector_id)

    def put(self, row: MemoryRow) -> None:
        self._rows[row.vector_id] = row

    def drop(self, vector_id: str) -> None:
        self._rows.pop(vector_id, None)

    async def insert_if_absent(self, row: MemoryRow) -> bool:
        if row.vector_id in self._rows:
            return False
        self._rows[row.vector_id] = replace(row, metadata=dict(row.metadata))
        return True

    async def exists(self, vector_id: str) -> bool:
        return vector_id in self._rows

    async def status_of(self, vector_id: str) -> str | None:
        row = self._rows.get(vector_id)
        return None if row is None else row.status

    async def revive(self, vector_id: str, at: int) -> bool:
        row = self._rows.get(vector_id)
        if row is None or row.status != "deleted":
            return False
        self._rows[vector_id] = replace(
            row, created_at=at, metadata={**row.metadata, "status": "active"}
        )
        return True

    async def bump_access(self, vector_ids: Sequence[str], at: int) -> int:
        bumped = 0
        for vector_id in vector_ids:
            row = self._rows.get(vector_id)
            if row is not None:
                self._rows[vector_id] = replace(row, access_count=row.access_count + 1)
                bumped += 1
        return bumped

    async def active_rows(
        self,
        where: TenantFilter,
        *,
        sources: Sequence[str] | None = None,
        include_superseded: bool = False,
    ) -> list[MemoryRow]:
        hidden = ("deleted",) if include_superseded else INACTIVE_STATUSES
        return [
            row
            for row in self._rows.values()
            if where.admits(row.scope)
            and row.status not in hidden
            and (sources is None or row.source in sources)
        ]

    async def stats(self, agent_wallet: str, user_address: str | None = None) -> VectorStats:
        rows = [
            r
            for r in self._rows.values()
            if r.scope.agent_wallet == agent_wallet
            and (user_address is None or r.scope.user_address == user_address)
            and r.status not in INACTIVE_STATUSES
        ]
        if not rows:
            return VectorStats()
        by_source: dict[str, int] = {}
        for r in rows:
            by_source[r.source] = by_source.get(r.source, 0) + 1
        return VectorStats(
            total=len(rows),
            avg_decay_score=sum(r.decay_score for r in rows) / len(rows),
            oldest=min(r.created_at for r in rows),
            newest=max(r.created_at for r in rows),
            by_source=by_source,
        )

    async def slot_rows(self, where: TenantFilter, slot: str) -> list[MemoryRow]:
        return [
            row
            for row in self._rows.values()
            if where.admits(row.scope)
            and row.source == "fact"
            and row.status != "deleted"
            and row.metadata.get("slot") == slot
        ]

    async def set_slot_if_absent(self, vector_id: str, where: TenantFilter, slot: str) -> bool:
        row = self._rows.get(vector_id)
        if (
            row is None
            or row.source != "fact"
            or not where.admits(row.scope)
            or row.metadata.get("slot") is not None
        ):
            return False
        self._rows[vector_id] = replace(row, metadata={**row.metadata, "slot": slot})
        return True

    async def set_validity(
        self, vector_id: str, invalid_at: int | None, superseded_by: str | None
    ) -> None:
        row = self._rows.get(vector_id)
        if row is not None:
            status = "superseded" if invalid_at is not None else "active"
            self._rows[vector_id] = replace(
                row,
                invalid_at=invalid_at,
                superseded_by=superseded_by,
                metadata={**row.metadata, "status": status},
            )


class InMemoryRelationStore:
    def __init__(self) -> None:
        self._rows: dict[str, RelationRecord] = {}

    async def insert_if_absent(self, relation: RelationRecord) -> bool:
        if relation.relation_id in self._rows:
            return False
        self._rows[relation.relation_id] = relation
        return True

    async def around(self, where: TenantFilter, entity_ids: Sequence[str]) -> list[RelationRecord]:
        wanted = set(entity_ids)
        rows = [
            r
            for r in self._rows.values()
            if where.admits(r.scope) and (r.source_id in wanted or r.target_id in wanted)
        ]
        return sorted(rows, key=lambda r: (r.created_at, r.relation_id))

    async def from_source(
        self, where: TenantFilter, source_id: str, type: str
    ) -> list[RelationRecord]:
        return [
            r
            for r in self._rows.values()
            if where.admits(r.scope) and r.source_id == source_id and r.type == type
        ]

    async def set_validity(self, relation_id: str, invalid_at: int | None) -> None:
        row = self._rows.get(relation_id)
        if row is not None:
            self._rows[relation_id] = replace(row, invalid_at=invalid_at)


class InMemoryPatternStore:
    def __init__(self) -> None:
        self._rows: dict[str, PatternRecord] = {}

    async def upsert(self, pattern: PatternRecord) -> None:
        self._rows[pattern.pattern_id] = pattern

    async def active(self, where: TenantFilter, limit: int) -> list[PatternRecord]:
        rows = [
            p
            for p in self._rows.values()
            if where.admits(p.scope) and p.status not in INACTIVE_STATUSES
        ]
        rows.sort(key=lambda p: (-p.success_rate, -p.last_executed, p.pattern_id))
        return rows[:limit]


class InMemoryArchiveStore:
    def __init__(self) -> None:
        self._rows: dict[str, ArchiveRecord] = {}

    async def insert_if_absent(self, archive: ArchiveRecord) -> bool:
        if archive.archive_id in self._rows:
            return False
        self._rows[archive.archive_id] = archive
        return True

    async def active(self, where: TenantFilter, limit: int) -> list[ArchiveRecord]:
        rows = [
            a
            for a in self._rows.values()
            if where.admits(a.scope) and a.status not in INACTIVE_STATUSES
        ]
        rows.sort(key=lambda a: (-a.created_at, a.archive_id))
        return rows[:limit]


class InMemoryQueryCache:
    """Counters and values in dicts; TTLs are not enforced (tests run in milliseconds)."""

    def __init__(self) -> None:
        self.values: dict[str, bytes] = {}
        self.counters: dict[str, int] = {}

    async def token(self, chain: Sequence[str]) -> str | None:
        joined = "|".join(str(self.counters.get(key, 0)) for key in chain)
        return hashlib.sha256(joined.encode()).hexdigest()[:32]

    async def get(self, key: str) -> bytes | None:
        return self.values.get(key)

    async def set(self, key: str, value: bytes, ttl_seconds: int) -> None:
        self.values[key] = value

    async def bump(self, chain: Sequence[str], ttl_seconds: int) -> int:
        for key in chain:
            self.counters[key] = self.counters.get(key, 0) + 1
        return len(chain)


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """A real, deterministic bag-of-words embedder (signed feature hashing of words and
    character trigrams, L2-normalised). Fast and offline; meant for unit tests, where the
    ONNX model's load time and CPU cost would dominate."""

    def __init__(self, dimension: int = 256) -> None:
        self._dimension = dimension

    @property
    def model(self) -> str:
        return f"hashing-bow-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def vector(self, text: str) -> Vector:
        """The vector of one text (synchronous: it is pure CPU work)."""
        vec = np.zeros(self._dimension, dtype=np.float32)
        words = _WORD.findall(text.lower())
        features = words + [w[i : i + 3] for w in words if len(w) > 3 for i in range(len(w) - 2)]
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self._dimension
            vec[index] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 else vec

    async def embed(self, texts: Sequence[str], input_type: InputType) -> list[Vector]:
        return [self.vector(text) for text in texts]


class InMemoryJobStore:
    def __init__(self) -> None:
        self.records: dict[str, JobRecord] = {}

    async def start(self, record: JobRecord) -> bool:
        existing = self.records.get(record.job_id)
        if existing is not None and existing.status != "running":
            return False
        self.records[record.job_id] = record
        return True

    async def get(self, job_id: str) -> JobRecord | None:
        return self.records.get(job_id)

    async def finish(self, record: JobRecord) -> None:
        self.records[record.job_id] = record

    async def abandon(self, record: JobRecord) -> bool:
        existing = self.records.get(record.job_id)
        if (
            existing is None
            or existing.status != "running"
            or existing.created_at != record.created_at
        ):
            return False
        self.records[record.job_id] = record
        return True

    async def running(self, job_type: str) -> list[JobRecord]:
        rows = [r for r in self.records.values() if r.type == job_type and r.status == "running"]
        return sorted(rows, key=lambda r: -r.created_at)


class InMemoryMaintenanceStore:
    """Maintenance over an `InMemoryMemoryStore`'s rows. `unpinned` holds the content of
    stored archives that have no IPFS CID yet, by archive id (`InMemoryArchiveStore` keeps
    no pin state), for `unpinned_content`."""

    def __init__(self, memory: InMemoryMemoryStore) -> None:
        self._memory = memory
        self.unpinned: dict[str, str] = {}

    async def unpinned_content(self, archive_id: str) -> str | None:
        return self.unpinned.get(archive_id)

    async def users_of(self, agent: str) -> list[str | None]:
        users = {r.scope.user_address for r in self._memory.rows() if r.scope.agent_wallet == agent}
        return sorted(users, key=lambda u: (u is not None, u or ""))

    async def agents(self) -> list[str]:
        return sorted({r.scope.agent_wallet for r in self._memory.rows()})

    async def set_decay(self, scores: Sequence[tuple[str, float]], at: int) -> int:
        changed = 0
        for vid, score in scores:
            row = self._memory.row(vid)
            if (
                row is not None
                and row.status not in INACTIVE_STATUSES
                and row.metadata.get("retention") != "pinned"
            ):
                self._memory.put(replace(row, decay_score=score))
                changed += 1
        return changed

    async def purge(self, cutoff: int, min_decay: float) -> int:
        doomed = [
            r.vector_id
            for r in self._memory.rows()
            if r.created_at < cutoff
            and (
                (r.decay_score < min_decay and r.metadata.get("retention") != "pinned")
                or r.status == "deleted"
            )
        ]
        for vid in doomed:
            self._memory.drop(vid)
        return len(doomed)
