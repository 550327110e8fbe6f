"""embeddings group: batches of `EmbeddingRequested` → vectors (the stored one of a text
already seen, else the model's, in batched calls) → the pending memory rows get them, one
write per row → one `MemoryChanged` per thread. A turn's vector lives on its turn row only:
the thread layers read it from there (`VectorIndex.vectors`), where the transcript and
working buffer each took a copy before (two more writes a turn, issue 29).

Storing a turn never waits for the model: the transcripts group writes the text at once
(found by BM25 and recency) and asks this group for the vector. The group scales by processes
up to the partitions of `memory.embeddings.v1` (`kafka.partitions`). A batch is embedded in
chunks, and each chunk's writes run while the model works on the next one, so the model —
the stage's only real limit — is never idle waiting for the database.

A batch is bounded by texts as well as requests (`embedding.stage_max_texts`) and by time
(`kafka.batch_budget_ms`): it is worked in slices sized by the model's measured speed, and
what does not fit is handed back to the next poll (`services.stream.batches`), so a slow model
never keeps the group from polling within `kafka.max_poll_interval_ms`. A request's texts
embedded before a lost batch are in the vector store, so its redo runs no model for them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from faststream.kafka import KafkaRouter

from engine.ingest.turns import embed_units
from engine.ports import Vector
from schemas import topics
from schemas.events import EmbeddingRequested, VectorTarget
from services.runtime import Runtime
from services.stream.consumers import Changes, GroupRouter
from services.stream.metrics import Metrics

log = logging.getLogger(__name__)

GROUP = "embeddings"
LAYERS = ["vectors", "scene", "working"]
CHUNK = 256
"""Targets embedded per model call; the previous chunk's writes overlap the next call."""

Target = tuple[EmbeddingRequested, VectorTarget]


def router(rt: Runtime, metrics: Metrics | None) -> KafkaRouter:
    group = GroupRouter(GROUP, rt, metrics)

    async def write(
        chunk: Sequence[Target],
        vectors: Mapping[str, Vector],
        units: Mapping[str, Vector],
        model: str,
    ) -> None:
        rows = {t.vector_id: vectors[t.text] for _, t in chunk}
        # a turn's row also holds what each of its messages says (`MemoryRow.units`)
        turn_units = {t.vector_id: units[t.text] for _, t in chunk if t.turn_id is not None}
        await rt.memory.fill_embeddings(model, rows, turn_units)

    async def fill(events: list[EmbeddingRequested]) -> None:
        model = rt.embedder.model
        mine = [e for e in events if e.model == model]
        if len(mine) < len(events):
            log.warning(
                "skipped %d requests for another embedding model than %s",
                len(events) - len(mine),
                model,
            )
        targets: list[Target] = [(e, t) for e in mine for t in e.targets]
        previous: asyncio.Task[None] | None = None
        try:
            for start in range(0, len(targets), CHUNK):
                chunk = targets[start : start + CHUNK]
                texts = list(dict.fromkeys(t.text for _, t in chunk))
                # the texts and their messages in one call, as an inline ingest does (a
                # replay), so both store the same vectors
                turns = {t.text for _, t in chunk if t.turn_id is not None}
                found, units = await embed_units(rt.embedder, texts, turns)
                vectors = dict(zip(texts, found, strict=True))
                by_text = dict(zip(texts, units, strict=True))
                previous = asyncio.create_task(
                    after(previous, write(chunk, vectors, by_text, model))
                )
            if previous is not None:
                await previous
        finally:
            if previous is not None and not previous.done():
                previous.cancel()
        changes = Changes()
        for event in mine:
            changes.add(
                event, event.scope.model_copy(update={"thread_id": event.thread_id}), LAYERS
            )
        await group.changes.announce_all(changes)

    group.on_events(
        topics.EMBEDDINGS,
        EmbeddingRequested,
        fill,
        name="on_embedding_requested",
        batch=rt.settings.embedding.stage_batch,
        weigh=texts,
        max_units=rt.settings.embedding.stage_max_texts,
    )
    return group.router


def texts(event: EmbeddingRequested) -> int:
    """A request's units of work, by which a batch is bounded and sliced: its texts."""
    return len(event.targets)


async def after(previous: asyncio.Task[None] | None, work: Coroutine[Any, Any, None]) -> None:
    """Run `work` once `previous` is done: a chunk's writes follow the last chunk's."""
    try:
        if previous is not None:
            await previous
    except BaseException:
        work.close()  # never started: do not leave it un-awaited
        raise
    await work
