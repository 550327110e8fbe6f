"""Four cuts in the embedded MongoDB-wire server's per-document update path (issue 29),
applied by `services.ops.stack.secantus_tuned.tune` with its memoisations.

An update of one document cost the server about 0.4 ms whatever it changed (an ad-hoc probe,
2026-12-07: 256-row bulks of `$set` on the `memory` collection's indexes; `$set` of one
date alone, 0.40 ms; the embedding stage's vector fill, 0.42 ms), where inserting the same
row costs about 0.1. `py-spy` on the server, during the embedding stage's fill, put a fifth
of an update's time into rewriting index entries that did not change, a sixth into choosing
how to find a document named by `_id`, and a twelfth into a deep copy:

* **Index entries that do not change are left alone.** An update deleted every index entry
  of the old document and wrote every entry of the new one. Here the update's delete is held
  until its write (the next call, for the same row, in the same statement) and both are made
  only for the indexes whose entries differ: a filled vector or a new `changedAt` leaves the
  tenant index untouched; a unique key kept is neither released nor claimed again. Only the
  pair in an update statement's body is held (its caller's name is checked), and any other
  index write first makes a held delete, so nothing held is ever dropped.
* **`_id` first.** A filter that names `_id` by value (or `$in`) and every other field by
  plain value or `$exists` (`{_id, embeddingDim: 0}`, `{_id, rev}`) went through the
  compound, range and partial-index pickers before its `_id` clause was looked up on its
  own; here the `_id` point lookup is taken first, as SecantusDB already does for a filter
  of `_id` alone. The caller matches every candidate against the whole filter either way.
  Not with a collation (it may fold `_id` strings) nor on a time-series collection.
* **The update's copy of the document** (`copy.deepcopy` in `secantus.update`) copies only
  its dictionaries and lists and shares the immutable values it holds (strings, numbers,
  binaries, dates, ids: what an update replaces, never changes in place); any other value
  is deep-copied as before.
* **The operator paths' check is remembered by the update's shape** (its operators and
  fields in order, not the values): it compares every path with every earlier one, ~30 µs
  for a working buffer's append of ~20 paths (a tenth of the update), and a stream repeats
  a few shapes with new values. An update it refuses raises as before, every time.

`tests/integration/test_secantus_tuned.py` checks the index behaviours on the tuned server
(changed, unchanged, unique, partial, multikey, many documents at once, a failed update)."""

from __future__ import annotations

import copy
import datetime
import sys
import threading
import types
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

UPDATE_BODIES = frozenset({"_update_matching_single_txn", "_update_chunk"})
"""SecantusDB's update statements whose body deletes a document's index entries, rewrites the
document, then writes its entries: the only callers whose delete is held."""

_held = threading.local()
"""The delete an update body made last (`_held.delete`: (db, coll, recordid, doc, indexes,
partials)), None when there is none."""

Index = tuple[str, dict[str, Any], bool, bool]


def _caller() -> str:
    return sys._getframe(2).f_code.co_name


def _make_held(original_delete: Callable[..., None], storage: Any) -> None:
    held = getattr(_held, "delete", None)
    if held is not None:
        _held.delete = None
        db, coll, recordid, doc, indexes, partials = held
        original_delete(storage, db, coll, doc, indexes, partials, recordid=recordid)


def _fields(key_spec: Mapping[str, Any], partial: Any) -> set[str] | None:
    """The top-level fields an ascending or descending index's entries are made from (its
    keys and its partial filter); None for any other kind (text, geo, hashed, wildcard),
    whose entries are always rewritten."""
    out: set[str] = set()
    for path, kind in key_spec.items():
        head = str(path).split(".", 1)[0]
        if isinstance(kind, str) or head.startswith("$") or "$**" in str(path):
            return None
        out.add(head)

    def walk(clause: Any) -> None:
        if isinstance(clause, Mapping):
            for key, value in clause.items():
                if str(key).startswith("$"):
                    walk(value)
                else:
                    out.add(str(key).split(".", 1)[0])
        elif isinstance(clause, list):
            for item in clause:
                walk(item)

    walk(partial)
    return out


