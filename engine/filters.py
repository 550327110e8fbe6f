"""Caller filters: the allowlist of reference §1.3, made strict.

A caller may narrow a read with `filters: {path: value}`. Rules:

* **Aliases** (input key → path): `appId`, `app_id` → `metadata.app_id`; `hai_id` → `haiId`;
  `user_id` → `userAddress`; `thread_id` → `threadId`.
* **Paths**: `agentWallet, userAddress, threadId, mode, haiId, scopeKind, scopeId, source`, and
  paths under `metadata.`, `workingMemory.state.`, `workingMemory.entities.`. Every dot-separated
  segment matches `[A-Za-z0-9_-]{1,64}` (so no `$`, no empty segment), at most 4 segments.
* **System-owned paths are not filterable**: `metadata.status` (reads always exclude deleted and
  superseded rows; a filter could only ever narrow that, so `status: "deleted"` would silently
  return nothing), `metadata.factHash` (the extractor's dedupe key) and `metadata.layer` (the
  `layers` request field selects layers), and anything below them. `metadata.type` stays
  filterable: callers set it on explicit saves and it is an Atlas filter field.
* **Values**: a primitive (str of at most 512 chars, int within int64, finite float, bool, None)
  or a non-empty list of at most 100 primitives (matches any of them). At most 32 filters.

Anything else (operator objects such as `{"$ne": …}`, `{"$regex": …}`, keys starting with `$`,
unknown keys such as the runtime's `workflow_wallet`, nested lists) raises `InputRejected`
naming the key: nothing is dropped silently (fixes reference §16.26).

Which filters a layer honours (`Filters.applies_to`; fixes §16.26, where a collection-specific
filter emptied every other layer):

| path                                   | working | scene | vectors | graph | patterns | archives |
| -------------------------------------- | ------- | ----- | ------- | ----- | -------- | -------- |
| tenant paths, `scopeKind`, `scopeId`   | yes     | yes   | yes     | yes   | yes      | yes      |
| `source`                               | -       | -     | yes     | yes   | -        | -        |
| `metadata.*`                           | -       | yes   | yes     | yes   | yes      | yes      |
| `workingMemory.state.*`, `.entities.*` | yes     | -     | -       | -     | -        | -        |

**The scope always wins.** The tenant paths (`agentWallet, userAddress, mode, haiId, threadId`)
are the tenant filter's business: `mongo_clauses` and `matches` never emit or test them, so a
merge like `{**tenant_query(where), **mongo_clauses(f)}` can never widen a read. A filter on a
tenant path the read is constrained by is only *checked* (`conflicts_with_scope`): an equal value
is redundant, a different one means the read returns nothing (reference §1.3 step 5). `narrow`
folds them into the `TenantFilter`, also narrowing a path the scope leaves open (e.g. `threadId`
on a durable layer). A layer read therefore goes:

    filters = parse_filters(scope.filters).applies_to(layer)   # at the edge: 400 on bad input
    where = narrow(tenant_filter(scope, durable=...), filters)
    if where is None: return []                                # contradicts the scope
    query = {**tenant_query(where), **mongo_clauses(filters)}  # or: where.admits + matches
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from engine.errors import InputRejected
from engine.scoping import TenantFilter

Primitive: TypeAlias = str | int | float | bool | None
Value: TypeAlias = Primitive | tuple[Primitive, ...]
"""A filter value: a primitive (equality) or a tuple of primitives (membership)."""

MAX_FILTERS = 32
MAX_STRING_CHARS = 512
MAX_LIST_ITEMS = 100
MAX_SEGMENTS = 4
_INT64 = (-(2**63), 2**63 - 1)
_SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,64}")

ALIASES: Mapping[str, str] = {
    "appId": "metadata.app_id",
    "app_id": "metadata.app_id",
    "hai_id": "haiId",
    "user_id": "userAddress",
    "thread_id": "threadId",
}
TENANT_PATHS = ("agentWallet", "userAddress", "mode", "haiId", "threadId")
"""Paths the tenant filter owns; filters on them are checked against the scope, never merged."""
TOP_LEVEL_PATHS = frozenset((*TENANT_PATHS, "scopeKind", "scopeId", "source"))
PATH_PREFIXES = ("metadata.", "workingMemory.state.", "workingMemory.entities.")
SYSTEM_OWNED = ("metadata.status", "metadata.factHash", "metadata.layer")

LAYERS = ("working", "scene", "vectors", "graph", "patterns", "archives")
_ALL_LAYERS = frozenset(LAYERS)
_METADATA_LAYERS = frozenset({"scene", "vectors", "graph", "patterns", "archives"})
_SOURCE_LAYERS = frozenset({"vectors", "graph"})
_WORKING_LAYERS = frozenset({"working"})

_TENANT_ATTRS: Mapping[str, str] = {
    "agentWallet": "agent_wallet",
    "userAddress": "user_address",
    "mode": "mode",
    "haiId": "hai_id",
    "threadId": "thread_id",
}


def _show(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 80 else text[:77] + "..."


def _reject(key: object, problem: str) -> InputRejected:
    return InputRejected(f"filters: key {_show(key)} {problem}")


@dataclass(frozen=True, slots=True)
class Filters:
    """Validated filters: `(path, value)` pairs sorted by path, each path once.

    Falsy when empty, so `if filters:` tells whether the caller narrowed anything.
    """

    pairs: tuple[tuple[str, Value], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def __len__(self) -> int:
        return len(self.pairs)

    def __iter__(self) -> Iterator[tuple[str, Value]]:
        return iter(self.pairs)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(path for path, _ in self.pairs)

    def applies_to(self, layer: str) -> Filters:
        """The filters meaningful for `layer` (see the module's table)."""
        if layer not in _ALL_LAYERS:
            raise InputRejected(f"unknown layer {_show(layer)}; expected one of {LAYERS}")
        return Filters(tuple(p for p in self.pairs if layer in layers_for(p[0])))


NO_FILTERS = Filters()


def layers_for(path: str) -> frozenset[str]:
    """The layers whose documents can carry `path` (a validated filter path)."""
    if path in TOP_LEVEL_PATHS and path != "source":
        return _ALL_LAYERS
    if path == "source":
        return _SOURCE_LAYERS
    if path.startswith("metadata."):
        return _METADATA_LAYERS
    return _WORKING_LAYERS


def _path_of(key: object) -> str:
    if not isinstance(key, str):
        raise _reject(key, "is not a string")
    if key.startswith("$"):
        raise _reject(key, "is an operator; filters take field names and plain values only")
    path = ALIASES.get(key, key)
    segments = path.split(".")
    if len(segments) > MAX_SEGMENTS:
        raise _reject(key, f"has more than {MAX_SEGMENTS} path segments")
    if not all(_SEGMENT.fullmatch(segment) for segment in segments):
        raise _reject(
            key, "has an invalid path segment (each is 1-64 of A-Z a-z 0-9 _ -; no '$', no '..')"
        )
    if path in TOP_LEVEL_PATHS:
        return path
    if not path.startswith(PATH_PREFIXES):
        allowed = ", ".join(sorted(TOP_LEVEL_PATHS)) + ", " + ", ".join(PATH_PREFIXES)
        raise _reject(key, f"is not a filterable field; allowed: {allowed}")
    if any(path == owned or path.startswith(owned + ".") for owned in SYSTEM_OWNED):
        raise _reject(key, "names a system-owned field that callers cannot filter on")
    return path


def _primitive(key: object, raw: object) -> Primitive:
    if raw is None or isinstance(raw, bool):
        return raw
    if isinstance(raw, int):
        if not _INT64[0] <= raw <= _INT64[1]:
            raise _reject(key, "has an integer outside the 64-bit range")
        return raw
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise _reject(key, "has a non-finite number")
        return raw
    if isinstance(raw, str):
        if len(raw) > MAX_STRING_CHARS:
            raise _reject(key, f"has a string longer than {MAX_STRING_CHARS} characters")
        return raw
    if isinstance(raw, Mapping):
        raise _reject(
            key,
            "has an object value; operators such as $ne, $regex or $where are not allowed "
            "(give a value, or a list of values to match any of them)",
        )
    raise _reject(key, f"has a value of unsupported type {type(raw).__name__}")


def _kind(value: Primitive) -> int:
    """BSON comparison classes: null < numbers < strings < booleans (bool is not a number)."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return 3
    if isinstance(value, str):
        return 2
    return 1


def _canonical(value: Primitive) -> tuple[int, Any]:
    return (_kind(value), value)


def _value(key: object, raw: object) -> Value:
    if isinstance(raw, list | tuple):
        if not raw:
            raise _reject(key, "has an empty list (it would match nothing)")
        if len(raw) > MAX_LIST_ITEMS:
            raise _reject(key, f"has a list longer than {MAX_LIST_ITEMS} items")
        if any(isinstance(item, list | tuple) for item in raw):
            raise _reject(key, "has a nested list; list items must be plain values")
        unique = {_canonical(v): v for v in (_primitive(key, item) for item in raw)}
        return tuple(unique[k] for k in sorted(unique))
    return _primitive(key, raw)


def _same_value(a: Value, b: Value) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            return False
        return all(_canonical(x) == _canonical(y) for x, y in zip(a, b, strict=True))
    return _canonical(a) == _canonical(b)


def parse_filters(raw: Mapping[str, object] | None) -> Filters:
    """Validate a caller's `filters` object; raise `InputRejected` naming the first bad key."""
    if raw is None:
        return NO_FILTERS
    if not isinstance(raw, Mapping):
        raise InputRejected("filters must be an object")
    if len(raw) > MAX_FILTERS:
        raise InputRejected(f"filters: at most {MAX_FILTERS} keys are allowed")
    found: dict[str, tuple[object, Value]] = {}
    for key, raw_value in raw.items():
        path = _path_of(key)
        value = _value(key, raw_value)
        if path in found:
            other, seen = found[path]
            if not _same_value(seen, value):
                raise _reject(
                    key, f"and key {_show(other)} both name {path!r} with different values"
                )
            continue
        found[path] = (key, value)
    return Filters(tuple((path, found[path][1]) for path in sorted(found)))


def tenant_fields(where: TenantFilter) -> dict[str, str | None]:
    """The tenant paths `where` constrains, with their values: `agentWallet` and `userAddress`
    always (`None` = user-less rows only), `mode`/`haiId`/`threadId` when set."""
    fields: dict[str, str | None] = {
        "agentWallet": where.agent_wallet,
        "userAddress": where.user_address,
    }
    for path in ("mode", "haiId", "threadId"):
        value = getattr(where, _TENANT_ATTRS[path])
        if value is not None:
            fields[path] = value
    return fields


def _admits(value: Value, actual: str | None) -> bool:
    wanted = value if isinstance(value, tuple) else (value,)
    return any(_canonical(v) == _canonical(actual) for v in wanted)


def conflicts_with_scope(filters: Filters, scope_fields: Mapping[str, str | None]) -> bool:
    """True when a filter on a tenant path contradicts the scope, so the read must return
    nothing. `scope_fields` holds the tenant paths the read is constrained by (see
    `tenant_fields`); a filter there is satisfied when it equals (or, for a list, contains)
    the scope's value. Paths missing from `scope_fields` never conflict."""
    return any(
        path in scope_fields and not _admits(value, scope_fields[path])
        for path, value in filters.pairs
        if path in _TENANT_ATTRS
    )


def narrow(where: TenantFilter, filters: Filters) -> TenantFilter | None:
    """`where` with the filters on tenant paths folded in, or None when they contradict it.

    A path `where` constrains is only checked (`conflicts_with_scope`). A path it leaves open
    (`mode`, `haiId`, `threadId` = None) is narrowed to the filter's value, which must then be a
    single string: `InputRejected` otherwise (a tenant filter holds one value per field).
    """
    fields = tenant_fields(where)
    if conflicts_with_scope(filters, fields):
        return None
    updates: dict[str, str] = {}
    for path, value in filters.pairs:
        if path not in _TENANT_ATTRS or path in fields:
            continue
        values = value if isinstance(value, tuple) else (value,)
        only = values[0]
        if len(values) != 1 or not isinstance(only, str):
            raise InputRejected(
                f"filters: key {path!r} narrows a field the scope leaves open and must be "
                "one string (or set it in the scope)"
            )
        updates[_TENANT_ATTRS[path]] = only
    if not updates:
        return where
    return dataclasses.replace(
        where,
        mode=updates.get("mode", where.mode),
        hai_id=updates.get("hai_id", where.hai_id),
        thread_id=updates.get("thread_id", where.thread_id),
    )


def mongo_clauses(filters: Filters) -> dict[str, object]:
    """MongoDB query clauses of the non-tenant filters: a list becomes `{"$in": [...]}`, a
    primitive an equality. Tenant paths are left out (the tenant filter owns them), so merging
    the result into a tenant query can never widen it. Keys may collide with a caller's own
    clauses (`source`): combine with `$and` then, not a dict merge."""
    return {
        path: {"$in": list(value)} if isinstance(value, tuple) else value
        for path, value in filters.pairs
        if path not in _TENANT_ATTRS
    }


_MISSING = object()


def _candidates(node: object, segments: list[str]) -> list[object]:
    """Values a dotted path reaches, with MongoDB's semantics: arrays of subdocuments are
    traversed, arrays at the leaf contribute their elements (an empty array contributes
    nothing, so it matches no value, not even null), a missing field is `_MISSING`."""
    if not segments:
        return list(node) if isinstance(node, list) else [node]
    if isinstance(node, Mapping):
        if segments[0] not in node:
            return [_MISSING]
        return _candidates(node[segments[0]], segments[1:])
    if isinstance(node, list):
        return [
            value
            for item in node
            if isinstance(item, Mapping)
            for value in _candidates(item, segments)
        ]
    return [_MISSING]


def _equal(wanted: Primitive, actual: object) -> bool:
    if actual is _MISSING or actual is None:
        return wanted is None
    if not isinstance(actual, str | int | float | bool):
        return False
    return _canonical(wanted) == _canonical(actual)


def matches(filters: Filters, doc: Mapping[str, object]) -> bool:
    """The in-memory twin of `mongo_clauses`: does `doc` (stored form, camelCase) satisfy every
    non-tenant filter? A list matches any of its values; `None` matches null or missing."""
    for path, value in filters.pairs:
        if path in _TENANT_ATTRS:
            continue
        wanted = value if isinstance(value, tuple) else (value,)
        found = _candidates(doc, path.split("."))
        if not any(_equal(w, actual) for w in wanted for actual in found):
            return False
    return True
