"""Kafka subscribers with the options every group shares (DESIGN.md §4 quirks)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from faststream.kafka import KafkaBroker
from faststream.middlewares import AckPolicy

from services.runtime import Runtime

if TYPE_CHECKING:
    from faststream.kafka.subscriber.usecase import DefaultSubscriber


def subscriber(
    broker: KafkaBroker, rt: Runtime, topic: str, group: str, *, interactive: bool = False
) -> DefaultSubscriber:
    """A durable group reading from `earliest` (the local broker's "latest" is wrong) that
    commits after the handler returns (at-least-once). Interactive (request/reply and cache
    invalidation) groups fetch with a short wait: a waiting fetch wakes after about half of
    `fetch_max_wait_ms`."""
    return broker.subscriber(
        topic,
        group_id=rt.group_id(group),
        auto_offset_reset="earliest",
        session_timeout_ms=rt.settings.session_timeout_ms,
        heartbeat_interval_ms=rt.settings.heartbeat_interval_ms,
        fetch_max_wait_ms=(
            rt.settings.reply_fetch_wait_ms if interactive else rt.settings.fetch_wait_ms
        ),
        ack_policy=AckPolicy.ACK,
    )