def _same(old: Any, new: Any) -> bool:
    """The same object, or dictionaries and lists whose items are: an update's copy of the
    document (`shallow_values_copier`) shares every value it did not replace, so a value the
    update wrote is another object even when equal (then its entries are rewritten)."""
    if old is new:
        return True
    if type(old) is dict and type(new) is dict:
        return old.keys() == new.keys() and all(_same(v, new[k]) for k, v in old.items())
    if type(old) is list and type(new) is list:
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new, strict=True))
    return False


_MISSING = object()


def _unchanged(before: Any, after: Any, index: Index, partials: Mapping[str, Any]) -> bool:
    fields = _fields(index[1], partials.get(index[0]))
    return fields is not None and all(
        _same(before.get(f, _MISSING), after.get(f, _MISSING)) for f in fields
    )


def diffed_index_writes(cls: Any) -> None:
    """Hold an update body's index delete until its write, and make both only for the
    indexes whose entries change."""
    original_delete, original_write = cls._delete_index_entries, cls._write_index_entries

    def delete_index_entries(
        self: Any, db: str, coll: str, doc: Any, indexes: Any, partials: Any = None, **at: int
    ) -> None:
        recordid = at["recordid"]
        _make_held(original_delete, self)
        if _caller() in UPDATE_BODIES:
            _held.delete = (db, coll, recordid, doc, indexes, partials)
            return
        original_delete(self, db, coll, doc, indexes, partials, recordid=recordid)

    def write_index_entries(
        self: Any, db: str, coll: str, doc: Any, indexes: Any, partials: Any = None, **at: int
    ) -> None:
        recordid = at["recordid"]
        held = getattr(_held, "delete", None)
        if held is None or held[:3] != (db, coll, recordid) or _caller() not in UPDATE_BODIES:
            _make_held(original_delete, self)
            original_write(self, db, coll, doc, indexes, partials, recordid=recordid)
            return
        _held.delete = None
        _, _, _, before, held_indexes, held_partials = held
        if held_indexes != indexes or held_partials != partials:  # not the pair it was held for
            original_delete(self, db, coll, before, held_indexes, held_partials, recordid=recordid)
            original_write(self, db, coll, doc, indexes, partials, recordid=recordid)
            return
        found = partials if partials is not None else self._partial_filters(db, coll)
        changed = [index for index in indexes if not _unchanged(before, doc, index, found)]
        if changed:
            original_delete(self, db, coll, before, changed, found, recordid=recordid)
            original_write(self, db, coll, doc, changed, found, recordid=recordid)

    def statement(original: Callable[..., Any]) -> Callable[..., Any]:
        def body(self: Any, *args: Any, **kwargs: Any) -> Any:
            _held.delete = None  # a statement starts with nothing held
            try:
                return original(self, *args, **kwargs)
            finally:
                _held.delete = None  # held only by a body that raised: its transaction rolled back

        return body

    cls._delete_index_entries = delete_index_entries
    cls._write_index_entries = write_index_entries
    for name in UPDATE_BODIES:
        setattr(cls, name, statement(getattr(cls, name)))


def _plain(field: Any, value: Any, module: Any) -> bool:
    """A clause `matches` decides exactly for one candidate: a value, or `$exists`."""
    if not isinstance(field, str) or field.startswith("$"):
        return False
    if isinstance(value, Mapping):
        return list(value) == ["$exists"]
    return not module._is_regex_value(value)


def id_first(module: Any, cls: Any) -> None:
    """Look a filter's `_id` up first when every other clause is plain."""
    original = cls._try_index_id_keys

    def try_index_id_keys(
        self: Any, db: str, coll: str, filter: Any, *, collation: Any = None
    ) -> Any:
        if (
            collation is None
            and isinstance(filter, dict)
            and len(filter) > 1
            and "_id" in filter
            and all(_plain(k, v, module) for k, v in filter.items() if k != "_id")
            and not self._is_timeseries(db, coll)
        ):
            keys = module._id_point_lookup_keys(filter["_id"])
            if keys is not None:
                found = [self._doc_recordid(db, coll, k) for k in keys]
                return [r for r in found if r is not None]
        return original(self, db, coll, filter, collation=collation)

    cls._try_index_id_keys = try_index_id_keys


