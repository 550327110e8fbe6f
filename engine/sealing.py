"""Sealed events (crypto-shredding, issue 31): the user content of an event is sealed under a
data key of its tenant (agent and user), and erasing the user deletes that key, so every copy
of their events — the log, dead letters, backups of either — can no longer be read.

* **Data keys.** Each tenant (`Tenant`: agent wallet, user address or None) has one random
  32-byte data key with a random id (`key_id`), created when its first event is sealed. It is
  stored wrapped (AES-256-GCM under the master key of `master_id`, the associated data
  naming the tenant and the key id) in a `TenantKeyStore`; the master keys are the archive
  keys' kind (`engine.upkeep.archive_seal.ArchiveKeys`: the current one wraps, previous ones
  unwrap, each known by its key id). A tenant whose key was deleted gets a new key (a new
  id) with its next event; what the old one sealed stays unreadable.
* **The envelope** (`seal`): `MAGIC`, a one-line JSON head `[agent, user, keyId]`, a
  newline, then the bytes nonce ‖ ciphertext ‖ tag, with the event's whole JSON as the
  plaintext and `mnemostream/event/v1` + the tenant + the key id as associated data, so an
  envelope moved to another tenant does not open. Only the tenant ids stay in clear (they
  are on every stored row too). Binary, not base64 in JSON (stop 43): a sealed turn is 11 %
  longer than in clear instead of 46 %, and the broker and every reader carry that on every
  record. Envelopes of the first format (one JSON object, `{"sealed": 1, "agent", "user",
  "keyId", "data": base64(…)}`, `PREFIX`) still open, so a log sealed before reads as it
  is. `is_sealed` tells an envelope from an event in clear by its first bytes (an event in
  clear is a JSON object), so a log holding both reads each as it is.
* **Opening** (`EventSealer.open_many`) answers, for each record: its plaintext, or `gone`
  (the tenant's key was erased: the record is skipped, counted and logged once per tenant,
  never dead-lettered), or a `problem` (a tampered envelope, a master key id not configured:
  retrying cannot help, the record is dead-lettered).
* **Caches.** Unwrapped keys are kept `cache_seconds` in the process, so a batch costs no
  lookup; `delete` drops the tenant's entries here, and another process holding them stops
  using them within `cache_seconds`.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engine.errors import InputRejected
from engine.upkeep.archive_seal import (
    KEY_BYTES,
    NONCE_BYTES,
    TAG_BYTES,
    ArchiveKeys,
    aes_open,
    aes_seal,
)

log = logging.getLogger(__name__)

Tenant = tuple[str, str | None]
"""(agent wallet, user address or None): whose data key seals an event."""

MAGIC = b"\x00mnse2\x00"
"""The first bytes of an envelope (no event in clear, a JSON object, starts with a NUL)."""
PREFIX = b'{"sealed":'
"""The first bytes of an envelope of the first format (JSON; an event in clear starts
with another field): still opened, never written."""
KEY_ID_HEX = 16
SEEN_TENANTS_MAX = 10_000
"""Tenants whose skipped events were logged (once each), before the memory is cleared."""
_KEY_AD = b"mnemostream/event-key/v1\x00"
_EVENT_AD = b"mnemostream/event/v1\x00"


@dataclass(frozen=True, slots=True)
class WrappedKey:
    """One tenant's data key as stored: wrapped under the master key `master_id`."""

    tenant: Tenant
    key_id: str
    wrapped: bytes
    master_id: str
    created_at: datetime


class TenantKeyStore(Protocol):
    """The tenants' wrapped data keys (one per tenant)."""

    async def find(self, tenants: Sequence[Tenant]) -> dict[Tenant, WrappedKey]:
        """The stored keys of `tenants` (absent: none stored)."""
        ...

    async def add(self, key: WrappedKey) -> WrappedKey:
        """Store `key` unless its tenant has one; the tenant's stored key (the first
        writer's when two race)."""
        ...

    async def delete(self, agent_wallet: str, user_address: str) -> int:
        """Delete the tenant's key; how many were deleted (0 or 1)."""
        ...


