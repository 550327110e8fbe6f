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

from services.integrations.store_records import MAX_QUERY_HITS, MAX_TEXT_CHARS


def item_text(value: Mapping[str, Any], fields: Sequence[str]) -> str:
    """The text mnemostream embeds for `value`: the texts at `fields` (LangGraph paths),
    one per line, cut at `MAX_TEXT_CHARS`; the whole value as JSON when they hold none."""
    texts = [t for path in fields for t in get_text_at_path(value, path) if t.strip()]
    text = "\n".join(texts).strip() or json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text[:MAX_TEXT_CHARS]


def check_op(op: Op) -> None:
    """Refuse a bad op before any of its batch runs (`InvalidNamespaceError`, `ValueError`,
    `NotImplementedError`)."""
    validate_op_namespace(op)
    if isinstance(op, PutOp):
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.value is not None and op.namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {op.namespace}'
            )
        if op.ttl is not None:
            raise NotImplementedError("MnemoStore does not support TTLs (use ttl=None)")
        if op.value is not None and not isinstance(op.value, Mapping):
            raise ValueError("a LangGraph item's value must be a mapping")
    elif isinstance(op, SearchOp) and op.query and op.offset + op.limit > MAX_QUERY_HITS:
        raise ValueError(
            f"a natural-language search answers at most {MAX_QUERY_HITS} items: "
            f"offset + limit is {op.offset + op.limit}"
        )
    elif not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
        raise ValueError(f"unknown operation {type(op).__name__}")
