"""What `MnemoStore` checks of a LangGraph op before any of its batch runs, the text it
embeds for an item, and the items write a put becomes (`services.integrations.langgraph`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    get_text_at_path,
    validate_op_namespace,
)

from services.integrations.store_records import (
    FACT_TYPE,
    MAX_TEXT_CHARS,
    MINUTE_MS,
    RECORD_KEY,
    TTL_KEY,
    now_ms,
    prefix_tag,
)


def item_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    """The texts a query ranks `value` by: each non-blank text at `fields` (LangGraph paths,
    `"$"` the whole value as JSON), one per field (a path with `[*]` gives several), each
    cut at `MAX_TEXT_CHARS`, and together at most `MAX_TEXT_CHARS` (what one item holds)."""
    texts: list[str] = []
    left = MAX_TEXT_CHARS
    for text in (t for path in fields for t in get_text_at_path(value, path) if t.strip()):
        if left <= 0:
            break
        texts.append(text[:left])
        left -= len(texts[-1])
    return texts


def item_text(value: Mapping[str, Any], texts: Sequence[str]) -> str:
    """The row's content (what pre_turn and the vectors layer read): the item's indexed
    texts one per line, cut at `MAX_TEXT_CHARS`; the whole value as JSON when there are none."""
    text = "\n".join(texts).strip() or json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text[:MAX_TEXT_CHARS]


def check_op(op: Op) -> None:
    """Refuse a bad op before any of its batch runs (`InvalidNamespaceError`, `ValueError`)."""
    validate_op_namespace(op)
    if isinstance(op, PutOp):
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        # the "langgraph" root label is refused by `put`/`aput` (BaseStore), not by a batch:
        # LangGraph's stores take a PutOp under it that goes past the public API
        if op.ttl is not None and not op.ttl > 0:
            raise ValueError(f"a TTL is a positive number of minutes, not {op.ttl!r}")
        if op.value is not None and not isinstance(op.value, Mapping):
            raise ValueError("a LangGraph item's value must be a mapping")
    elif not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
        raise ValueError(f"unknown operation {type(op).__name__}")


def put_write(item_id: str, op: PutOp, fields: Sequence[str]) -> dict[str, Any]:
    """The items `write` (`schemas.item_writes.ItemWrite`) of a put of row `item_id` (a
    delete when its value is None); `fields`: the store's indexed paths."""
    if op.value is None:
        return {"id": item_id, "op": "delete"}
    value = dict(op.value)
    paths = fields if op.index is None or op.index is False else tuple(op.index)
    texts = [] if op.index is False else item_texts(value, paths)
    now = now_ms()
    record = {
        "namespace": list(op.namespace),
        "key": op.key,
        "value": json.dumps(value, ensure_ascii=False, separators=(",", ":")),
        "indexed": op.index is not False,
        "prefixes": [prefix_tag(op.namespace[:n]) for n in range(len(op.namespace) + 1)],
        "createdAt": now,  # what is read back is the row's own creation time
        "updatedAt": now,
        "texts": texts,
    }
    expiry = {
        "expiresAt": None if op.ttl is None else now + int(op.ttl * MINUTE_MS),
        "ttlMinutes": op.ttl,
    }
    return {
        "id": item_id,
        "op": "put",
        "content": item_text(value, texts),
        "metadata": {RECORD_KEY: record, TTL_KEY: expiry},
        "type": FACT_TYPE,
    }
