"""The embedded MongoDB-wire server (SecantusDB), run with two memoisations of metadata it
otherwise re-reads for every document or command (issue 29).

    python -m services.ops.stack.secantus_tuned [SecantusDB's own options]

Profiling the server under the transcripts group's writes (`py-spy`, `benchmarks.store_ceiling`)
showed two costs that do not depend on the data written:

* **The index options of a collection, read again for every document inserted.** An insert
  checks each document against the collection's geo indexes, and writes its index entries,
  and each of the two decodes the options of every index of the collection from storage
  (`Storage._index_options_map`), geo index or not: a quarter of an insert's time with the
  `memory` collection's indexes. Here it is read once per insert chunk. A chunk already works
  on one reading of the collection's index list (taken under the collection's lock when the
  chunk starts), so the options it sees are those of that same list.
* **The database's profiler level, read from storage under the server's global lock on every
  command** (`Storage.get_profile`), about a tenth of the server's time. Here it is kept in
  memory, and `Storage.set_profile` (the only writer of those settings) replaces it.

Both are applied only to the SecantusDB version they were written against (`VERSION`): with
another version the server runs as it is, with a line on stderr saying so. Everything else
is SecantusDB's own `main`, with its options unchanged. `tests/integration/
test_secantus_tuned.py` checks the behaviours the two touch (geo validation, collation-aware
unique indexes, profiler levels) on the tuned server; the rest of the suite runs on it too.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from importlib import metadata
from typing import Any

VERSION = "0.7.0b3"
"""The SecantusDB release the memoisations were written against (pinned in pyproject)."""

_chunk = threading.local()


def _memoised_index_options(original: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
    def index_options_map(self: Any, db: str, coll: str) -> dict[str, Any]:
        memo: dict[tuple[str, str], dict[str, Any]] | None = getattr(_chunk, "memo", None)
        if memo is None:  # outside an insert chunk: as SecantusDB does it
            return original(self, db, coll)
        if (db, coll) not in memo:
            memo[(db, coll)] = original(self, db, coll)
        return memo[(db, coll)]

    return index_options_map


def _chunk_scope(original: Callable[..., Any]) -> Callable[..., Any]:
    def insert_chunk(self: Any, *args: Any, **kwargs: Any) -> Any:
        outer = getattr(_chunk, "memo", None)
        if outer is None:
            _chunk.memo = {}
        try:
            return original(self, *args, **kwargs)
        finally:
            if outer is None:
                _chunk.memo = None

    return insert_chunk


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
    from secantus import storage

    cls = storage.Storage
    if getattr(cls, "_mnemostream_tuned", False):
        return True
    names = ("_index_options_map", "_insert_chunk", "get_profile", "set_profile")
    if installed != VERSION or not all(callable(getattr(cls, n, None)) for n in names):
        return False
    cls._index_options_map = _memoised_index_options(cls._index_options_map)
    cls._insert_chunk = _chunk_scope(cls._insert_chunk)
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
