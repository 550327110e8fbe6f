"""patterns group: `TurnRecorded` → count the turn's tool sequence (success from each tool's
status) → `MemoryChanged` for the patterns layer. Incremental: no nightly scan is needed;
`patterns_extract` (a job) recounts from transcripts for repair."""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from engine.ingest.patterns import observe, steps_text
from schemas import topics
from schemas.events import TurnRecorded
from services.runtime import Runtime
from services.stream.batches import one_by_one
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics

GROUP = "patterns"


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    async def count(event: TurnRecorded) -> None:
        run = observe(event)
        if run is None:
            return
        counted = await rt.patterns.record_execution(
            run.seed, turn_id=run.turn_id, succeeded=run.succeeded, at=run.at
        )
        # the steps are embedded once (cached), so the layer finds a procedure by meaning
        [vector] = await rt.embedder.embed([steps_text(run.seed.steps)], "document")
        await rt.patterns.set_embedding(run.seed.pattern_id, vector, rt.embedder.model)
        if counted:
            await group.changes.announce(event, event.scope.tenant(), ["patterns"])

    group.on_events(topics.TURNS, TurnRecorded, one_by_one(count), name="on_turn_patterns")
    return group.router
