"""`mnemostream import tenant.jsonl`: load a tenant's export (`services.ops.export`) into this
deployment, through the log, idempotently (issue 31).

1. **The source events are published** to this deployment's topics: every transcript turn as
   its `TurnRecorded`, every remembered fact as its `MemoryRemembered`
   (`services.ops.import_events`), each with an event id derived from the exported row, in
   event-time order. The running groups store them as they store any turn or remember
   (transcripts, working buffers, turn rows and their vectors, extracted facts, entities
   and relations, remembered facts and their graph links), announce the change, and the
   caches follow; the log now holds the tenant, so a `replay` here rebuilds it.
2. **Waited for**: the import follows the groups' committed offsets past its events, as
   `record_turn(wait=True)` does (`transcripts`, `embeddings` when deferred, `extraction` →
   `facts`, `facts.remember`), so the next step lands after their writes.
3. **Then every exported row is restored as stored** (a replace by `_id`): what no event
   carries comes back as it was — item edits and deletes made by request, the validity a
   later fact gave an earlier one, maintenance jobs' work (consolidation, decay, archives
   sealed at rest, skills), pattern counts (tool outcomes are not kept apart from the
   transcript), the item history; what the events re-derived is replaced by the same
   document. A memory row's `changedAt` is the restore's clock, the agent's epoch moves
   (search state holding the tenant reloads) and one `MemoryChanged` per restored scope
   moves its cache namespace. An imported item's history is the exported one: the changes
   the target's groups recorded for it during the import (its own extraction of an imported
   turn tells a fact's creation again, under another event id) are removed.

Importing the same file twice publishes the same events (the groups' writes are keyed by
turn id and fact hash: nothing changes) and replaces the rows with the same documents.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from pydantic import ValidationError
from pymongo import AsyncMongoClient, ReplaceOne

from engine.adapters.mongo.changes import CHANGED_AT, bump_epochs, stamp
from engine.adapters.mongo.export import FORMAT, KINDS, MEMORY_KIND, VERSION, parse_line
from engine.adapters.mongo.schema import HISTORY
from schemas import topics
from schemas.events import Event, MemoryChanged, MemoryRemembered, TurnRecorded
from schemas.requests import ALL_LAYERS
from schemas.scope import Scope
from services.ops.import_events import first_texts, remember_event, turn_event
from services.runtime import endpoints
from services.sdk.client import MemoryClient
from services.sdk.transport import Position
from services.sdk.waits import visible_groups
from services.settings import Settings
from services.stream.security import kafka_options, mongo_options

RESTORE_BATCH = 500
"""Rows replaced per bulk write."""


class ImportRefused(ValueError):
    """The file is not an export this version reads (one line, for the CLI)."""


@dataclass(slots=True)
class TenantExport:
    """A parsed export: its header and its documents by kind."""

    header: dict[str, Any]
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def count(self) -> int:
        return sum(len(r) for r in self.rows.values())


def read_export(lines: Iterable[str]) -> TenantExport:
    """Parse an export. `ImportRefused` for an empty file, a first line that is not an
    export header, an unknown format version, a line of an unknown kind, or a file cut
    short (no last line, or fewer rows than it says)."""
    it = iter(lines)
    first = next((text for text in it if text.strip()), None)
    if first is None:
        raise ImportRefused("the file is empty: no export header")
    try:
        head = parse_line(first)
    except ValueError:
        raise ImportRefused("the first line is not JSON: not a mnemostream export") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise ImportRefused(f"the first line is not a {FORMAT} header")
    if head.get("version") != VERSION:
        raise ImportRefused(
            f"unknown export format version {head.get('version')!r} "
            f"(this mnemostream reads version {VERSION})"
        )
    export = TenantExport(head, {kind: [] for kind in KINDS})
    end: dict[str, Any] | None = None
    for n, text in enumerate(it, start=2):
        if not text.strip():
            continue
        if end is not None:
            raise ImportRefused(f"line {n} follows the export's last line")
        try:
            item = parse_line(text)
        except ValueError:
            raise ImportRefused(f"line {n} is not JSON") from None
        if isinstance(item, dict) and item.get("end") is True:
            end = item
            continue
        kind = item.get("kind") if isinstance(item, dict) else None
        if kind not in export.rows or not isinstance(item.get("row"), dict):
            raise ImportRefused(f"line {n} is not a row of a known kind ({kind!r})")
        export.rows[kind].append(item["row"])
    if end is None:
        raise ImportRefused("the export is cut short: its last line (end) is missing")
    if end.get("rows") != export.count():
        raise ImportRefused(f"the export says {end.get('rows')} rows and holds {export.count()}")
    return export


@dataclass(frozen=True, slots=True)
class ImportReport:
    turns: int
    remembers: int
    restored: dict[str, int]
    skipped: int
    """Turns that no longer make a valid event (restored as rows only)."""
    seconds: float


def source_events(export: TenantExport) -> tuple[list[Event], int]:
    """The events to publish, in event-time order, and how many turns made none."""
    memory = {str(r["_id"]): r for r in export.rows.get(MEMORY_KIND, [])}
    events: list[Event] = []
    skipped = 0
    for turn in export.rows.get("transcript_turns", []):
        try:
            events.append(turn_event(turn, memory))
        except (ValidationError, KeyError, TypeError, ValueError):
            skipped += 1
    created = first_texts(export.rows.get("history", []))
    for row in memory.values():
        remembered = remember_event(row, created)
        if remembered is not None:
            events.append(remembered)
    events.sort(key=lambda e: e.occurred_at)
    return events, skipped


async def _publish_and_wait(client: MemoryClient, events: Sequence[Event], seconds: float) -> None:
    """Publish `events`, then wait for the groups past the last of each partition."""
    last: dict[tuple[str, int], tuple[Event, Position]] = {}
    for event in events:
        if isinstance(event, TurnRecorded):
            at = await client.publish_turn(event)
        elif isinstance(event, MemoryRemembered):
            at = await client.publish_remember(event)
        else:
            continue
        last[(at.topic, at.partition)] = (event, at)
    groups = (*visible_groups(client.deferred_embeddings), "facts")
    for event, at in last.values():
        if isinstance(event, TurnRecorded):
            await client.wait_turn(event, at, groups, timeout=seconds)
        elif isinstance(event, MemoryRemembered):
            await client.wait_remembered(event, at, timeout=seconds)


async def _retold(db: Any, export: TenantExport, since: datetime) -> int:
    """Remove the item-history changes the target's groups recorded `since` (the import's
    start) for the exported items that the export does not hold: the same creation told a
    second time, by the target's own extraction of an imported turn (whose event id differs
    from the source's). An imported item's history is the exported one."""
    items = [str(r["_id"]) for r in export.rows.get(MEMORY_KIND, [])]
    kept = [r["_id"] for r in export.rows.get("history", [])]
    removed = 0
    for scope in restored_scopes(export):
        tenant = {"agentWallet": scope.agent_wallet, "userAddress": scope.user_address}
        for i in range(0, len(items), RESTORE_BATCH):
            result = await db[HISTORY].delete_many(
                {
                    **tenant,
                    "itemId": {"$in": items[i : i + RESTORE_BATCH]},
                    "_id": {"$nin": kept},
                    "seq": {"$gte": ObjectId.from_datetime(since)},
                }
            )
            removed += result.deleted_count
    return removed


async def _restore(settings: Settings, export: TenantExport, since: datetime) -> dict[str, int]:
    """Replace every exported row by `_id`, drop the history the import retold (`_retold`),
    move the agents' epochs. Counts by kind."""
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(
        endpoints(settings).mongo_uri, retryWrites=False, tz_aware=True, **mongo_options(settings)
    )
    db = mongo[settings.mongo.db]
    counts: dict[str, int] = {}
    try:
        for kind, name in KINDS.items():
            rows = export.rows.get(kind, [])
            for i in range(0, len(rows), RESTORE_BATCH):
                chunk = rows[i : i + RESTORE_BATCH]
                if kind == MEMORY_KIND:  # the search state reads rows back by this clock
                    now = stamp()
                    chunk = [{**r, CHANGED_AT: now} for r in chunk]
                ops = [ReplaceOne({"_id": r["_id"]}, r, upsert=True) for r in chunk]
                await db[name].bulk_write(ops, ordered=False)
            counts[kind] = len(rows)
        counts["retold"] = await _retold(db, export, since)
        agents = {str(r["agentWallet"]) for rows in export.rows.values() for r in rows}
        await bump_epochs(db, agents, "importing a tenant")
    finally:
        await mongo.close()
    return counts


