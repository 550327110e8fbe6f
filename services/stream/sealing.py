"""Where the stream seals and opens events (issue 31, `engine.sealing`).

* `open_records`: a batch's values opened before they are decoded (one key lookup for the
  batch's tenants, none while the keys are cached). A store outage during the lookup is
  waited out like a write's (`services.stream.guard.Outage`), then raised.
* `SealedPublisher`: a group's publisher to a sealed topic (`topics.SEALED`) that seals what
  it publishes when the deployment has an event key, and publishes it as it is otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from aiokafka import ConsumerRecord
from pydantic import BaseModel

from engine.sealing import EventSealer, Opened, Tenant, is_sealed
from services.stream.guard import Outage, is_outage
from services.stream.handback import Rewinder

if TYPE_CHECKING:
    from faststream.kafka.publisher.usecase import DefaultPublisher

NO_KEY = (
    "SealedEventNoKey",
    "the event is sealed and no event key (MNEMOSTREAM_EVENT_ENCRYPTION_KEY) is configured "
    "here; configure it and redrive",
)


def tenant_of(event: BaseModel) -> Tenant | None:
    """The tenant whose key seals `event` (None: the event has no scope)."""
    scope: Any = getattr(event, "scope", None)
    if scope is None:
        return None
    return (scope.agent_wallet, scope.user_address)


async def open_records(
    sealer: EventSealer,
    bodies: Sequence[bytes],
    *,
    backoff_ms: int,
    outage_seconds: float,
    group: str,
) -> list[Opened]:
    """`sealer.open_many(bodies)`, waiting out a store outage (then `StoreUnavailable`)."""
    if not any(is_sealed(body) for body in bodies):
        return [Opened(body) for body in bodies]
    outage = Outage(backoff_ms / 1000, outage_seconds)
    while True:
        try:
            return await sealer.open_many(bodies)
        except Exception as exc:
            if not is_outage(exc):
                raise
            await outage.wait(exc, group)


class Batch(Protocol):
    """What `open_batch` needs of a batch consumer (`services.stream.batches`)."""

    sealer: EventSealer | None
    group: str
    backoff_ms: int
    outage_seconds: float


async def open_batch(
    consumer: Batch,
    records: Sequence[ConsumerRecord[Any, Any]],
    bodies: Sequence[bytes],
    rewind: Rewinder | None,
) -> list[Opened | None]:
    """Each body opened (None for all without a sealer); when a lasting outage raises, the
    whole batch is handed back first, so it is read again."""
    if consumer.sealer is None:
        return [None] * len(bodies)
    try:
        opened = await open_records(
            consumer.sealer,
            bodies,
            backoff_ms=consumer.backoff_ms,
            outage_seconds=consumer.outage_seconds,
            group=consumer.group,
        )
    except Exception:
        if rewind is not None:
            rewind(list(records))
        raise
    return list(opened)


def unsealed(body: bytes, seen: Opened | None) -> bytes | tuple[str, str] | None:
    """What to decode of a record: its plaintext; None to skip it (sealed under an erased
    key: counted and logged by the sealer, never dead-lettered); or (error type, reason) to
    dead-letter it (sealed with no key configured here, or not openable)."""
    if seen is None:
        return NO_KEY if is_sealed(body) else body
    if seen.plain is not None:
        return seen.plain
    return None if seen.gone else ("SealedEventUnreadable", seen.problem or "not openable")


def mismatch(opened: Opened, event: BaseModel) -> tuple[str, str] | None:
    """(error type, reason) when a sealed event's scope names another tenant than the key
    that sealed it (a runtime sealing into another tenant's key); None otherwise."""
    if opened.tenant is None or tenant_of(event) == opened.tenant:
        return None
    return "SealedEventMismatch", "the event's scope is not the tenant whose key sealed it"


class SealedPublisher:
    """Publishes a group's events to a sealed topic: sealed under the event's tenant key when
    `sealer` is set, as they are otherwise."""

    def __init__(self, publisher: DefaultPublisher, sealer: EventSealer | None) -> None:
        self._publisher = publisher
        self._sealer = sealer

    async def publish(self, event: BaseModel, *, key: bytes) -> None:
        tenant = tenant_of(event)
        if self._sealer is None or tenant is None:
            await self._publisher.publish(event, key=key)
            return
        [body] = await self._sealer.seal_many([(tenant, event.model_dump_json().encode())])
        await self._publisher.publish(body, key=key)
