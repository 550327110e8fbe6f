"""Archives sealed at rest (issue 17 §3, `engine.upkeep.archive_seal`): a per-tenant key
derived from the configured one, a key id on the record, blobs bound to their archive and
field, rotation through previous keys, and the settings that carry the keys."""

from __future__ import annotations

import base64
import os
from dataclasses import replace

import numpy as np
import pytest
from pydantic import ValidationError

from engine.adapters.memory import HashingEmbedder, InMemoryArchiveStore
from engine.errors import InputRejected
from engine.records import ArchiveRecord, MemoryRow, ScopeFields
from engine.scoping import TenantFilter
from engine.upkeep.archive_seal import (
    ArchiveKeys,
    SealedArchiveStore,
    key_id,
    open_archive,
    seal_archive,
)
from engine.upkeep.archives import build_archive, embed_archive, read_archive
from services.runtime.providers import archive_keys
from services.settings import Settings

CANARY = "swordfish-42"
SCOPE = ScopeFields("0xAgent", "U1", None, None, None)
START, END = 1_700_000_000_000, 1_700_600_000_000


def rows(scope: ScopeFields = SCOPE) -> list[MemoryRow]:
    texts = [
        f"The user's vault code is {CANARY}.",
        "The user keeps the vault in the cellar.",
    ]
    return [
        MemoryRow(
            f"f{i}",
            replace(scope, thread_id="T1"),
            text,
            np.full(4, 0.5, dtype=np.float32),
            "m",
            "fact",
            START + i + 1,
            {"confidence": 0.9},
        )
        for i, text in enumerate(texts)
    ]


async def archive(scope: ScopeFields = SCOPE) -> ArchiveRecord:
    payload = build_archive(rows(scope), scope=scope, start=START, end=END, created_at=END)
    assert payload is not None
    embedded = await embed_archive(payload, HashingEmbedder())
    return replace(embedded.record, content=embedded.content)


def shows(record: ArchiveRecord) -> str:
    """Every readable field of a record, its content decoded as anyone could."""
    text = repr(record)
    if record.content is not None:
        text += str(read_archive(record.content))
    return text


async def test_a_sealed_record_holds_nothing_readable_and_opens_to_the_same_record() -> None:
    plain = await archive()
    keys = ArchiveKeys(os.urandom(32))
    assert CANARY in shows(plain)  # the check below can fail

    sealed = seal_archive(plain, keys)

    assert CANARY not in shows(sealed)
    assert (sealed.summary, sealed.topics, sealed.embedding, sealed.content) == ("", [], None, None)
    assert sealed.seal is not None
    assert sealed.seal.key_id == keys.current_id
    assert CANARY.encode() not in sealed.seal.index + (sealed.seal.content or b"")
    opened = open_archive(sealed, keys)
    assert opened.seal is None
    assert (opened.summary, opened.topics, opened.content) == (
        plain.summary,
        plain.topics,
        plain.content,
    )
    assert plain.embedding is not None
    assert opened.embedding is not None
    assert opened.embedding.dtype == np.float32
    assert np.array_equal(opened.embedding, plain.embedding)  # exact, not rounded
    assert seal_archive(sealed, keys) is sealed  # never sealed twice


async def test_each_user_has_their_own_key_and_a_blob_opens_only_where_it_was_sealed() -> None:
    keys = ArchiveKeys(os.urandom(32))
    mine = seal_archive(await archive(), keys)
    other_scope = replace(SCOPE, user_address="U2")
    assert keys.tenant_key(keys.current_id, SCOPE) != keys.tenant_key(keys.current_id, other_scope)
    assert keys.tenant_key(keys.current_id, SCOPE) != keys.current  # derived, not the key

    for moved in (
        replace(mine, scope=other_scope),  # another user's document
        replace(mine, archive_id="arc_other"),  # another archive's id
    ):
        with pytest.raises(InputRejected, match="does not open"):
            open_archive(moved, keys)
    assert mine.seal is not None
    assert mine.seal.content is not None
    swapped = replace(mine.seal, index=mine.seal.content)  # the payload as the index
    with pytest.raises(InputRejected, match="does not open"):
        open_archive(replace(mine, seal=swapped), keys)
    tampered = bytearray(mine.seal.index)
    tampered[-1] ^= 1
    with pytest.raises(InputRejected, match="does not open"):
        open_archive(replace(mine, seal=replace(mine.seal, index=bytes(tampered))), keys)


