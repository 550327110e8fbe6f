"""sealing group (issue 31): batches of `IngressEvent` from `memory.ingress.v1` → each event
sealed under its tenant's data key (`engine.sealing`) → published to its source topic with the
runtime's key, before the batch is committed (so a wait that follows the source topic's
groups finds it there). Agent runtimes thus never hold a key: only this group (and the
groups that read the source topics) have the master key. Without an event key it forwards
the events unsealed (runtimes then normally publish to the source topics themselves)."""

from __future__ import annotations

import asyncio

from faststream.kafka import KafkaRouter

from schemas import topics
from schemas.sealing import IngressEvent
from services.runtime import Runtime
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics
from services.stream.telemetry import within

GROUP = "sealing"


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)
    sealer = rt.sealer
    out = {topic: group.router.publisher(topic) for topic in topics.INGRESS_TARGETS}

    async def seal(events: list[IngressEvent]) -> None:
        plain = [((e.agent, e.user), e.event.encode()) for e in events]
        # without a key the events are forwarded as they are: a runtime sending through the
        # ingress of a deployment without one loses nothing
        sealed = [p for _, p in plain] if sealer is None else await sealer.seal_many(plain)
        await asyncio.gather(
            *(
                within(e, out[e.topic].publish(body, key=e.key.encode()))  # its trace goes on
                for e, body in zip(events, sealed, strict=True)
            )
        )

    group.on_events(topics.INGRESS, IngressEvent, seal, name="on_ingress_event")
    return group.router
