"""One tenant's rows as the exact vector index searches them, updated in place by the rows
that changed (issue 28): a write costs the index work proportional to what it wrote, never a
rebuild of the tenant's matrix.

Rows live in slots: the matrix and the per-row arrays have spare capacity (doubled when
full), a new row takes the next slot, a changed row keeps its slot, and a removed row leaves
a dead slot (zero vector, never visible) until dead slots are a quarter of the whole and the
arrays are compacted. Nothing observable depends on slot order: ties are broken by row id
(`ExactVectorIndex`), so a tenant updated by deltas answers exactly as one loaded anew.

Pending rows of the model (`MemoryRow.pending`: stored before the embedding stage computed
their vector) are zero rows of the matrix: never cosine candidates, found by their terms."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from engine.records import MemoryRow, turn_row_id
from engine.retrieval.lexical import all_terms

ROW_OVERHEAD_BYTES = 2_000
"""What one row costs besides its text, its vectors and its terms (the row object, its scope
and metadata, the slot map entry, its postings' set entries): fitted to what tracemalloc
counts for 10k rows of benchmarks.retrieval's texts (6.8 KB a row in all, the matrix's
spare capacity included)."""
TERM_BYTES = 90
"""One distinct term of a row: its entry in the row's term set and in the postings."""


@dataclass(frozen=True, slots=True)
class _Mark:
    turn: str
    since: int


def _mark_of(row: MemoryRow) -> _Mark | None:
    """The turn a replaced fact row marks outdated, and since when (`outdated_turns`)."""
    if row.source != "fact" or row.invalid_at is None:
        return None
    turn, session = row.metadata.get("sourceTurnId"), row.metadata.get("sourceSessionId")
    if not isinstance(turn, str) or not isinstance(session, str):
        return None
    return _Mark(turn_row_id(row.scope.agent_wallet, session, turn), row.invalid_at)


def _row_bytes(row: MemoryRow, terms: frozenset[str]) -> int:
    """The row's estimated share: its own vector (the matrix holds a copy), its message
    vectors, text and terms."""
    text = 2 * len(row.content)
    units = row.units.nbytes if row.units is not None else 0
    return ROW_OVERHEAD_BYTES + row.embedding.nbytes + units + text + TERM_BYTES * len(terms)