@dataclass(frozen=True, slots=True)
class Opened:
    """One record after opening: `plain` (the event's JSON: the record itself when it was in
    clear), or `gone` (sealed under an erased key), or `problem` (cannot be opened).
    `tenant`: the tenant it was sealed for (None: it came in clear)."""

    plain: bytes | None
    tenant: Tenant | None = None
    gone: bool = False
    problem: str | None = None


def is_sealed(body: bytes) -> bool:
    """Whether `body` is an envelope (`seal`, or the first format)."""
    return body[: len(MAGIC)] == MAGIC or body[: len(PREFIX)] == PREFIX


def _tenant_text(tenant: Tenant) -> bytes:
    return json.dumps(list(tenant), ensure_ascii=False, separators=(",", ":")).encode()


def seal(tenant: Tenant, key_id: str, key: AESGCM, plain: bytes) -> bytes:
    """The envelope of `plain` (an event's JSON) under the tenant's data key (AES-256-GCM,
    a fresh 12-byte nonce, as `engine.upkeep.archive_seal.aes_seal`; the cipher object is
    the cached key's, not built again for each event)."""
    named = _tenant_text(tenant)
    associated = _EVENT_AD + named + b"\x00" + key_id.encode()
    nonce = os.urandom(NONCE_BYTES)
    # the head is compact JSON: a newline in an id is escaped, so the first one ends it
    head = named[:-1] + b"," + json.dumps(key_id).encode() + b"]\n"
    return MAGIC + head + nonce + key.encrypt(nonce, plain, associated)


@dataclass(frozen=True, slots=True)
class Envelope:
    tenant: Tenant
    key_id: str
    blob: bytes


def envelope(body: bytes) -> Envelope:
    """The parts of an envelope (either format); `InputRejected` when it is not one."""
    try:
        if body[: len(MAGIC)] == MAGIC:
            head, ended, blob = body[len(MAGIC) :].partition(b"\n")
            if not ended:
                raise ValueError("no head")
            parts = json.loads(head)
            if not isinstance(parts, list):
                raise ValueError("the head is not a list")
            agent, user, kid = parts
        else:
            data: Any = json.loads(body)
            agent, user, kid = data["agent"], data["user"], data["keyId"]
            blob = base64.b64decode(data["data"], validate=True)
    except (ValueError, TypeError, KeyError, binascii.Error) as exc:
        raise InputRejected("a sealed event's envelope is not readable") from exc
    if not (isinstance(agent, str) and (user is None or isinstance(user, str))):
        raise InputRejected("a sealed event's envelope names no tenant")
    if not isinstance(kid, str):
        raise InputRejected("a sealed event's envelope names no key")
    return Envelope((agent, user), kid, blob)


