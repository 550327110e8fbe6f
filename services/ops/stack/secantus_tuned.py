"""The embedded MongoDB-wire server (SecantusDB), run with two memoisations of metadata it
otherwise re-reads for every document or command (issue 29).

    python -m services.ops.stack.secantus_tuned [SecantusDB's own options]

Profiling the server under the transcripts group's writes (`py-spy`, `benchmarks.store_ceiling`)
showed two costs that do not depend on the data written:

* **A collection's index list, read again from storage for every document written.** An
  insert checks each document against the collection's geo indexes and writes its index
  entries, and each of the two decodes the options of every index of the collection
  (`Storage._index_options_map`), geo index or not: a quarter of an insert's time with the
  `memory` collection's indexes. An update statement reads the list four times more (its
  indexes, their partial filters, which are multikey, the candidates' index) and twice a
  document: 23 % of an update's time went to the options alone (stop 48, `py-spy` while
  256-row bulks of `$set` ran). Here `Storage._iter_indexes` is read once per write
  statement (`STATEMENTS`: an insert chunk, an update or delete statement or chunk), which
  runs under the collection's lock, as index builds and drops do; a statement that flags an
  index multikey (its one write to the list) reads the list again after it.
* **The database's profiler level, read from storage under the server's global lock on every
  command** (`Storage.get_profile`), about a tenth of the server's time. Here it is kept in
  memory, and `Storage.set_profile` (the only writer of those settings) replaces it.

With them, three cuts in the update path (`services.ops.stack.secantus_updates`: index
entries that do not change are not rewritten, `_id` looked up first, a cheaper copy of the
document), `$in` over strings by set membership (`services.ops.stack.secantus_matching`) and
write commands run one at a time across connections (`services.ops.stack.secantus_serial`).
All are applied only to the SecantusDB version they were written against
(`VERSION`): with another version the server runs as it is, with a line on stderr saying
so. Everything else is SecantusDB's own `main`, with its options unchanged. `tests/integration/
test_secantus_tuned.py` checks the behaviours these touch (geo validation, collation-aware
unique indexes, profiler levels, index entries across updates, `_id` with other clauses, `$in`)
on the tuned server; the rest of the suite runs on it too.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from typing import Any

from services.ops.stack import secantus_matching as matching
from services.ops.stack import secantus_serial as serial
from services.ops.stack import secantus_updates as updates

VERSION = "0.7.0b3"
"""The SecantusDB release the memoisations were written against (pinned in pyproject)."""
STATEMENTS = (
    "_insert_chunk",
    "_update_matching_single_txn",
    "_update_chunk",
    "_delete_matching_single_txn",
    "_delete_chunk",
)
"""SecantusDB's write statements, or the chunks of one, that run whole under their
collection's lock, which index builds and drops also take: a collection's index list cannot
change while one runs. (The chunked update and delete are not scoped as a whole: they call
the single-transaction body after leaving the lock.)"""
Entry = tuple[str, dict[str, Any], dict[str, Any]]
"""One index as `Storage._iter_indexes` yields it: name, key pattern, options."""

_statement = threading.local()
"""The index lists read in the current write statement (`_statement.memo`: (db, coll) ->
entries), None outside one."""


def _memoised_iter_indexes(original: Callable[..., Iterable[Entry]]) -> Callable[..., Any]:
    def iter_indexes(self: Any, db: str, coll: str) -> Iterator[Entry]:
        memo: dict[tuple[str, str], list[Entry]] | None = getattr(_statement, "memo", None)
        if memo is None:  # outside a write statement: as SecantusDB does it
            return iter(original(self, db, coll))
        found = memo.get((db, coll))
        if found is None:
            found = memo[(db, coll)] = list(original(self, db, coll))
        # copies, as a fresh read would give: a caller may change what it is handed
        return iter([(name, dict(key), dict(options)) for name, key, options in found])

    return iter_indexes


def _statement_scope(original: Callable[..., Any]) -> Callable[..., Any]:
    def statement(self: Any, *args: Any, **kwargs: Any) -> Any:
        outer = getattr(_statement, "memo", None)
        if outer is None:
            _statement.memo = {}
        try:
            return original(self, *args, **kwargs)
        finally:
            if outer is None:
                _statement.memo = None

    return statement


def _forgets_on_multikey(original: Callable[..., set[str]]) -> Callable[..., set[str]]:
    """A statement that flags an index multikey (the one index-list write a write statement
    makes) reads the list again afterwards."""

    def maybe_mark_multikey(
        self: Any, db: str, coll: str, doc: Any, indexes: Any, already: set[str]
    ) -> set[str]:
        before = len(already)
        marked = original(self, db, coll, doc, indexes, already)
        memo = getattr(_statement, "memo", None)
        if memo is not None and len(marked) != before:
            memo.pop((db, coll), None)
        return marked

    return maybe_mark_multikey


def _cached_profile(
    get: Callable[..., dict[str, Any]], put: Callable[..., None]
) -> tuple[Callable[..., dict[str, Any]], Callable[..., None]]:
    # one lock around the cache and its storage reads and writes: a read cannot put back a
    # value that a concurrent `set_profile` has just replaced
    lock = threading.Lock()

    def cache_of(storage: Any) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = storage.__dict__.setdefault("_mnemostream_profiles", {})
        return found

    def get_profile(self: Any, db: str) -> dict[str, Any]:
        cache = cache_of(self)
        with lock:
            found = cache.get(db)
            if found is None:
                found = cache[db] = get(self, db)
        return dict(found)

    def set_profile(self: Any, db: str, **settings: Any) -> None:
        cache = cache_of(self)
        with lock:
            cache.pop(db, None)  # the next read takes what is stored, whether this fails or not
            put(self, db, **settings)

    return get_profile, set_profile


def tune() -> bool:
    """Apply the memoisations to SecantusDB's `Storage` (once); False when the installed
    version is not `VERSION` or lacks what they replace (then nothing is changed)."""
    try:
        installed = metadata.version("SecantusDB")
    except metadata.PackageNotFoundError:
        return False
    from secantus import query, server, storage, update

    cls = storage.Storage
    if getattr(cls, "_mnemostream_tuned", False):
        return True
    names = (*STATEMENTS, "_iter_indexes", "_maybe_mark_multikey", "get_profile", "set_profile")
    if (
        installed != VERSION
        or not all(callable(getattr(cls, n, None)) for n in (*names, *updates.NEEDS))
        or not all(callable(getattr(storage, n, None)) for n in updates.MODULE_NEEDS)
        or not callable(getattr(getattr(update, "copy", None), "deepcopy", None))
        or not all(callable(getattr(update, n, None)) for n in updates.UPDATE_MODULE_NEEDS)
        or not all(callable(getattr(query, n, None)) for n in matching.NEEDS)
        or not callable(getattr(server, "dispatch", None))
    ):
        return False
    serial.apply(server)
    updates.apply(storage, update)
    matching.fast_in(query)
    cls._iter_indexes = _memoised_iter_indexes(cls._iter_indexes)
    cls._maybe_mark_multikey = _forgets_on_multikey(cls._maybe_mark_multikey)
    for name in STATEMENTS:
        setattr(cls, name, _statement_scope(getattr(cls, name)))
    cls.get_profile, cls.set_profile = _cached_profile(cls.get_profile, cls.set_profile)
    cls._mnemostream_tuned = True
    return True


def main(argv: list[str] | None = None) -> int:
    if not tune():
        sys.stderr.write(
            f"secantus_tuned: SecantusDB is not {VERSION}: running it without the memoisations\n"
        )
    from secantus.cli import main as secantus_main

    return int(secantus_main(argv) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
