"""What `MnemoStore` checks of a LangGraph op before any of its batch runs, and the text it
embeds for an item (`services.integrations.langgraph`)."""

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

from services.integrations.store_records import MAX_TEXT_CHARS


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