class EventSealer:
    """Seals and opens events under their tenants' data keys (`keys`: the master keys,
    `store`: the wrapped data keys). Safe for concurrent use in one event loop."""

    def __init__(
        self,
        keys: ArchiveKeys,
        store: TenantKeyStore,
        *,
        cache_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._keys = keys
        self._store = store
        self._cache_seconds = cache_seconds
        self._clock = clock
        self._by_tenant: dict[Tenant, tuple[str, AESGCM, float]] = {}
        self._seen_gone: set[Tenant] = set()
        self._unusable: dict[Tenant, str] = {}
        self.skipped = 0
        """Records skipped because their tenant's key was erased (since start)."""

    async def seal_many(self, items: Sequence[tuple[Tenant, bytes]]) -> list[bytes]:
        """The envelopes of `items` ((tenant, event JSON)), in order; a tenant without a key
        gets one."""
        keys = await self._current({tenant for tenant, _ in items})
        return [seal(tenant, *keys[tenant], plain) for tenant, plain in items]

    async def open_many(self, bodies: Sequence[bytes]) -> list[Opened]:
        """Each body opened (see `Opened`), in order; bodies in clear are returned as they
        are."""
        found: dict[int, Envelope] = {}
        results: list[Opened | None] = []
        for n, body in enumerate(bodies):
            if not is_sealed(body):
                results.append(Opened(body))
                continue
            try:
                found[n] = envelope(body)
            except InputRejected as exc:
                results.append(Opened(None, problem=str(exc)))
                continue
            results.append(None)
        if found:
            keys = await self._known({e.tenant for e in found.values()})
            for n, sealed in found.items():
                results[n] = self._open(sealed, keys.get(sealed.tenant))
            self._unusable.clear()
        return [r for r in results if r is not None]

    async def delete(self, agent_wallet: str, user_address: str) -> int:
        """Delete the tenant's data key (here and in the store): everything sealed under it
        is unreadable from now on; how many keys were deleted."""
        self._by_tenant.pop((agent_wallet, user_address), None)
        return await self._store.delete(agent_wallet, user_address)

    def _open(self, sealed: Envelope, key: tuple[str, AESGCM] | None) -> Opened:
        problem = self._unusable.pop(sealed.tenant, None) if key is None else None
        if problem is not None:
            self._unusable[sealed.tenant] = problem  # for the batch's other records
            return Opened(None, sealed.tenant, problem=problem)
        if key is None or key[0] != sealed.key_id:
            self.skipped += 1
            if sealed.tenant not in self._seen_gone:
                if len(self._seen_gone) >= SEEN_TENANTS_MAX:
                    self._seen_gone.clear()
                self._seen_gone.add(sealed.tenant)
                log.warning(
                    "skipping sealed events of an erased tenant (their key %s is gone)",
                    sealed.key_id,
                    extra={"agent": sealed.tenant[0], "user": sealed.tenant[1]},
                )
            return Opened(None, sealed.tenant, gone=True)
        associated = _EVENT_AD + _tenant_text(sealed.tenant) + b"\x00" + sealed.key_id.encode()
        blob = sealed.blob
        if len(blob) < NONCE_BYTES + TAG_BYTES:
            return Opened(None, sealed.tenant, problem="a sealed event is truncated")
        try:
            plain = key[1].decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], associated)
        except InvalidTag:
            problem = "a sealed event does not open with its tenant's key"
            return Opened(None, sealed.tenant, problem=problem)
        return Opened(plain, sealed.tenant)

    async def _known(self, tenants: set[Tenant]) -> dict[Tenant, tuple[str, AESGCM]]:
        """The tenants' current (key id, data key) that exist (none is created)."""
        now = self._clock()
        known: dict[Tenant, tuple[str, AESGCM]] = {}
        missing: list[Tenant] = []
        for tenant in tenants:
            cached = self._by_tenant.get(tenant)
            if cached is not None and cached[2] > now:
                known[tenant] = (cached[0], cached[1])
            else:
                missing.append(tenant)
        if missing:
            stored = await self._store.find(missing)
            for tenant, wrapped in stored.items():
                try:
                    known[tenant] = self._remember(wrapped, now)
                except InputRejected as exc:  # its master key is not configured
                    self._unusable[tenant] = str(exc)
        return known

    async def _current(self, tenants: set[Tenant]) -> dict[Tenant, tuple[str, AESGCM]]:
        known = await self._known(tenants)
        for tenant in tenants - set(known):
            key = os.urandom(KEY_BYTES)
            kid = os.urandom(KEY_ID_HEX // 2).hex()
            mid = self._keys.current_id
            wrapped = aes_seal(self._keys.current, key, _key_associated(tenant, kid))
            stored = await self._store.add(WrappedKey(tenant, kid, wrapped, mid, datetime.now(UTC)))
            known[tenant] = self._remember(stored, self._clock())
        return known

    def _remember(self, wrapped: WrappedKey, now: float) -> tuple[str, AESGCM]:
        master = self._keys.master(wrapped.master_id, "event")
        key = aes_open(
            master,
            wrapped.wrapped,
            _key_associated(wrapped.tenant, wrapped.key_id),
            f"the data key {wrapped.key_id}",
        )
        aead = AESGCM(key)
        self._by_tenant[wrapped.tenant] = (wrapped.key_id, aead, now + self._cache_seconds)
        return wrapped.key_id, aead

    def __repr__(self) -> str:
        return f"EventSealer(masters={list(self._keys.ids)!r})"


def _key_associated(tenant: Tenant, kid: str) -> bytes:
    return _KEY_AD + _tenant_text(tenant) + b"\x00" + kid.encode()
