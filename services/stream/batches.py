"""Batched consumption: a writer group takes the records a fetch returned (up to
`kafka.batch_max_records`), writes them with a few bulk writes and commits once.

`consume_batch` keeps the single-record guarantees (`services.stream.guard.consume`):

* a record no contract accepts (empty, too large, not JSON, invalid) is dead-lettered at once
  and the rest of the batch goes on;
* a batch whose work fails is **split in two** and each half is run again, left before right
  (records keep their order within each partition), down to single records; a single record
  is retried with backoff `attempts` times, then dead-lettered. So a poison record costs a
  few extra runs of its neighbours (idempotent writes make re-running them harmless) and only
  it reaches the dead-letter topic. Sequential work (`one_by_one`) names the event that
  failed: the events before it are done, it alone is retried, and the batch goes on after it
  with nothing run twice;
* a store outage is not the records' fault: the whole batch waits and is retried without
  using up attempts, and after `outage_seconds` `StoreUnavailable` is raised — the batch is
  not committed and is read again.

The work receives the decoded events in record order; it must be idempotent (turn-id guards,
deterministic ids), as every handler already is, since a redelivered batch runs again.

A batch's work is bounded, well inside the consumer's poll interval (`max_poll_interval_ms`:
a consumer that does not poll for that long leaves its group, and the commit of its batch is
refused), whatever the speed of the model or store it calls:

* it takes at most `max_units` units of work (records, or the texts of the `embeddings`
  group: `weigh`); the records after them are **handed back**, unread, to the next poll;
  records are taken from the batch's partitions in turn (each partition's in order), so a
  batch cut short makes progress on every partition;
* it runs in slices sized by its `Pace` (the seconds per unit measured so far) and, once
  `budget_seconds` are spent, hands back the rest of the batch instead of starting another
  slice. The finished records are committed; the handed-back ones are read again by the
  next poll, so nothing is lost or run twice.

Handing back is seeking each partition to its first unfinished record: a consumer that
cannot seek (the in-memory test broker's) runs the whole batch in one slice.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aiokafka import ConsumerRecord
from faststream.kafka.message import KafkaMessage
from pydantic import BaseModel, ValidationError

from engine.sealing import EventSealer, Opened
from schemas.scope import first_error
from services.stream.guard import Outage, is_outage, retried, send_dead_letter, undecodable
from services.stream.handback import Rewinder, rewind_of
from services.stream.metrics import EventProbe, Metrics
from services.stream.pace import Pace, probe_units
from services.stream.sealing import mismatch, open_batch, unsealed
from services.stream.telemetry import note_cause

if TYPE_CHECKING:
    from faststream.kafka.publisher.usecase import DefaultPublisher

log = logging.getLogger(__name__)

E = TypeVar("E", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Entry(Generic[E]):
    """One decoded record of a batch."""

    record: ConsumerRecord[Any, Any]
    body: bytes
    event: E
    probe: EventProbe


def records_of(message: KafkaMessage) -> tuple[ConsumerRecord[Any, Any], ...]:
    """The records of a batch message (a single record counts as a batch of one)."""
    raw = message.raw_message
    return tuple(raw) if isinstance(raw, tuple | list) else (raw,)


def bodies_of(message: KafkaMessage) -> list[bytes]:
    """The raw values of a batch message, in record order."""
    body = message.body
    return list(body) if isinstance(body, list) else [body]


@dataclass(frozen=True, slots=True)
class Item(Generic[E]):
    """One record of a batch, decoded (`entry`) or not (`rejected`: error type, reason)."""

    record: ConsumerRecord[Any, Any]
    body: bytes
    entry: Entry[E] | None
    rejected: tuple[str, str] | None
    units: int


@dataclass(slots=True)
class BatchConsumer(Generic[E]):
    """Runs one batch: decode, dead-letter what cannot be decoded, then `work` on the rest,
    split on failure, in slices bounded by units and time (see the module's docstring)."""

    dead_letters: DefaultPublisher
    group: str
    contract: type[E]
    work: Callable[[list[E]], Awaitable[Any]]
    attempts: int
    backoff_ms: int
    metrics: Metrics | None = None
    outage_seconds: float = 120.0
    admit: Callable[[E], bool] = lambda _event: True
    """Events not admitted (another tenant's, under `only_agents`) are acknowledged unread."""
    weigh: Callable[[E], int] = lambda _event: 1
    """Units of work of an event (≥ 1): a record by default, its texts for the embedder."""
    max_units: int | None = None
    """Most units a batch takes (at least its first record); None: every record."""
    budget_seconds: float | None = None
    """How long a batch's work may run before the rest is handed back; None: no limit."""
    clock: Callable[[], float] = time.monotonic
    rewinder: Callable[[KafkaMessage], Rewinder | None] = rewind_of
    """How records of a message are handed back (`services.stream.handback`)."""
    sealer: EventSealer | None = None
    """Opens sealed records (issue 31); None: a sealed record is dead-lettered (no key)."""
    pace: Pace | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.budget_seconds is not None:
            self.pace = Pace(self.budget_seconds, probe_units(self.max_units))

    async def consume(self, message: KafkaMessage) -> int:
        """Handle the records of `message` that fit its bounds and hand the rest back (also
        when a lasting outage raises); how many were processed (the rest were dead-lettered,
        not admitted or handed back)."""
        records, bodies = records_of(message), bodies_of(message)
        rewind = self.rewinder(message)
        opened = await open_batch(self, records, bodies, rewind)  # sealed events (issue 31)
        items = interleaved(
            [
                self._item(record, body, seen)
                for record, body, seen in zip(records, bodies, opened, strict=True)
            ]
        )
        end = self._taken(items) if rewind is not None else len(items)
        done = processed = 0
        reason = "units"
        started = self.clock()
        try:
            while done < end:
                units = self._plan(started) if rewind is not None else None
                if units == 0:
                    reason = "budget"
                    break
                stop = _slice_end(items, done, end, units)
                began = self.clock()
                processed += await self._slice(items[done:stop])
                if self.pace is not None:
                    self.pace.measured(sum(i.units for i in items[done:stop]), self.clock() - began)
                done = stop
        except Exception:  # a lasting outage: what is not finished is read again
            if rewind is not None:
                self._hand_back(rewind, items[done:], len(items), "failure")
            raise
        if rewind is not None and done < len(items):
            self._hand_back(rewind, items[done:], len(items), reason)
        return processed

    def _item(self, record: ConsumerRecord[Any, Any], body: bytes, seen: Opened | None) -> Item[E]:
        given = unsealed(body, seen)
        if not isinstance(given, bytes):  # None: skipped (an erased key); else dead-lettered
            if given is None and self.metrics is not None:
                self.metrics.sealed_skipped.labels(group=self.group, topic=record.topic).inc()
            return Item(record, body, None, given, 0)
        decoded = self._decode(record, given)
        if not isinstance(decoded, tuple) and seen is not None:
            decoded = mismatch(seen, decoded) or decoded
        if isinstance(decoded, tuple):
            return Item(record, body, None, decoded, 0)
        if not self.admit(decoded):
            return Item(record, body, None, None, 0)
        probe = EventProbe(self.metrics, self.group, record.topic)
        entry = Entry(record, body, decoded, probe)
        note_cause(record, decoded)  # what it causes continues its trace
        return Item(record, body, entry, None, max(1, self.weigh(decoded)))

    def _taken(self, items: Sequence[Item[E]]) -> int:
        """How many leading items fit `max_units` (at least one)."""
        if self.max_units is None:
            return len(items)
        total = 0
        for n, item in enumerate(items):
            total += item.units
            if total > self.max_units and n > 0:
                return n
        return len(items)

    def _plan(self, started: float) -> int | None:
        """Units of the next slice: 0 when the budget is spent, None when unbounded (the
        first slice of a batch always runs: the budget cannot be spent before it)."""
        if self.pace is None:
            return None
        units = self.pace.plan(self.clock() - started)
        return 0 if units is None else units

    async def _slice(self, items: Sequence[Item[E]]) -> int:
        for item in items:
            if item.rejected is not None:
                kind, reason = item.rejected
                probe = EventProbe(self.metrics, self.group, item.record.topic)
                await self._letter(item.record, item.body, probe, reason, kind, 0)
        return await self._run([i.entry for i in items if i.entry is not None])

    def _hand_back(
        self,
        rewind: Rewinder,
        rest: Sequence[Item[E]],
        size: int,
        reason: str,
    ) -> None:
        rewind([i.record for i in rest])
        log.info(
            "handed %d records of a batch of %d back to the next poll (%s)",
            len(rest),
            size,
            reason,
            extra={"group": self.group},
        )
        if self.metrics is not None:
            self.metrics.handed_back.labels(group=self.group, reason=reason).inc(len(rest))

    def _decode(self, record: ConsumerRecord[Any, Any], body: bytes) -> E | tuple[str, str]:
        rejected = undecodable(body, tombstone=record.value is None)
        if rejected is not None:
            return rejected
        try:
            return self.contract.model_validate_json(body)
        except ValidationError as exc:
            return "ValidationError", first_error(exc)
        except (ValueError, RecursionError) as exc:  # a validator that failed its own way
            return type(exc).__name__, str(exc)

    async def _run(self, entries: Sequence[Entry[E]]) -> int:
        if not entries:
            return 0
        if len(entries) == 1:
            return await self._one(entries[0])
        outage = Outage(self.backoff_ms / 1000, self.outage_seconds)
        while True:
            try:
                await self.work([e.event for e in entries])
            except EventFailed as failed:  # sequential work: the failing event is known
                cause, at = _cause(failed), failed.index
                if is_outage(cause):
                    done = self._processed(entries[:at])
                    await outage.wait(cause, self.group)
                    return done + await self._run(entries[at:])
                done = self._processed(entries[:at])
                done += await self._one(entries[at], failed_once=cause)
                return done + await self._run(entries[at + 1 :])
            except Exception as exc:  # noqa: BLE001 - any failure splits; singles log it
                if is_outage(exc):
                    for entry in entries:
                        entry.probe.retrying(type(exc).__name__)
                    await outage.wait(exc, self.group)
                    continue
                log.warning(
                    "a batch of %d failed (%s: %s); splitting it",
                    len(entries),
                    type(exc).__name__,
                    exc,
                    extra={"group": self.group},
                )
                middle = len(entries) // 2
                left = await self._run(entries[:middle])
                return left + await self._run(entries[middle:])
            return self._processed(entries)

    @staticmethod
    def _processed(entries: Sequence[Entry[E]]) -> int:
        for entry in entries:
            entry.probe.processed()
        return len(entries)

    async def _one(self, entry: Entry[E], failed_once: BaseException | None = None) -> int:
        """A single record: retried with exponential backoff, then dead-lettered.
        `failed_once`: its first attempt already failed so, inside its batch."""
        first = failed_once

        async def attempt() -> None:
            nonlocal first
            if first is not None:
                failed, first = first, None
                raise failed
            try:
                await self.work([entry.event])
            except EventFailed as failed:
                raise _cause(failed) from None

        async def letter(error: str, kind: str, tried: int) -> None:
            await self._letter(entry.record, entry.body, entry.probe, error, kind, tried)

        done = await retried(
            attempt,
            group=self.group,
            attempts=self.attempts,
            backoff_ms=self.backoff_ms,
            outage_seconds=self.outage_seconds,
            probe=entry.probe,
            dead_letter=letter,
        )
        return 1 if done else 0

    async def _letter(
        self,
        record: ConsumerRecord[Any, Any],
        body: bytes,
        probe: EventProbe,
        error: str,
        kind: str,
        attempts: int,
    ) -> None:
        await send_dead_letter(
            self.dead_letters, record, body, self.group, error, kind, attempts, probe
        )


class EventFailed(Exception):
    """Raised by sequential batch work (`one_by_one`): the event at `index` failed (the
    exception is its cause) and every event before it was processed."""

    def __init__(self, index: int) -> None:
        super().__init__(f"event {index} of the batch failed")
        self.index = index


def _cause(failed: EventFailed) -> BaseException:
    return failed.__cause__ if failed.__cause__ is not None else failed


def one_by_one(work: Callable[[E], Awaitable[Any]]) -> Callable[[list[E]], Awaitable[None]]:
    """Batch work that runs `work` on each event in order (handlers whose writes are not
    batched still gain one fetch and one commit per batch). A failure names its event
    (`EventFailed`), so the batch goes on after it without running the others again."""

    async def each(events: list[E]) -> None:
        for index, event in enumerate(events):
            try:
                await work(event)
            except Exception as exc:
                raise EventFailed(index) from exc

    each.__name__ = getattr(work, "__name__", "each")
    return each


def interleaved(items: list[Item[E]]) -> list[Item[E]]:
    """`items` taken from their partitions in turn, each partition's in their order: a batch
    cut short by its budget has made progress on every partition it read, not only on the
    first (which could starve the others while it has a backlog)."""
    by_partition: dict[tuple[str, int], list[Item[E]]] = {}
    for item in items:
        by_partition.setdefault((item.record.topic, item.record.partition), []).append(item)
    if len(by_partition) < 2:
        return items
    turns = itertools.zip_longest(*by_partition.values())
    return [item for turn in turns for item in turn if item is not None]


def _slice_end(items: Sequence[Item[E]], start: int, end: int, units: int | None) -> int:
    """The end of the slice that starts at `start`: as many items as `units` allows (None:
    all of them up to `end`), at least one."""
    if units is None:
        return end
    total = 0
    for n in range(start, end):
        total += items[n].units
        if total > units and n > start:
            return n
    return end