class TenantRows:
    """The searchable state of one (tenant, model, dimension)."""

    def __init__(self, model: str, dim: int) -> None:
        self.model = model
        self.dim = dim
        self.rows: list[MemoryRow | None] = []
        """Slot → row (None: a dead slot)."""
        self.slots: dict[str, int] = {}
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.ids = np.zeros(0, dtype=object)
        self.alive = np.zeros(0, dtype=np.bool_)
        self.current = np.zeros(0, dtype=np.bool_)
        """Rows visible without `as_of` (not replaced, not deleted)."""
        self.pending = np.zeros(0, dtype=np.bool_)
        self.codes = np.zeros(0, dtype=np.int32)
        self._source_codes: dict[str, int] = {}
        self.terms: list[frozenset[str]] = []
        self._postings: dict[str, set[int]] = {}
        self._arrays: dict[str, npt.NDArray[np.int64]] = {}
        self._marks: dict[str, _Mark] = {}
        """Replaced fact row → the turn it marks; `_by_turn` the same the other way."""
        self._by_turn: dict[str, dict[str, int]] = {}
        self.outdated: dict[str, int] = {}
        """Turn rows whose stated fact was replaced, and since when (`outdated_turns`)."""
        self._masks: dict[tuple[str, ...], npt.NDArray[np.bool_]] = {}
        self._last: tuple[bytes, npt.NDArray[np.float32]] | None = None
        self._row_bytes = 0
        self.dead = 0

    # --- reading ---------------------------------------------------------------------

    @property
    def used(self) -> int:
        """Slots in use, live or dead (the length of every per-row view)."""
        return len(self.rows)

    @property
    def size(self) -> int:
        """Live rows."""
        return len(self.slots)

    @property
    def nbytes(self) -> int:
        """What the state holds, estimated: the arrays at capacity plus each row's text,
        terms and overhead (the budget `ExactVectorIndex` evicts by)."""
        arrays = self.matrix.nbytes + self.ids.nbytes + self.codes.nbytes
        return arrays + 3 * self.alive.nbytes + self._row_bytes

    def cosines(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """`matrix @ query` over the used slots, computed once per distinct query (read-only):
        the graph and vectors layers of one request scan the same rows with one query."""
        key = query.tobytes()
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        scores = self.matrix[: self.used] @ query
        scores.setflags(write=False)
        self._last = (key, scores)
        return scores

    def source_mask(self, sources: Sequence[str]) -> npt.NDArray[np.bool_]:
        """Used slots of the given sources (memoised until the rows change)."""
        key = tuple(sorted(sources))
        mask = self._masks.get(key)
        if mask is None:
            wanted = [self._source_codes[s] for s in key if s in self._source_codes]
            mask = self._masks[key] = np.isin(self.codes[: self.used], wanted)
        return mask

    def holding(self, term: str) -> npt.NDArray[np.int64] | None:
        """The live slots whose text holds `term` (None: no row does)."""
        array = self._arrays.get(term)
        if array is None:
            held = self._postings.get(term)
            if not held:
                return None
            array = self._arrays[term] = np.fromiter(held, dtype=np.int64, count=len(held))
        return array

    # --- writing ---------------------------------------------------------------------

    def admits(self, row: MemoryRow) -> bool:
        """Whether the row belongs here: not deleted, of this model, pending or of this
        dimension."""
        return (
            row.status != "deleted"
            and row.embedding_model == self.model
            and (row.pending or row.embedding_dim == self.dim)
        )

    def apply(self, rows: Iterable[MemoryRow]) -> int:
        """Bring the state up to date with rows read back from the store (new, changed,
        deleted or re-embedded elsewhere); how many slots changed."""
        changed = 0
        for row in rows:
            at = self.slots.get(row.vector_id)
            if not self.admits(row):
                if at is not None:
                    self._remove(at)
                    changed += 1
            elif at is None or self.rows[at] is not row:
                self._put(row, at)
                changed += 1
        if changed:
            self._masks.clear()
            self._last = None
            if self.dead > 64 and self.dead * 4 > self.used:
                self._compact()
        return changed

    def accessed(self, vector_ids: Iterable[str]) -> None:
        """Count one access of each held row, as the store did (`MemoryStore.bump_access`):
        nothing but the row's count changes, so no array or posting does."""
        for vector_id in vector_ids:
            at = self.slots.get(vector_id)
            row = None if at is None else self.rows[at]
            if at is not None and row is not None:
                self.rows[at] = replace(row, access_count=row.access_count + 1)

    def _put(self, row: MemoryRow, at: int | None) -> None:
        if at is None:
            at = len(self.rows)
            self._reserve(at + 1)
            self.rows.append(None)
            self.terms.append(frozenset())
            self.slots[row.vector_id] = at
            self.ids[at] = row.vector_id
            self.alive[at] = True
        before = self.rows[at]
        if before is not None:
            self._row_bytes -= _row_bytes(before, self.terms[at])
        if before is not None and before.content == row.content:
            terms = self.terms[at]
        else:
            terms = frozenset(all_terms(row.content))
            self._unpost(at)
            self.terms[at] = terms
            for term in terms:
                self._postings.setdefault(term, set()).add(at)
                self._arrays.pop(term, None)
        self._unmark(row.vector_id)
        self.rows[at] = row
        self._row_bytes += _row_bytes(row, terms)
        self.matrix[at] = 0.0 if row.pending else row.embedding
        self.pending[at] = row.pending
        self.current[at] = row.valid_at(None)
        self.codes[at] = self._source_codes.setdefault(row.source, len(self._source_codes))
        mark = _mark_of(row)
        if mark is not None:
            self._marks[row.vector_id] = mark
            facts = self._by_turn.setdefault(mark.turn, {})
            facts[row.vector_id] = mark.since
            self.outdated[mark.turn] = min(facts.values())

    def _remove(self, at: int) -> None:
        row = self.rows[at]
        if row is None:
            return
        self._unpost(at)
        self._unmark(row.vector_id)
        self._row_bytes -= _row_bytes(row, self.terms[at])
        del self.slots[row.vector_id]
        self.rows[at] = None
        self.terms[at] = frozenset()
        self.ids[at] = ""
        self.matrix[at] = 0.0
        self.alive[at] = self.current[at] = self.pending[at] = False
        self.dead += 1

    def _unpost(self, at: int) -> None:
        for term in self.terms[at]:
            held = self._postings.get(term)
            if held is not None:
                held.discard(at)
                if not held:
                    del self._postings[term]
            self._arrays.pop(term, None)

    def _unmark(self, vector_id: str) -> None:
        mark = self._marks.pop(vector_id, None)
        if mark is None:
            return
        facts = self._by_turn[mark.turn]
        del facts[vector_id]
        if facts:
            self.outdated[mark.turn] = min(facts.values())
        else:
            del self._by_turn[mark.turn]
            del self.outdated[mark.turn]

    def _reserve(self, needed: int) -> None:
        capacity = self.matrix.shape[0]
        if needed <= capacity:
            return
        grown = max(needed, 2 * capacity, 16)

        def widen(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
            out = np.zeros((grown, *a.shape[1:]), dtype=a.dtype)
            out[:capacity] = a
            return out

        self.matrix = widen(self.matrix)  # type: ignore[assignment]
        self.ids = widen(self.ids)
        self.ids[capacity:] = ""
        self.alive = widen(self.alive)  # type: ignore[assignment]
        self.current = widen(self.current)  # type: ignore[assignment]
        self.pending = widen(self.pending)  # type: ignore[assignment]
        self.codes = widen(self.codes)  # type: ignore[assignment]

    def _compact(self) -> None:
        """Rebuild without the dead slots (keeps each live row's terms)."""
        live = [(r, t) for r, t in zip(self.rows, self.terms, strict=True) if r is not None]
        fresh = TenantRows(self.model, self.dim)
        fresh._reserve(len(live))
        for at, (row, terms) in enumerate(live):
            fresh.rows.append(row)
            fresh.terms.append(terms)
            fresh.slots[row.vector_id] = at
            fresh.ids[at] = row.vector_id
            fresh.alive[at] = True
            for term in terms:
                fresh._postings.setdefault(term, set()).add(at)
            fresh.matrix[at] = 0.0 if row.pending else row.embedding
            fresh.pending[at] = row.pending
            fresh.current[at] = row.valid_at(None)
            fresh.codes[at] = fresh._source_codes.setdefault(row.source, len(fresh._source_codes))
        fresh._marks, fresh._by_turn, fresh.outdated = self._marks, self._by_turn, self.outdated
        fresh._row_bytes = self._row_bytes
        self.__dict__.update(fresh.__dict__)
