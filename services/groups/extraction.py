"""extraction group: `TurnRecorded` → the extractor → `FactsExtracted` (keyed by agent|user).

The untyped links around the extractor's relations are typed where the words joining their
ends say how (`engine.ingest.extraction.relation_typer`, with the deployment's embedder:
active for the local MiniLM model only), whichever extractor runs.

It never blocks post_turn: the transcripts group stores the turn independently. A failing
remote extractor is retried with backoff, then the turn is dead-lettered (nothing is lost
silently); the stored result is the published event, so replays do not re-run the model.
"""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from engine.ingest.extraction.relation_typer import RelationTyper
from engine.ingest.extraction.turns import extract_turn
from schemas import topics
from schemas.events import TurnRecorded
from services.runtime import Runtime
from services.stream.batches import one_by_one
from services.stream.consumers import GroupRouter
from services.stream.metrics import Metrics, extraction_timer
from services.stream.sealing import SealedPublisher

GROUP = "extraction"


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)
    facts = SealedPublisher(group.router.publisher(topics.FACTS), rt.sealer)
    extractor = rt.extractor
    if extractor is None:
        return group.router
    typer = RelationTyper(rt.embedder)

    async def extract(event: TurnRecorded) -> None:
        with extraction_timer(metrics, rt.settings.extraction.extractor):
            found = await extract_turn(event, extractor, rt.extraction_policy, typer)
        if found is not None:
            key = topics.tenant_key(event.scope.agent_wallet, event.scope.user_address)
            await facts.publish(found, key=key.encode())

    group.on_events(topics.TURNS, TurnRecorded, one_by_one(extract), name="on_turn_extract")
    return group.router
