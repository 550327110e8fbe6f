"""Knowledge documents as `knowledge` memory rows (reference §14, genesis and workspace).

A document is cut into overlapping character windows (`chunk`), each stored as one embedded
`source: "knowledge"` row. An agent-level scope (no user) holds the agent's own (genesis)
knowledge, which every user of the agent reads (`engine.scoping.SHARED_SOURCES`: a user's
vectors layer finds the agent's user-less knowledge rows beside the user's own); a scope with
a user holds that user's workspace knowledge, which only that user reads. The rows live in
the `memory` collection, so the vectors layer finds them like any other row of the tenant.

Row ids are derived from the tenant, the document's identity and the chunk, so indexing the
same document twice (or redelivering the request) stores nothing new and embeds nothing.
Re-indexing an edited document adds rows for the changed chunks; rows of the old version
stay until decay/cleanup removes them (the store has no delete).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.history import Ledger, change
from engine.ports import Embedder, MemoryStore
from engine.records import ItemChange, MemoryRow, ScopeFields
from engine.scoping import KNOWLEDGE_SOURCE, scope_fields
from schemas.ids import h32
from schemas.scope import Scope

CHUNK_CHARS = 1400
CHUNK_OVERLAP = 180
EMBED_BATCH = 32
"""Chunks embedded per embedder call."""

SYSTEM_KEYS = frozenset(
    {"scope", "type", "key", "sourceFormat", "uri", "chunk", "chunks", "source", "layer", "status"}
)
"""Metadata keys the system owns; caller metadata never overrides them (reference §16.27)."""


def chunk(text: str, size: int = CHUNK_CHARS, overlap: int = CHUNK_OVERLAP) -> list[str]:
    """Overlapping windows of at most `size` characters, in document order.

    A window that does not reach the end of the text is cut at its last newline when that
    newline lies past half the window (the newline starts the next window's new text rather
    than ending this one). The next window starts `len(window) - overlap` characters further
    on, at least one character, so the loop always ends. Windows are exact slices of `text`
    (consecutive windows share exactly `overlap` characters); whitespace-only windows are
    dropped. Raises `ValueError` unless `size >= 1` and `0 <= overlap < size`.
    """
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size >= 1 and 0 <= overlap < size, got {size=} {overlap=}")
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            # a newline just past the window means the window already ends a line
            newline = text.rfind("\n", start, end + 1)
            if 2 * (newline - start) > size:
                end = newline
        window = text[start:end]
        if window.strip():
            chunks.append(window)
        if end >= len(text):
            break
        start += max(len(window) - overlap, 1)
    return chunks


def knowledge_scope(scope: ScopeFields) -> str:
    """`"workspace"` for a user's documents, `"genesis"` for the agent's own (no user)."""
    return "genesis" if scope.user_address is None else "workspace"


def chunk_id(scope: ScopeFields, document: str, index: int, text: str) -> str:
    """The row id of chunk `index` (0-based) of a document within the tenant (the thread is
    not part of it: knowledge is not per thread)."""
    tenant = [scope.agent_wallet, scope.user_address, scope.mode, scope.hai_id]
    return "kn_" + h32(json.dumps([*tenant, document, index, h32(text)]))


def document_id(content: str, key: str | None, uri: str | None) -> str:
    """What identifies a document within its tenant: `key`, else `uri`, else the content's
    hash (`sha:<H32>`)."""
    return key if key is not None else uri if uri is not None else "sha:" + h32(content)


def chunk_ids(scope: ScopeFields, content: str, key: str | None, uri: str | None) -> list[str]:
    """The row ids `index_document` stores for this document, in chunk order (what a caller
    can be told before the rows exist)."""
    document = document_id(content, key, uri)
    return [chunk_id(scope, document, i, piece) for i, piece in enumerate(chunk(content))]


async def index_document(
    memory: MemoryStore,
    embedder: Embedder,
    *,
    scope: ScopeFields,
    content: str,
    key: str | None,
    source_format: str,
    uri: str | None,
    at: int,
    metadata: Mapping[str, Any] | None = None,
    ledger: Ledger | None = None,
) -> list[str]:
    """Store `content` as chunked `knowledge` rows under `scope`; returns the row ids in
    chunk order (new and already stored alike; empty when the content is blank).

    The document is identified by `key`, else `uri`, else its content hash. `at` (ms since
    epoch) is the rows' creation time. Only chunks not stored yet are embedded (as
    "document", in batches of `EMBED_BATCH`). Row metadata is the caller's `metadata` plus
    `{scope, type: "knowledge", key, sourceFormat, uri, chunk: 1-based, chunks: n}` (`key`
    and `uri` only when given), the system keys winning. Each new chunk is recorded as
    `created` in the `ledger`.
    """
    pieces = chunk(content)
    document = document_id(content, key, uri)
    ids = [chunk_id(scope, document, i, piece) for i, piece in enumerate(pieces)]
    missing = [i for i, vector_id in enumerate(ids) if not await memory.exists(vector_id)]
    caller = {k: v for k, v in (metadata or {}).items() if k not in SYSTEM_KEYS}
    system: dict[str, Any] = {
        "scope": knowledge_scope(scope),
        "type": "knowledge",
        "sourceFormat": source_format,
        "chunks": len(pieces),
    }
    if key is not None:
        system["key"] = key
    if uri is not None:
        system["uri"] = uri
    created: list[ItemChange] = []
    for first in range(0, len(missing), EMBED_BATCH):
        batch = missing[first : first + EMBED_BATCH]
        vectors = await embedder.embed([pieces[i] for i in batch], "document")
        for i, vector in zip(batch, vectors, strict=True):
            inserted = await memory.insert_if_absent(
                MemoryRow(
                    vector_id=ids[i],
                    scope=scope,
                    content=pieces[i],
                    embedding=vector,
                    embedding_model=embedder.model,
                    source=KNOWLEDGE_SOURCE,
                    created_at=at,
                    metadata={**caller, **system, "chunk": i + 1},
                )
            )
            if inserted and ledger is not None:
                details = {"source": KNOWLEDGE_SOURCE, "chunk": i + 1, "chunks": len(pieces)}
                created.append(
                    change(
                        ids[i], scope, "created", ledger.cause, at, new=pieces[i], details=details
                    )
                )
    if ledger is not None:
        await ledger.note(created)
    return ids


def rows_scope(scope: Scope) -> ScopeFields:
    """The tenant fields a document's rows are stored under (no thread: knowledge is not
    per thread)."""
    return scope_fields(scope.tenant())
