"""What `MnemoStore` (`services.integrations.langgraph`) keeps in a memory row, and
LangGraph's filter semantics, in plain Python (no LangGraph import: unit-testable alone).

A LangGraph item is one fact of the store's tenant: `metadata.langgraph` holds the item
(`Record`), its row id derives from an anchor text naming the namespace and the key
(`anchor`), and `prefix_tag` names each prefix of its namespace so a layer search can be
narrowed to a prefix with an ordinary metadata filter.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

RECORD_KEY = "langgraph"
"""The memory row's metadata key that holds the item."""
TTL_KEY = "langgraphTtl"
"""The metadata key of an item's TTL (`{"expiresAt", "ttlMinutes"}`), apart from the item so
that refreshing it on a read never writes back a value a concurrent put replaced."""
FACT_TYPE = "langgraph"
"""The `type` of the facts the store writes (their `metadata.type`)."""
MAX_TEXT_CHARS = 4_000
"""Characters of an item's embedded text (the most an item's content holds)."""
MAX_VALUE_CHARS = 32_000
"""Characters of an item's value as JSON (the most one metadata string holds)."""
TEXTS_KEY = f"{RECORD_KEY}.texts"
"""The metadata path of an item's indexed texts (what a scan scores a query against)."""
PREFIXES_KEY = f"{RECORD_KEY}.prefixes"
"""The metadata path of an item's namespace prefix tags (what a scan selects by)."""
MINUTE_MS = 60_000
"""Milliseconds in a minute (TTLs are in minutes)."""
SCAN_PAGE = 200
"""Rows one scan request reads at most (the items group's page limit)."""


class Record(BaseModel):
    """What a memory row's `metadata.langgraph` holds (camelCase, times in ms)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    namespace: list[str]
    key: str
    value: str
    indexed: bool
    prefixes: list[str]
    createdAt: int  # the stored field names are camelCase
    updatedAt: int
    texts: list[str] = []
    """The indexed texts, one per indexed field (a query ranks the item by its best)."""
    expiresAt: int | None = None
    """When the item expires (ms since epoch); None: never."""
    ttlMinutes: float | None = None
    """The item's time to live, what a read refreshes `expiresAt` by; None: none."""

    def expired(self, at: int) -> bool:
        """Whether the item's TTL has run out at `at` (ms since epoch)."""
        return self.expiresAt is not None and self.expiresAt <= at


def anchor(namespace: tuple[str, ...], key: str) -> str:
    """The text whose fact hash is the item's row id: names the namespace and the key
    exactly (case included; the fact hash lowercases its text, a hex digest has no case)."""
    path = json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))
    return "LangGraph store item " + hashlib.sha256(path.encode("utf-8")).hexdigest()


def prefix_tag(prefix: Sequence[str]) -> str:
    """The tag of a namespace prefix: what a search filters `metadata.langgraph.prefixes` by
    (at most 512 characters, the filters' limit, whatever the labels)."""
    return _tag(tuple(prefix))


@functools.lru_cache(maxsize=4_096)  # a store under load tags the same prefixes over and over
def _tag(prefix: tuple[str, ...]) -> str:
    path = json.dumps(list(prefix), ensure_ascii=False, separators=(",", ":"))
    return "p" + hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]


def value_of(record: Record) -> dict[str, Any]:
    """The item's value (a mapping; {} if what is stored is not one)."""
    value = json.loads(record.value)
    return value if isinstance(value, dict) else {}


def moment(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def now_ms() -> int:
    return int(time.time() * 1000)


def compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics: an operator object (`{"$gt": 3}`), a nested object
    (every key matches), a list (element-wise), else equality."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(actual, op, v) for op, v in wanted.items())
        return isinstance(actual, dict) and all(
            compare(actual.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _operator(actual: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return bool(actual == wanted)
    if op == "$ne":
        return bool(actual != wanted)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        if not isinstance(actual, int | float) or isinstance(actual, bool):
            return False  # a missing or non-numeric value is outside every range
        bound = float(wanted)
        return {
            "$gt": actual > bound,
            "$gte": actual >= bound,
            "$lt": actual < bound,
            "$lte": actual <= bound,
        }[op]
    raise ValueError(f"unsupported filter operator {op!r} (use $eq, $ne, $gt, $gte, $lt, $lte)")


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether `value` satisfies every key of `filter` (see `_compare`)."""
    return all(compare(value.get(k), v) for k, v in (filter or {}).items())


def namespace_matches(kind: str, path: Sequence[str], namespace: tuple[str, ...]) -> bool:
    """Whether `namespace` starts (`kind` "prefix") or ends ("suffix") with `path`, whose
    "*" labels match any label."""
    if len(namespace) < len(path):
        return False
    if not path:
        return True
    labels = namespace[: len(path)] if kind == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == label for p, label in zip(path, labels, strict=True))
