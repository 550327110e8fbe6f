"""The FastStream app factory: one broker, the chosen consumer groups, clean start/stop.

Start-up order (DESIGN.md §4): topics are created with their partition counts, the database
schema is ensured (collections and indexes, sequentially), and only then do the subscribers
join their groups.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from faststream.kafka import KafkaBroker

from engine.errors import MemoryError_
from engine.ports import Embedder
from schemas import topics
from services import (
    extraction,
    facts,
    invalidation,
    items,
    jobs,
    patterns,
    search,
    transcripts,
)
from services.infra import create_topics
from services.runtime import Runtime, open_runtime
from services.settings import Settings

log = logging.getLogger(__name__)


def _warnings_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING


GROUPS: dict[str, Callable[[KafkaBroker, Runtime], None]] = {
    transcripts.GROUP: transcripts.register,
    extraction.GROUP: extraction.register,
    facts.GROUP: facts.register,
    patterns.GROUP: patterns.register,
    invalidation.GROUP: invalidation.register,
    search.GROUP: search.register,
    jobs.GROUP: jobs.register,
    items.GROUP: items.register,
}
"""Every consumer group, by name (`mnemostream run <name>`)."""


def resolve_groups(names: Sequence[str]) -> list[str]:
    """`all` expands to every group; unknown names raise ValueError."""
    chosen: list[str] = []
    for name in names:
        expanded = list(GROUPS) if name == "all" else [name]
        for group in expanded:
            if group not in GROUPS:
                raise ValueError(f"unknown group {group!r}; choose from {', '.join(GROUPS)}, all")
            if group not in chosen:
                chosen.append(group)
    return chosen


@asynccontextmanager
async def running_groups(
    settings: Settings,
    names: Sequence[str],
    *,
    embedder: Embedder | None = None,
    broker_logs: bool = True,
) -> AsyncIterator[Runtime]:
    """Run the named groups until the context exits. `broker_logs=False` silences
    FastStream's own lifecycle and per-message logs (our handlers still log failures)."""
    groups = resolve_groups(names)
    async with open_runtime(settings, embedder) as rt:
        await create_topics(rt.endpoints.kafka_bootstrap, dict(topics.PARTITIONS))
        broker = KafkaBroker(
            rt.endpoints.kafka_bootstrap, client_id=f"mnemostream-{'-'.join(groups)}"
        )
        for group in groups:
            GROUPS[group](broker, rt)
        if not broker_logs:
            # FastStream keeps one shared access logger per broker kind and resets its level
            # when it builds it, so a filter (which it keeps) does the silencing
            logging.getLogger("faststream.access.kafka").addFilter(_warnings_only)
        await broker.start()
        background = (
            [asyncio.create_task(search.flush_access_counts(rt), name="access-flush")]
            if search.GROUP in groups
            else []
        )
        log.info("running groups %s", ", ".join(groups))
        try:
            yield rt
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await broker.stop()
            with contextlib.suppress(MemoryError_):
                await rt.access.flush(int(time.time() * 1000))
