"""Archives sealed at rest: with an archive key configured, no archive is stored readable.

`SealedArchiveStore` wraps an archive store (MongoDB or in memory): it seals every archive on
the way in and opens it on the way out, so the stores and their documents only ever hold the
sealed form, and the search and the pinning paths see plain records.

* **One key per tenant.** The key that seals an archive is HKDF-SHA256 (32 bytes, no salt) of
  the configured key, with info `mnemostream/archive-key/v1` + NUL + JSON
  `[agentWallet, userAddress]`: each user of each agent has their own key, none of which
  reveals the configured key or another's.
* **Two AES-256-GCM blobs** (`ArchiveSeal`): `index` — JSON of the summary, the topics and
  the embedding, what search opens — and `content`, the stored payload (the archived rows:
  raw memories, facts, their metadata). Each has a fresh 12-byte nonce; the associated data
  `mnemostream/archive/<archiveId>/<field>` makes a blob open only as that field of that
  archive.
* **A key id** (`key_id`): 12 hex digits of HMAC-SHA256(key, "mnemostream archive key id"),
  stored on the record, names the configured key that sealed it without revealing it.

Left in clear, because the store filters and orders on them or they are counts: the archive
id (a hash, `engine.upkeep.archives.archive_id_for`), the tenant fields (agent, user, mode,
hai id), status, `createdAt`, `dateRange`, `entryCount`, the sizes, the embedding model's
name, the IPFS CID and the key id. Search needs nothing else from the store: it reads the
tenant's newest active archives by those fields and ranks them here, after opening them
(`engine.retrieval.layers.procedural.search_archives`), so summaries, topics and embeddings
stay sealed too.

**Rotation.** `ArchiveKeys(current, previous)`: the current key seals; every key opens the
archives sealed under its id. An archive whose key id no configured key has, or a sealed
archive read with no key configured, is `InputRejected` naming the key id; an archive stored
before a key was configured is read as it is (and stays in clear until it is stored again).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from engine.errors import InputRejected
from engine.ports import ArchiveCids, ArchiveStore
from engine.records import ArchiveRecord, ArchiveSeal, ScopeFields, Vector
from engine.scoping import TenantFilter

ENCRYPTION = "AES-256-GCM"
KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
KEY_ID_HEX = 12
_KEY_ID_LABEL = b"mnemostream archive key id"
_TENANT_INFO = b"mnemostream/archive-key/v1\x00"


def check_key(key: bytes) -> bytes:
    """`key` if it is an AES-256 key (32 bytes), else `InputRejected`."""
    if len(key) != KEY_BYTES:
        raise InputRejected(f"an {ENCRYPTION} key is {KEY_BYTES} bytes, not {len(key)}")
    return key


def aes_seal(key: bytes, plain: bytes, associated: bytes) -> bytes:
    """AES-256-GCM: a fresh random 12-byte nonce, then ciphertext and 16-byte tag."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(check_key(key)).encrypt(nonce, plain, associated)


def aes_open(key: bytes, blob: bytes, associated: bytes, what: str) -> bytes:
    """The plaintext `aes_seal` sealed. A wrong key, wrong associated data or a tampered or
    truncated blob raises `InputRejected` naming `what` (retrying cannot help)."""
    aead = AESGCM(check_key(key))
    if len(blob) < NONCE_BYTES + TAG_BYTES:
        raise InputRejected(f"{what} is truncated")
    try:
        return aead.decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], associated)
    except InvalidTag as exc:
        raise InputRejected(f"{what} does not open with this key and id") from exc


def key_id(key: bytes) -> str:
    """The id recorded on what `key` sealed: 12 hex digits of an HMAC of a fixed label."""
    mac = hmac.new(check_key(key), _KEY_ID_LABEL, hashlib.sha256)
    return mac.hexdigest()[:KEY_ID_HEX]


class ArchiveKeys:
    """The configured archive keys: `current` seals; it and every `previous` key open.

    Keys are 32 bytes (`InputRejected` otherwise); a previous key equal to the current one
    is the same key."""

    __slots__ = ("_by_id", "current", "current_id")

    def __init__(self, current: bytes, previous: Sequence[bytes] = ()) -> None:
        self.current = check_key(current)
        self.current_id = key_id(current)
        self._by_id = {self.current_id: current}
        for key in previous:
            self._by_id.setdefault(key_id(key), key)

    @property
    def ids(self) -> tuple[str, ...]:
        """The ids of every key that opens (the current one first)."""
        return tuple(self._by_id)

    def master(self, kid: str, what: str = "archive") -> bytes:
        """The configured key of id `kid`; `InputRejected` naming the id when none is."""
        master = self._by_id.get(kid)
        if master is None:
            raise InputRejected(
                f"{what} key id {kid} is not configured (neither the current key nor a "
                f"previous one): configure that key as a previous {what} key"
            )
        return master

    def tenant_key(self, kid: str, scope: ScopeFields) -> bytes:
        """The key of `scope`'s agent and user under the configured key of id `kid`."""
        master = self.master(kid)
        info = json.dumps([scope.agent_wallet, scope.user_address]).encode()
        hkdf = HKDF(
            algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=_TENANT_INFO + info
        )
        return hkdf.derive(master)

    def __repr__(self) -> str:
        return f"ArchiveKeys(ids={list(self.ids)!r})"


