"""embeddings group: batches of `EmbeddingRequested` → vectors (the stored one of a text
already seen, else the model's, in one batched call) → the pending memory rows, transcripts
and working buffers get them → one `MemoryChanged` per thread.

Storing a turn never waits for the model: the transcripts group writes the text at once
(found by BM25 and recency) and asks this group for the vector. The group scales by processes
up to the partitions of `memory.embeddings.v1` (`kafka.partitions`)."""

from __future__ import annotations

import logging

from faststream.kafka import KafkaRouter

from engine.records import TurnVector, TurnVectorFill
from engine.scoping import scope_fields
from schemas import topics
from schemas.events import EmbeddingRequested
from services.runtime import Runtime
from services.stream.consumers import Changes, GroupRouter
from services.stream.metrics import Metrics

log = logging.getLogger(__name__)

GROUP = "embeddings"
LAYERS = ["vectors", "scene", "working"]


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    async def fill(events: list[EmbeddingRequested]) -> None:
        model = rt.embedder.model
        mine = [e for e in events if e.model == model]
        if len(mine) < len(events):
            log.warning(
                "skipped %d requests for another embedding model than %s",
                len(events) - len(mine),
                model,
            )
        texts = list(dict.fromkeys(t.text for e in mine for t in e.targets))
        if not texts:
            return
        vectors = dict(zip(texts, await rt.embedder.embed(texts, "document"), strict=True))
        rows = {t.vector_id: vectors[t.text] for e in mine for t in e.targets}
        transcripts: list[TurnVectorFill] = []
        working: list[TurnVectorFill] = []
        changes = Changes()
        for event in mine:
            fields = scope_fields(event.scope, event.thread_id)
            for t in event.targets:
                if t.turn_id is None:
                    continue
                vector = TurnVector(t.turn_id, vectors[t.text], model)
                if t.session_id is not None:
                    transcripts.append(TurnVectorFill(t.session_id, fields, vector))
                if t.working_session_id is not None:
                    working.append(TurnVectorFill(t.working_session_id, fields, vector))
            changes.add(
                event, event.scope.model_copy(update={"thread_id": event.thread_id}), LAYERS
            )
        await rt.memory.fill_embeddings(model, rows)
        if transcripts:
            await rt.transcripts.add_turn_vectors(transcripts)
        if working:
            await rt.stores.working.add_turn_vectors(working)
        await group.changes.announce_all(changes)

    group.on_events(
        topics.EMBEDDINGS,
        EmbeddingRequested,
        fill,
        name="on_embedding_requested",
        batch=rt.settings.embedding.stage_batch,
    )
    return group.router
