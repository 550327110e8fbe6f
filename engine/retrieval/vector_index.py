"""Exact cosine search over a tenant's rows, with each tenant's state (`TenantRows`) kept in
process and following the store (issue 28): a write bumps the tenant's namespace token, and
the next search reads back only the rows written since its last read (`MemoryStore.
changed_rows`, from a time a margin earlier than that read began, for writes in flight:
`DEFAULT_MARGIN_MS`) and
applies them in place. The state is loaded whole only the first time, after eviction, and
when the agent's epoch moved (a hard delete, an erasure or a cleanup purge removed rows that
no read-back can show). The states are bounded by their estimated bytes, least recently used
evicted first. Exact within a scope beats ANN recall and stays fast at 10k rows.

Pending rows of the model (`MemoryRow.pending`: stored before the embedding stage computed
their vector) are held too, as zero rows of the matrix: never cosine candidates, but the
query's terms find them through the postings, and they come back with cosine None so the
caller judges them by their text alone.

Ties (equal scores) are broken by row id, so a state kept up to date by deltas answers
exactly as one loaded anew (tests/unit/test_index_deltas.py)."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeGuard

import numpy as np
import numpy.typing as npt

from engine.filters import NO_FILTERS, Filters, matches
from engine.ports import MemoryStore, Vector
from engine.records import MemoryRow
from engine.retrieval.tenant_rows import TenantRows
from engine.scoping import TenantFilter

DEFAULT_MAX_BYTES = 1 << 30
"""The states' budget by default (1 GiB: about 150k rows of 384 dimensions with their text,
at the 6.8 KB a row `TenantRows.nbytes` estimates)."""
DEFAULT_RECHECK_MS = 120_000
"""How long a state is trusted on its token alone: past this since its last catch-up, the
next search reads a delta even when the token did not move, so a write whose invalidation was
lost (dead-lettered after its retries) is not missed for longer than the query cache (its TTL,
120 s by default) would miss it."""
DEFAULT_MARGIN_MS = 2_000
"""How far before its last read a delta reads back: longer than a write's flight between
the writer reading its clock and the write becoming visible, plus the clock skew between
writer and search hosts. A write in flight longer than `SLOW_WRITE_MS` (the MongoDB
adapter's, 1.5 s) is stamped again once visible, so the margin bounds only that. Each delta
reads back the rows written within the margin again: 10 s, as it was, made a busy tenant's
delta read ~150 rows where 2 s reads ~25 (`benchmarks.retrieval --after-writes`)."""

_Key = tuple[TenantFilter, str, int]


@dataclass(frozen=True, slots=True)
class StateStats:
    """What the index did and holds (the search process's metrics, the benchmarks)."""

    loads: int
    deltas: int
    delta_rows: int
    evictions: int
    tenants: int
    bytes: int


@dataclass(slots=True)
class _State:
    rows: TenantRows
    version: str | None
    epoch: int
    since: int
    """Rows written at or after this time (ms) are read back by the next delta."""
    checked: float
    """When the state last caught up with the store (monotonic seconds)."""
    shared: str | None = None
    """The token of the agent's user-less rows when they were last read back."""
    shared_since: int = 0
    """`since` of the agent's user-less rows (a delta that skipped them kept it)."""
    shared_checked: float = 0.0


class ExactVectorIndex:
    def __init__(
        self,
        memory: MemoryStore,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        margin_ms: int = DEFAULT_MARGIN_MS,
        recheck_ms: int = DEFAULT_RECHECK_MS,
    ) -> None:
        self._memory = memory
        self._max_bytes = max_bytes
        self._margin = margin_ms
        self._recheck = recheck_ms / 1000
        # hand-kept, not a cachetools cache: a state grows in place with each delta, while a
        # cache weighs an entry once, when it is stored; and eviction must spare the key
        # being served and drop its lock with it
        self._states: OrderedDict[_Key, _State] = OrderedDict()
        self._locks: dict[_Key, asyncio.Lock] = {}
        self.loads = 0
        """Full loads: every row of a tenant read from the store."""
        self.deltas = 0
        """Deltas: the rows written since the last read, read back and applied."""
        self.delta_rows = 0
        """Rows the deltas read back."""
        self.evictions = 0

    @property
    def nbytes(self) -> int:
        """The held states' estimated size (bounded by `max_bytes`)."""
        return sum(s.rows.nbytes for s in self._states.values())

    @property
    def tenants(self) -> int:
        return len(self._states)

    def stats(self) -> StateStats:
        return StateStats(
            self.loads, self.deltas, self.delta_rows, self.evictions, self.tenants, self.nbytes
        )

    def clear(self) -> None:
        """Drop every state (a process that takes over other partitions starts anew)."""
        self._states.clear()

    async def _rows(
        self,
        where: TenantFilter,
        model: str,
        dim: int,
        version: str | None,
        shared: str | None = None,
    ) -> TenantRows:
        key = (where, model, dim)
        state = self._states.get(key)
        if self._current(state, version):
            self._states.move_to_end(key)
            return state.rows
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # concurrent layers of one request share one read
            state = self._states.get(key)
            if self._current(state, version):
                self._states.move_to_end(key)
                return state.rows
            began = time.time_ns() // 1_000_000
            checked = time.monotonic()
            epoch: int | None = None
            if state is not None:
                # the epoch and the rows changed since, read together: a hard delete before
                # the epoch's read shows in it (the delta is dropped for a full load); one
                # after it leaves a newer epoch for the search after its invalidation, as
                # when the two were read one after the other
                skip = self._shared_unchanged(where, state, shared)
                epoch, changed = await asyncio.gather(
                    self._memory.epoch(where.agent_wallet), self._changed(where, state, skip)
                )
                if state.epoch == epoch:
                    if not skip:
                        state.shared, state.shared_since = shared, began - self._margin
                        state.shared_checked = checked
                    state.rows.apply(changed)
                    self.deltas += 1
                    self.delta_rows += len(changed)
            if state is None or state.epoch != epoch:
                # the epoch before the rows: a hard delete during the load leaves a newer
                # epoch for the next search to find
                epoch = await self._memory.epoch(where.agent_wallet)
                rows = TenantRows(model, dim)
                rows.apply(await self._memory.active_rows(where, include_superseded=True))
                state = _State(rows, version, epoch, began, checked)
                state.shared, state.shared_since = shared, began - self._margin
                state.shared_checked = checked
                self.loads += 1
            state.version, state.epoch, state.since = version, epoch, began - self._margin
            state.checked = checked
            self._states[key] = state
            self._states.move_to_end(key)
            self._evict(keep=key)  # never `key`; an evicted key's lock goes with its state
        return state.rows

    def accessed(self, vector_ids: Sequence[str]) -> None:
        """Apply access counts the store took without a change mark (`MemoryStore.
        bump_access`) to every state holding the rows: the counts this process flushed are
        in its states as in a fresh load. Another search process's counts reach a state at
        its next full load, or with the row's next change: a count only weighs 0.04 of a
        hit's packing score (`packing_score`), and reading each bump back cost every delta
        its rows (issue 28)."""
        ids = set(vector_ids)
        for state in self._states.values():
            state.rows.accessed(ids)

    def _shared_unchanged(self, where: TenantFilter, state: _State, shared: str | None) -> bool:
        """Whether a delta may skip the agent's user-less rows a user's read is widened to:
        their own token did not move since they were last read back, recently enough."""
        return (
            where.user_address is not None
            and (where.shared or where.widened)
            and shared is not None
            and state.shared == shared
            and time.monotonic() - state.shared_checked < self._recheck
        )

    async def _changed(self, where: TenantFilter, state: _State, skip: bool) -> list[MemoryRow]:
        """The rows written since the state's last read: the user's own since `since`, and
        (unless `skip`) the agent's user-less ones the filter admits since `shared_since`."""
        if where.user_address is None or not (where.shared or where.widened):
            return await self._memory.changed_rows(where, state.since)
        own = self._memory.changed_rows(where.exact(), state.since)
        if skip:
            return await own
        agents = replace(where, user_address=None, shared=False, shared_sources=())
        mine, theirs = await asyncio.gather(
            own, self._memory.changed_rows(agents, state.shared_since)
        )
        return mine + [r for r in theirs if where.admits(r.scope, r.source)]

    def _current(self, state: _State | None, version: str | None) -> TypeGuard[_State]:
        """The state answers as it is: its token has not moved since its last catch-up,
        which is recent enough (`recheck_ms`)."""
        return (
            state is not None
            and version is not None
            and state.version == version
            and time.monotonic() - state.checked < self._recheck
        )

    def _evict(self, keep: _Key) -> None:
        total = self.nbytes
        while total > self._max_bytes and len(self._states) > 1:
            key, state = next(iter(self._states.items()))
            if key == keep:
                break
            del self._states[key]
            self._locks.pop(key, None)
            total -= state.rows.nbytes
            self.evictions += 1

    async def prepare(
        self,
        where: TenantFilter,
        *,
        model: str,
        dim: int,
        version: str | None = None,
        shared: str | None = None,
    ) -> None:
        """Bring the tenant's state up to `version` (a delta, or a full load), as `search`
        would first: started while the query is embedded, the store's reads overlap it."""
        await self._rows(where, model, dim, version, shared)

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
        """From the tenant's state, caught up as `search` catches it up (one state, one
        delta, for every layer of a request that reads the same tenant)."""
        if not vector_ids:
            return {}
        state = await self._rows(where, model, dim, version, shared)
        out: dict[str, Vector] = {}
        for vector_id in vector_ids:
            at = state.slots.get(vector_id)
            if at is not None and not state.pending[at]:
                out[vector_id] = state.matrix[at]
        return out

    async def search(
        self,
        where: TenantFilter,
        query: Vector,
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
        """Also returns up to `k` more rows that hold a query term, the best by inverse
        document frequency over the tenant's rows (`_lexical_top`; pending rows returned
        with cosine None), so a row the words find is a candidate even when its cosine is
        not top-k: the hybrid's lexical half ranks the whole tenant, not the cosine pool."""
        state = await self._rows(where, model, int(query.shape[0]), version, shared)
        n = state.used
        if k <= 0 or not state.size:
            return []
        scores = state.cosines(query.astype(np.float32))
        if as_of is None:
            visible = state.current[:n]
        else:
            visible = np.array(
                [r is not None and r.valid_at(as_of) for r in state.rows], dtype=np.bool_
            )
        scores = np.where(visible, scores, -np.inf)
        if sources is not None:
            scores = np.where(state.source_mask(sources), scores, -np.inf)
        if filters:
            allowed = np.array(
                [r is not None and matches(filters, r.view()) for r in state.rows],
                dtype=np.bool_,
            )
            scores = np.where(allowed, scores, -np.inf)
        # a pending row has no cosine: only its terms make it a candidate
        cosines = np.where(state.pending[:n], -np.inf, scores)
        top = _top(cosines, state.ids[:n], min(k, state.size))
        held = _lexical_top(state, terms, scores, k)
        if len(held):
            top = np.union1d(top, held)
        top = top[np.isfinite(scores[top])]
        top = top[np.lexsort((state.ids[top], -scores[top]))]
        out: list[tuple[MemoryRow, float | None]] = []
        for i in top:
            row = state.rows[i]
            if row is not None:  # a dead slot is never visible
                out.append((_marked(state, row), None if state.pending[i] else float(scores[i])))
        return out


def _top(
    scores: npt.NDArray[np.float32], ids: npt.NDArray[np.object_], k: int
) -> npt.NDArray[np.int64]:
    """The (at most `k`) finite best scores; among equal scores at the cut, the smallest ids
    (an order that does not depend on where a row sits)."""
    if k <= 0 or not len(scores):
        return np.array([], dtype=np.int64)
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.isfinite(scores[top])]
    if len(top) < k or not len(top):
        return top.astype(np.int64)
    cut = scores[top].min()
    above = np.flatnonzero(scores > cut)
    tied = np.flatnonzero(scores == cut)
    if len(above) + len(tied) > k:
        tied = tied[np.argsort(ids[tied], kind="stable")][: k - len(above)]
    return np.concatenate([above, tied]).astype(np.int64)


def _marked(state: TenantRows, row: MemoryRow) -> MemoryRow:
    """`row`, with `metadata.outdatedSince` when it is a turn whose stated fact was replaced (the
    memory layer then shows it "(until …)")."""
    since = state.outdated.get(row.vector_id)
    if since is None:
        return row
    return replace(row, metadata={**row.metadata, "outdatedSince": since})


def _lexical_top(
    state: TenantRows, terms: Sequence[str], scores: npt.NDArray[np.float32], k: int
) -> npt.NDArray[np.int64]:
    """The (at most `k`) visible rows holding query terms with the highest sum of their
    terms' IDF, log(1 + (N − df + 0.5) / (df + 0.5)) over the tenant's N rows (BM25 with
    term presence for frequency): a rare word of the query outranks a common one, which a
    cosine-first choice among every row holding any term did not. Ties: higher cosine, then
    the smaller id."""
    if k <= 0:
        return np.array([], dtype=np.int64)
    postings = [p for p in map(state.holding, dict.fromkeys(terms)) if p is not None]
    if not postings:
        return np.array([], dtype=np.int64)
    n = state.size
    weight = np.zeros(state.used, dtype=np.float64)
    for rows in postings:
        weight[rows] += np.log1p((n - len(rows) + 0.5) / (len(rows) + 0.5))
    held = np.flatnonzero((weight > 0) & np.isfinite(scores))
    if len(held) > k:
        # primary key IDF sum, then cosine (pending rows: 0), then id
        tie = np.where(np.isfinite(scores[held]), scores[held], 0.0)
        order = np.lexsort((state.ids[held], -tie, -weight[held]))
        held = held[order[:k]]
    return held.astype(np.int64)