_SHARED = (str, int, float, bool, bytes, type(None), datetime.datetime, Decimal, uuid.UUID)


def shallow_values_copier(update_module: Any) -> None:
    """`secantus.update`'s `copy.deepcopy` copies dictionaries and lists only."""
    from bson import Decimal128, Int64, MaxKey, MinKey, ObjectId, Timestamp

    shared = (*_SHARED, Decimal128, Int64, MaxKey, MinKey, ObjectId, Timestamp)

    def tree(value: Any) -> Any:
        kind = type(value)
        if kind is dict:
            return {k: tree(v) for k, v in value.items()}
        if kind is list:
            return [tree(v) for v in value]
        if isinstance(value, shared):  # bson.Binary is bytes, Int64 int
            return value
        return copy.deepcopy(value)

    def deepcopy(value: Any, memo: Any = None) -> Any:
        return tree(value) if memo is None else copy.deepcopy(value, memo)

    update_module.copy = types.SimpleNamespace(**{**vars(copy), "deepcopy": deepcopy})


PATH_SHAPES_KEPT = 4_096
"""Update shapes whose path check `remembered_path_checks` keeps (a few hundred bytes each)."""

Shape = tuple[tuple[str, tuple[tuple[str, object], ...] | None], ...]


def _shape(update: Mapping[str, Any]) -> Shape:
    """What `_validate_update_paths` reads of an update: its operators in order, each one's
    fields in order (with a `$rename`'s destination), not the values written."""
    out: list[tuple[str, tuple[tuple[str, object], ...] | None]] = []
    for op, payload in update.items():
        if not isinstance(payload, Mapping):
            out.append((op, None))
        elif op == "$rename":
            out.append(
                (op, tuple((f, d if isinstance(d, str) else None) for f, d in payload.items()))
            )
        else:
            out.append((op, tuple((f, None) for f in payload)))
    return tuple(out)


def remembered_path_checks(update_module: Any) -> None:
    """`secantus.update`'s check of an update's operator paths (unknown operators, empty
    paths, two operators on one path or on a path and its prefix) is remembered by the
    update's shape: it compares every path with every earlier one, ~30 µs for a working
    buffer's append of ~20 paths, and a stream's updates repeat a few shapes with new values.
    An update the check refuses raises as before, every time (refusals are not kept)."""
    original = update_module._validate_update_paths
    kept: dict[Shape, tuple[str, str] | None] = {}

    def check(update: Mapping[str, Any]) -> tuple[str, str] | None:
        shape = _shape(update)
        try:
            return kept[shape]
        except KeyError:
            pass
        found: tuple[str, str] | None = original(update)
        if len(kept) < PATH_SHAPES_KEPT:
            kept[shape] = found
        return found

    update_module._validate_update_paths = check


def apply(storage_module: Any, update_module: Any) -> None:
    cls = storage_module.Storage
    diffed_index_writes(cls)
    id_first(storage_module, cls)
    shallow_values_copier(update_module)
    remembered_path_checks(update_module)


NEEDS = (
    "_delete_index_entries",
    "_write_index_entries",
    "_try_index_id_keys",
    "_partial_filters",
    "_is_timeseries",
    "_doc_recordid",
    *UPDATE_BODIES,
)
"""What `apply` replaces or calls on `Storage`."""
MODULE_NEEDS = (
    "_id_point_lookup_keys",
    "_is_regex_value",
)
"""What it calls in `secantus.storage`."""
UPDATE_MODULE_NEEDS = ("_validate_update_paths",)
"""What it replaces in `secantus.update`."""
