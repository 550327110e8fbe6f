"""The pieces every MongoDB adapter shares: the document type, the stored form of a scope, of
a vector and of a message, the tenant filter as a Mongo query, and the idempotent append.

Documents use the reference's camelCase field names. Vectors are stored as BSON float32
vectors (`Binary`); older documents may hold plain arrays, which `unvector` reads as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
from bson.binary import VECTOR_SUBTYPE, Binary, BinaryVectorDtype
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import DuplicateKeyError, PyMongoError

from engine.errors import DependencyFailed
from engine.records import ScopeFields, StoredMessage
from engine.scoping import TenantFilter

Doc = dict[str, Any]


def scope_doc(scope: ScopeFields) -> Doc:
    """The tenant fields of a stored document."""
    return scope.view()


def scope_of(doc: Mapping[str, Any]) -> ScopeFields:
    """The tenant fields of a stored document (the inverse of `scope_doc`)."""
    return ScopeFields(
        agent_wallet=doc["agentWallet"],
        user_address=doc.get("userAddress"),
        thread_id=doc.get("threadId"),
        mode=doc.get("mode"),
        hai_id=doc.get("haiId"),
    )


def tenant_query(where: TenantFilter) -> Doc:
    """The Mongo filter of a tenant filter (`userAddress: None` matches user-less rows).

    A filter widened by `shared_sources` (a user's read of the memory layers) adds
    `$or: [{agentWallet, userAddress: <user>}, {agentWallet, userAddress: None, source:
    {$in: shared}}]`: the user's own rows, or the agent's user-less rows of the shared
    sources (agent knowledge). Each branch names the agent itself, so each is an index scan
    of the `memory` index on (agentWallet, userAddress, source, metadata.status) whatever
    the planner does with the outer clauses. The query then holds a top-level `$or`: a
    caller adding alternatives of its own combines them with `$and`, never by a dict merge
    that would replace it."""
    users = where.users
    own: Doc | str | None = users[0] if len(users) == 1 else {"$in": list(users)}
    agent = where.agent_wallet
    query: Doc = {"agentWallet": agent}
    if where.widened:
        query["$or"] = [
            {"agentWallet": agent, "userAddress": own},
            {
                "agentWallet": agent,
                "userAddress": None,
                "source": {"$in": list(where.shared_sources)},
            },
        ]
    else:
        query["userAddress"] = own
    modes = where.modes
    if modes is not None:
        query["mode"] = modes[0] if len(modes) == 1 else {"$in": list(modes)}
    if where.hai_id is not None:
        query["haiId"] = where.hai_id
    if where.thread_id is not None:
        query["threadId"] = where.thread_id
    return query


def agent_query(agent_wallet: str, user_address: str | None) -> Doc:
    """Every row of the agent, or of one of its users (admin aggregates only)."""
    query: Doc = {"agentWallet": agent_wallet}
    if user_address is not None:
        query["userAddress"] = user_address
    return query


def as_date(ms: int) -> datetime:
    """A UTC datetime of milliseconds since epoch (for TTL-indexed fields)."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


_FLOAT32_HEADER = BinaryVectorDtype.FLOAT32.value + b"\x00"
"""A BSON float32 vector's first two bytes: its dtype, then no padding."""


def vector(embedding: np.ndarray[Any, Any]) -> Binary:
    """The stored form of a vector: a BSON float32 vector (subtype 9), its bytes written
    straight from the array (`Binary.from_vector` packs a list of floats: 16 µs against
    2 µs for 384 dimensions, for every vector a turn stores)."""
    raw = np.ascontiguousarray(embedding, dtype="<f4").tobytes()
    return Binary(_FLOAT32_HEADER + raw, VECTOR_SUBTYPE)


def unvector(value: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    """A float32 array of a stored vector (BSON vector or plain array)."""
    if isinstance(value, Binary):
        # BSON vector: 1 byte dtype, 1 byte padding, then little-endian float32 values
        return np.frombuffer(bytes(value)[2:], dtype="<f4").astype(np.float32)
    return np.asarray(value, dtype=np.float32)


def optional_vector(doc: Mapping[str, Any]) -> Any:
    """The document's `embedding` as an array, or None when it has none."""
    value = doc.get("embedding")
    return None if value is None else unvector(value)


def message_doc(m: StoredMessage) -> Doc:
    doc: Doc = {"role": m.role, "content": m.content, "timestamp": m.timestamp}
    if m.tool_calls is not None:
        doc["toolCalls"] = m.tool_calls
    if m.turn_id is not None:
        doc["turnId"] = m.turn_id
    if m.name is not None:
        doc["name"] = m.name
    if m.raw is not None:
        doc["raw"] = m.raw
    return doc


def message_of(doc: Mapping[str, Any]) -> StoredMessage:
    return StoredMessage(
        role=doc["role"],
        content=doc["content"],
        timestamp=int(doc["timestamp"]),
        tool_calls=doc.get("toolCalls"),
        turn_id=doc.get("turnId"),
        name=doc.get("name"),
        raw=doc.get("raw"),
    )


async def append_once(
    col: AsyncCollection[Doc], key: str, turn_id: str, update: Doc, what: str
) -> bool:
    """Apply `update` to the document `key` unless it already holds `turn_id` in `turnIds`
    (upserting it when absent). True if applied, False if the turn was applied before: the
    guard `turnIds: {$ne: turn_id}` then matches no document and the upsert collides on
    `_id`. Driver errors become `DependencyFailed("<what> failed: …")`."""
    try:
        result = await col.update_one(
            {"_id": key, "turnIds": {"$ne": turn_id}}, update, upsert=True
        )
    except DuplicateKeyError:
        return False
    except PyMongoError as exc:
        raise DependencyFailed(f"{what} failed: {exc}") from exc
    return result.upserted_id is not None or result.modified_count == 1