async def test_rotation_old_key_ids_open_when_the_old_key_is_a_previous_key() -> None:
    key_a, key_b = os.urandom(32), os.urandom(32)
    under_a = seal_archive(await archive(), ArchiveKeys(key_a))

    rotated = ArchiveKeys(key_b, [key_a])

    assert rotated.ids == (key_id(key_b), key_id(key_a))
    assert (
        open_archive(under_a, rotated).summary == open_archive(under_a, ArchiveKeys(key_a)).summary
    )
    resealed = seal_archive(await archive(), rotated).seal
    assert resealed is not None
    assert resealed.key_id == key_id(key_b)  # new archives are sealed under the current key
    with pytest.raises(InputRejected, match=f"key id {key_id(key_a)} is not configured"):
        open_archive(under_a, ArchiveKeys(key_b))
    with pytest.raises(InputRejected, match="no archive key is configured"):
        open_archive(under_a, None)


def test_key_ids_name_a_key_without_revealing_it() -> None:
    key = os.urandom(32)
    assert key_id(key) == key_id(bytes(key))
    assert key_id(key) != key_id(os.urandom(32))
    assert len(key_id(key)) == 12
    assert "ids=" in repr(ArchiveKeys(key))
    assert key.hex() not in repr(ArchiveKeys(key))
    with pytest.raises(InputRejected, match="32 bytes"):
        ArchiveKeys(os.urandom(16))


async def test_without_keys_the_store_keeps_archives_as_given_and_refuses_sealed_ones() -> None:
    inner = InMemoryArchiveStore()
    plain = await archive()
    assert await SealedArchiveStore(inner, None).insert_if_absent(plain)
    [stored] = inner.records()
    assert stored == plain  # behaviour unchanged without a key

    sealed_inner = InMemoryArchiveStore()
    await SealedArchiveStore(sealed_inner, ArchiveKeys(os.urandom(32))).insert_if_absent(plain)
    where = TenantFilter(agent_wallet=SCOPE.agent_wallet, user_address="U1")
    with pytest.raises(InputRejected, match="sealed"):
        await SealedArchiveStore(sealed_inner, None).active(where, 5)


async def test_an_archive_stored_in_clear_before_a_key_was_set_still_reads() -> None:
    inner = InMemoryArchiveStore()
    plain = await archive()
    await inner.insert_if_absent(plain)
    store = SealedArchiveStore(inner, ArchiveKeys(os.urandom(32)))
    where = TenantFilter(agent_wallet=SCOPE.agent_wallet, user_address="U1")

    [found] = await store.active(where, 5)

    assert found.summary == plain.summary


# --- settings -------------------------------------------------------------------------------


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_the_settings_give_the_current_and_previous_keys() -> None:
    key_a, key_b = os.urandom(32), os.urandom(32)
    settings = Settings(
        archive_encryption_key=b64(key_b), archive_previous_encryption_keys=f"{b64(key_a)},"
    )

    keys = archive_keys(settings)

    assert keys is not None
    assert keys.current == key_b
    assert keys.ids == (key_id(key_b), key_id(key_a))
    assert archive_keys(Settings()) is None
    assert archive_keys(Settings(archive_encryption_key=" ")) is None  # blank: unset


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"archive_encryption_key": "not-base64!"}, "ENCRYPTION_KEY must be base64 of 32 bytes"),
        ({"archive_encryption_key": b64(b"short")}, "ENCRYPTION_KEY must be base64 of 32 bytes"),
        (
            {
                "archive_encryption_key": b64(b"k" * 32),
                "archive_previous_encryption_keys": f"{b64(b'p' * 32)},{b64(b'x' * 31)}",
            },
            "PREVIOUS_ENCRYPTION_KEYS: key 2 must be base64",
        ),
        (
            {"archive_previous_encryption_keys": b64(b"p" * 32)},
            "PREVIOUS_ENCRYPTION_KEYS needs MNEMOSTREAM_ARCHIVE_ENCRYPTION_KEY",
        ),
    ],
)
def test_a_key_that_cannot_work_stops_the_settings_without_showing_it(
    values: dict[str, str], message: str
) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        Settings(**values)
    for value in values.values():
        assert value.split(",")[-1] not in str(caught.value)
