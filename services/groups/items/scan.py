"""The items group's `scan`: one page of a tenant's rows carrying given metadata tags, each
scored against a query when one is given (issue 30).

An adapter that must rank *every* item of a set, such as the LangGraph store ranking every
item of a namespace prefix, cannot use the vectors layer: that layer keeps its top hits above
a relevance floor. `scan` hands it the whole set instead, a page at a time, and scores each
row with the deployment's embedder so the adapter sorts, filters and pages exactly.

A row's score is the best cosine between the query and each text listed at
`metadata.<texts_at>` (a row indexed by several fields is found by its best field); a row with
no text there has no score (None). Texts are embedded as documents through the runtime's
embedder, whose cache keeps a text's vector, so a scan re-embeds only texts it never saw.

A page stops at `limit` rows or before its reply would pass `PAGE_BYTES`, whichever comes
first; `next_after` is then the last row's id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.records import MemoryRow
from engine.scoping import tenant_filter
from engine.upkeep.item_tags import tagged_value
from schemas.requests import ItemReply, ItemRequest
from services.runtime import Runtime

PAGE_BYTES = 600_000
"""JSON bytes of a page's rows at most: well inside one message (`MAX_MESSAGE_BYTES`)."""


def row_texts(row: MemoryRow, path: str | None) -> list[str]:
    """The non-blank texts listed at `metadata.<path>` (none when there is no list)."""
    listed = tagged_value(row.metadata, path) if path else None
    if not isinstance(listed, list):
        return []
    return [t for t in listed if isinstance(t, str) and t.strip()]


async def scores_of(
    rt: Runtime, query: str, rows: Sequence[MemoryRow], path: str | None
) -> dict[str, float | None]:
    """Each row's best cosine against `query` over its texts (None: it has none)."""
    texts = {id_: row_texts(r, path) for id_, r in ((r.vector_id, r) for r in rows)}
    distinct = sorted({t for ts in texts.values() for t in ts})
    [query_vector] = await rt.embedder.embed([query], "query")
    vectors = await rt.embedder.embed(distinct, "document") if distinct else []
    # the embedder's vectors are unit length: the dot product is the cosine
    similarity = {t: float(np.dot(query_vector, v)) for t, v in zip(distinct, vectors, strict=True)}
    return {id_: (max(similarity[t] for t in ts) if ts else None) for id_, ts in texts.items()}


def page_of(
    rows: Sequence[MemoryRow], public: Callable[[MemoryRow], dict[str, Any]]
) -> list[dict[str, Any]]:
    """The first rows, each as `public` shows it, until the page would pass `PAGE_BYTES`
    (one row at least): a reply's page of a `scan` or a `read`."""
    page: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        shown = public(row)
        size += len(json.dumps(shown, default=str))
        if page and size > PAGE_BYTES:
            break
        page.append(shown)
    return page


async def scan(
    rt: Runtime, request: ItemRequest, public: Callable[[MemoryRow], dict[str, Any]]
) -> ItemReply:
    """One page of the request's `scan` (see the module docstring)."""
    where = tenant_filter(request.scope, durable=True)
    rows = await rt.items.scan(where, request.tagged or {}, request.after, request.limit)
    page = page_of(rows, public)
    full = len(rows) == request.limit or len(page) < len(rows)
    kept = rows[: len(page)]
    scores = None
    if request.query is not None:
        scores = await scores_of(rt, request.query, kept, request.texts_at)
    return ItemReply(
        items=page,
        scores=scores,
        next_after=kept[-1].vector_id if full and kept else None,
    )