def restored_scopes(export: TenantExport) -> list[Scope]:
    """The (agent, user) scopes the rows belong to, each once."""
    seen = {
        (str(r["agentWallet"]), r.get("userAddress"))
        for rows in export.rows.values()
        for r in rows
        if r.get("agentWallet")
    }
    return [
        Scope.model_validate({"agentWallet": a, **({"userAddress": u} if u else {})})
        for a, u in sorted(seen, key=lambda s: (s[0], s[1] or ""))
    ]


async def import_tenant(
    settings: Settings, export: TenantExport, *, wait_seconds: float = 120.0
) -> ImportReport:
    """Import `export` into the deployment of `settings` (its groups running): see the
    module docstring. `NotProcessed` when the groups do not take the events within
    `wait_seconds`; nothing is restored then, and importing again finishes it."""
    began = time.monotonic()
    since = datetime.now(UTC) - timedelta(seconds=1)  # ObjectId times are in whole seconds
    events, skipped = source_events(export)
    async with MemoryClient(
        endpoints(settings).kafka_bootstrap,
        timeout=settings.request_timeout_seconds,
        kafka_options=kafka_options(settings),
        partitions=settings.kafka.partitions,
        group_prefix=settings.group_prefix,
        deferred_embeddings=settings.embedding.deferred,
        wait_timeout=wait_seconds,
        actor="import",
        ingress=settings.sealing.ingress,  # sealed events: the sealing group seals them
    ) as client:
        await _publish_and_wait(client, events, wait_seconds)
        restored = await _restore(settings, export, since)
        for scope in restored_scopes(export):
            change = MemoryChanged(scope=scope, layers=list(ALL_LAYERS), producer="import")
            await client.publish(topics.CHANGED, change, topics.agent_key(scope.agent_wallet))
    turns = sum(1 for e in events if isinstance(e, TurnRecorded))
    return ImportReport(
        turns=turns,
        remembers=len(events) - turns,
        restored=restored,
        skipped=skipped,
        seconds=time.monotonic() - began,
    )