def seal_archive(record: ArchiveRecord, keys: ArchiveKeys) -> ArchiveRecord:
    """`record` with its summary, topics, embedding and content sealed under the current
    key (see the module docstring); a sealed record is returned as it is."""
    if record.seal is not None:
        return record
    key = keys.tenant_key(keys.current_id, record.scope)
    index = {
        "summary": record.summary,
        "topics": record.topics,
        "embedding": _vector_text(record.embedding),
    }
    plain = json.dumps(index, ensure_ascii=False, separators=(",", ":")).encode()
    content = record.content
    seal = ArchiveSeal(
        key_id=keys.current_id,
        index=aes_seal(key, plain, _associated(record.archive_id, "index")),
        content=None
        if content is None
        else aes_seal(key, content.encode(), _associated(record.archive_id, "content")),
    )
    return replace(record, summary="", topics=[], embedding=None, content=None, seal=seal)


def open_archive(record: ArchiveRecord, keys: ArchiveKeys | None) -> ArchiveRecord:
    """The plain record of a sealed one (a record in clear is returned as it is).
    `InputRejected` when it is sealed and no configured key has its key id, or it does not
    open (tampered, or moved to another archive or tenant)."""
    seal = record.seal
    if seal is None:
        return record
    if keys is None:
        raise InputRejected(
            f"archive {record.archive_id} is sealed (key id {seal.key_id}) and no archive key "
            "is configured"
        )
    key = keys.tenant_key(seal.key_id, record.scope)
    what = f"sealed archive {record.archive_id}"
    plain = aes_open(key, seal.index, _associated(record.archive_id, "index"), what)
    summary, topics, embedding = _index(plain, what)
    content = (
        None
        if seal.content is None
        else aes_open(key, seal.content, _associated(record.archive_id, "content"), what).decode()
    )
    return replace(
        record, summary=summary, topics=topics, embedding=embedding, content=content, seal=None
    )


class StoredArchives(ArchiveStore, ArchiveCids, Protocol):
    """An archive store with its pin state (the MongoDB and in-memory adapters)."""


class SealedArchiveStore:
    """`inner` sealing what it stores under `keys` and opening what it reads. With `keys`
    None archives are stored as given, and a sealed one read raises `InputRejected`."""

    def __init__(self, inner: StoredArchives, keys: ArchiveKeys | None) -> None:
        self._inner = inner
        self._keys = keys

    async def insert_if_absent(self, archive: ArchiveRecord) -> bool:
        stored = archive if self._keys is None else seal_archive(archive, self._keys)
        return await self._inner.insert_if_absent(stored)

    async def active(self, where: TenantFilter, limit: int) -> list[ArchiveRecord]:
        return [open_archive(a, self._keys) for a in await self._inner.active(where, limit)]

    async def set_cid(self, archive_id: str, cid: str) -> None:
        await self._inner.set_cid(archive_id, cid)

    async def unpinned(self, archive_id: str) -> ArchiveRecord | None:
        found = await self._inner.unpinned(archive_id)
        return None if found is None else open_archive(found, self._keys)


def _associated(archive_id: str, field: str) -> bytes:
    return f"mnemostream/archive/{archive_id}/{field}".encode()


def _vector_text(vector: Vector | None) -> str | None:
    """Base64 of the little-endian float32 values (exact, and a third of JSON floats)."""
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _index(plain: bytes, what: str) -> tuple[str, list[str], Vector | None]:
    try:
        data: Any = json.loads(plain)
        summary, topics, vector = data["summary"], data["topics"], data["embedding"]
        embedding = (
            None
            if vector is None
            else np.frombuffer(base64.b64decode(vector, validate=True), dtype="<f4").astype(
                np.float32
            )
        )
    except (ValueError, TypeError, KeyError, binascii.Error) as exc:
        raise InputRejected(f"{what} holds no summary, topics and embedding") from exc
    if not isinstance(summary, str) or not (
        isinstance(topics, list) and all(isinstance(t, str) for t in topics)
    ):
        raise InputRejected(f"{what} holds no summary, topics and embedding")
    return summary, topics, embedding
