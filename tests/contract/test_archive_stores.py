"""Archives sealed at rest (issue 17 §3), on the in-memory store and on MongoDB alike: with an
archive key, a canary said in an archived memory is nowhere in what the store holds — not in
any document of any collection (as BSON, every string decoded as base64 and gzip where it is
one), nor in an index definition — yet the archive still reads back and is found; without a
key the same dump does show it (so the check can fail); and archives sealed under key A read
back once A is a previous key and B the current one. The MongoDB cases are `integration`."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import bson
import numpy as np
import pytest
from pymongo import AsyncMongoClient

from engine.adapters.memory import HashingEmbedder, InMemoryArchiveStore
from engine.adapters.mongo import MongoArchiveStore, ensure_schema
from engine.errors import InputRejected
from engine.records import ArchiveRecord, MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.archive_seal import ArchiveKeys, SealedArchiveStore, StoredArchives
from engine.upkeep.archives import build_archive, embed_archive, read_archive
from tests.support.mongo import IMPLEMENTATIONS

CANARY = "swordfish-42"
AGENT = "0xSealed"
START, END = 1_700_000_000_000, 1_700_604_800_000


@dataclass
class Backend:
    """A fresh archive store and a dump of everything its storage holds, as text and bytes."""

    store: StoredArchives
    dump: Callable[[], Awaitable[list[str | bytes]]]


@pytest.fixture(params=IMPLEMENTATIONS)
async def backend(
    request: pytest.FixtureRequest, unique: Callable[[str], str]
) -> AsyncIterator[Backend]:
    if request.param == "memory":
        memory = InMemoryArchiveStore()

        async def records() -> list[str | bytes]:
            return [piece for r in memory.records() for piece in pieces(dataclasses.asdict(r))]

        yield Backend(memory, records)
        return
    stack = request.getfixturevalue("stack")
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        stack.mongo_uri, serverSelectionTimeoutMS=10_000
    )
    name = unique("sealdb")
    db = client[name]
    try:
        await ensure_schema(db)

        async def collections() -> list[str | bytes]:
            out: list[str | bytes] = []
            for collection in await db.list_collection_names():
                for index in await (await db[collection].list_indexes()).to_list(None):
                    out.append(json.dumps(dict(index), default=str))
                for doc in await db[collection].find({}).to_list(None):
                    out.append(bson.encode(doc))  # every byte, binary blobs included
                    out.extend(pieces(doc))
            return out

        yield Backend(MongoArchiveStore(db), collections)
    finally:
        await client.drop_database(name)
        await client.close()


def pieces(value: Any) -> Iterator[str | bytes]:
    """Every string and byte string inside `value`; a string that is base64 of gzip of JSON
    (an archive's content in clear) also as the JSON it decodes to."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from pieces(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from pieces(v)
    elif isinstance(value, bytes):
        yield value
    elif isinstance(value, str):
        yield value
        with contextlib.suppress(InputRejected):
            yield json.dumps(read_archive(value), ensure_ascii=False)
    elif isinstance(value, np.ndarray):
        yield value.tobytes()


def holds(dump: list[str | bytes], text: str) -> bool:
    return any((text.encode() if isinstance(p, bytes) else text) in p for p in dump)


def scope(user: str = "ana") -> ScopeFields:
    return ScopeFields(AGENT, user, None, None, None)


def where(user: str = "ana") -> TenantFilter:
    return TenantFilter(agent_wallet=AGENT, user_address=user)


async def ana_archive(user: str = "ana") -> ArchiveRecord:
    said = [
        f"The user's vault code is {CANARY}.",
        "The user keeps the vault behind the wine rack.",
        "We talked about the wine rack and the vault.",
    ]
    rows = [
        MemoryRow(
            f"{user}-{i}",
            ScopeFields(AGENT, user, "T1", None, None),
            text,
            np.full(8, 0.5, dtype=np.float32),
            "m",
            "fact" if i < 2 else "session",
            START + 1 + i,
            {"confidence": 0.9, "slot": "vault"},
        )
        for i, text in enumerate(said)
    ]
    payload = build_archive(rows, scope=scope(user), start=START, end=END, created_at=END)
    assert payload is not None
    payload = await embed_archive(payload, HashingEmbedder())
    return dataclasses.replace(payload.record, content=payload.content)


@pytest.mark.parametrize("keyed", [True, False], ids=["with-key", "without-key"])
async def test_with_a_key_no_canary_is_stored_anywhere_and_without_one_it_is(
    backend: Backend, keyed: bool
) -> None:
    keys = ArchiveKeys(os.urandom(32)) if keyed else None
    store = SealedArchiveStore(backend.store, keys)
    plain = await ana_archive()

    assert await store.insert_if_absent(plain)

    dump = await backend.dump()
    assert dump  # something was stored, and read back
    assert holds(dump, plain.archive_id)
    if keyed:
        assert keys is not None
        assert not holds(dump, CANARY)
        assert not holds(dump, "wine")  # topics and summary are sealed too
        assert holds(dump, keys.current_id)  # the key id is on the document
    else:
        assert holds(dump, CANARY)  # the same dump shows it when nothing is sealed
        assert holds(dump, "wine")
    [found] = await store.active(where(), 5)
    assert found.summary == plain.summary  # what search reads, opened
    assert found.topics == plain.topics
    assert found.embedding is not None
    assert plain.embedding is not None
    assert np.allclose(found.embedding, plain.embedding)
    assert await store.active(where("ben"), 5) == []
    unpinned = await store.unpinned(plain.archive_id)
    assert unpinned is not None
    assert unpinned.content is not None
    assert CANARY in json.dumps(read_archive(unpinned.content))  # the payload opens too


async def test_archives_sealed_under_key_a_read_back_when_a_is_previous_and_b_current(
    backend: Backend,
) -> None:
    key_a, key_b = os.urandom(32), os.urandom(32)
    old = await ana_archive()
    assert await SealedArchiveStore(backend.store, ArchiveKeys(key_a)).insert_if_absent(old)

    rotated = SealedArchiveStore(backend.store, ArchiveKeys(key_b, [key_a]))
    new = await ana_archive("ben")
    assert await rotated.insert_if_absent(new)

    [read_old] = await rotated.active(where(), 5)
    assert read_old.summary == old.summary
    unpinned = await rotated.unpinned(old.archive_id)
    assert unpinned is not None
    assert unpinned.content == old.content
    [read_new] = await rotated.active(where("ben"), 5)
    assert read_new.summary == new.summary
    dump = await backend.dump()
    assert not holds(dump, CANARY)
    assert holds(dump, ArchiveKeys(key_a).current_id)  # the old archive keeps its key id
    assert holds(dump, ArchiveKeys(key_b).current_id)  # the new one is sealed under B
    with pytest.raises(InputRejected, match="is not configured"):
        await SealedArchiveStore(backend.store, ArchiveKeys(key_b)).active(where(), 5)


async def test_a_pinned_archive_is_not_read_for_pinning_again(backend: Backend) -> None:
    store = SealedArchiveStore(backend.store, ArchiveKeys(os.urandom(32)))
    record = await ana_archive()
    await store.insert_if_absent(record)

    await store.set_cid(record.archive_id, "bafy-sealed")

    assert await store.unpinned(record.archive_id) is None
    assert await store.unpinned("arc_missing") is None
