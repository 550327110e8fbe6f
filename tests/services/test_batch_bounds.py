"""A batch's work is bounded by units and by time (issue 29): `BatchConsumer` takes at most
`max_units` units, works in slices sized by its `Pace`, and once `budget_seconds` are spent
hands the rest back to the next poll: each record is either processed once or handed back,
never both, never neither. The clock is a counter the work advances (no real time)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.errors import CommitFailedError
from pymongo.errors import AutoReconnect

from services.stream.batches import BatchConsumer
from services.stream.guard import StoreUnavailable
from services.stream.handback import Rewind, commit
from services.stream.metrics import Metrics
from tests.support.batches import Letters, Note, batch, notes, record


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class HandedBack:
    """The rewinder: records the records handed back."""

    records: list[ConsumerRecord[Any, Any]] = field(default_factory=list)
    calls: int = 0

    def __call__(self, records: Sequence[ConsumerRecord[Any, Any]]) -> None:
        self.calls += 1
        self.records.extend(records)


def bounded(
    work: Any,
    clock: Clock,
    back: HandedBack,
    *,
    budget: float | None = 10.0,
    max_units: int | None = 80,
    metrics: Metrics | None = None,
    letters: Letters | None = None,
) -> BatchConsumer[Note]:
    return BatchConsumer(
        letters or Letters(),  # type: ignore[arg-type]
        "g",
        Note,
        work,
        attempts=2,
        backoff_ms=1,
        metrics=metrics,
        outage_seconds=0.05,
        weigh=lambda note: note.weight,
        max_units=max_units,
        budget_seconds=budget,
        clock=clock,
        rewinder=lambda _message: back,
    )


def slow_work(clock: Clock, seconds_per_unit: float, runs: list[list[str]]) -> Any:
    async def work(events: list[Note]) -> None:
        runs.append([e.text for e in events])
        clock.now += seconds_per_unit * sum(e.weight for e in events)

    return work


async def test_a_batch_past_its_budget_commits_a_prefix_and_hands_the_rest_back() -> None:
    clock, back, runs = Clock(), HandedBack(), []
    texts = [f"n{i}" for i in range(80)]  # n0..n39 on partition 0, n40..n79 on partition 1
    metrics = Metrics()
    consumer = bounded(slow_work(clock, 1.0, runs), clock, back, metrics=metrics)
    done = await consumer.consume(batch(notes(*texts), partitions=2))  # type: ignore[arg-type]

    processed = [text for run in runs for text in run]
    assert 0 < done < len(texts)
    assert sorted(processed) == sorted(set(processed))  # each once
    # partitions taken in turn, each in its order: every partition has a finished prefix
    first = [t for t in processed if int(t[1:]) < 40]
    second = [t for t in processed if int(t[1:]) >= 40]
    assert first == texts[: len(first)]
    assert second == texts[40 : 40 + len(second)]
    assert abs(len(first) - len(second)) <= 1
    assert clock.now <= 10.0 + 10.0 / 4  # the last slice was planned inside the budget
    # exactly the rest is handed back, once
    assert back.calls == 1
    assert sorted((r.partition, r.offset) for r in back.records) == [
        (0, n) for n in range(len(first), 40)
    ] + [(1, n) for n in range(len(second), 40)]
    assert (
        metrics.registry.get_sample_value(
            "mnemostream_batch_records_handed_back_total", {"group": "g", "reason": "budget"}
        )
        == len(texts) - done
    )
    assert len(runs[0]) == 10  # the first slice: an eighth of the 80 units a batch takes


async def test_slices_follow_the_measured_speed_and_shrink_at_once_when_it_drops() -> None:
    clock, back, runs = Clock(), HandedBack(), []
    speed = {"per_unit": 0.01}

    async def work(events: list[Note]) -> None:
        runs.append([e.text for e in events])
        clock.now += speed["per_unit"] * len(events)

    texts = [f"n{i}" for i in range(1000)]
    consumer = bounded(work, clock, back, max_units=1000)
    assert await consumer.consume(batch(notes(*texts))) == 1000  # type: ignore[arg-type]
    # the probe, then slices of a quarter of the budget at the measured speed, then the rest
    assert [len(run) for run in runs] == [125, 250, 250, 250, 125]

    speed["per_unit"] = 1.0  # the model becomes a hundred times slower
    runs.clear()
    clock.now = 0.0
    done = await consumer.consume(batch(notes(*texts)))  # type: ignore[arg-type]
    assert (done, len(back.records)) == (250, 750)  # one slice planned at the old speed
    runs.clear()
    clock.now = 0.0
    await consumer.consume(batch(notes(*texts)))  # type: ignore[arg-type]
    assert len(runs[0]) == 2  # the next is sized for the new speed: 2.5 s at 1 s a unit


async def test_a_batch_takes_at_most_its_units_and_hands_the_others_back_unread() -> None:
    clock, back, runs = Clock(), HandedBack(), []
    letters = Letters()
    values = [*notes("a", "b", "c", weight=30), b"not json", *notes("d", weight=30)]
    consumer = bounded(
        slow_work(clock, 0.0, runs), clock, back, budget=None, max_units=70, letters=letters
    )
    done = await consumer.consume(batch(values))  # type: ignore[arg-type]
    assert (done, runs) == (2, [["a", "b"]])
    assert [r.offset for r in back.records] == [2, 3, 4]
    assert letters.sent == []  # the garbage is lettered when it is reached, not before


async def test_a_single_record_heavier_than_the_cap_is_taken_alone() -> None:
    clock, back, runs = Clock(), HandedBack(), []
    consumer = bounded(slow_work(clock, 0.0, runs), clock, back, budget=None, max_units=10)
    done = await consumer.consume(batch(notes("huge", "next", weight=50)))  # type: ignore[arg-type]
    assert (done, runs, [r.offset for r in back.records]) == (1, [["huge"]], [1])


async def test_a_lasting_outage_hands_back_only_what_was_not_finished() -> None:
    clock, back, runs = Clock(), HandedBack(), []

    async def work(events: list[Note]) -> None:
        runs.append([e.text for e in events])
        clock.now += 0.01 * len(events)
        if len(runs) > 1:
            raise AutoReconnect("mongo is down")

    texts = [f"n{i}" for i in range(80)]
    consumer = bounded(work, clock, back)
    with pytest.raises(StoreUnavailable):
        await consumer.consume(batch(notes(*texts)))  # type: ignore[arg-type]
    assert runs[0] == texts[:10]
    assert [r.offset for r in back.records] == list(range(10, 80))


async def test_without_a_way_to_hand_back_the_batch_runs_whole() -> None:
    clock, runs = Clock(), []
    consumer = BatchConsumer(
        Letters(),  # type: ignore[arg-type]
        "g",
        Note,
        slow_work(clock, 1.0, runs),
        attempts=1,
        backoff_ms=1,
        max_units=8,
        budget_seconds=1.0,
        clock=clock,
        rewinder=lambda _message: None,  # the in-memory test broker cannot read records again
    )
    texts = [f"n{i}" for i in range(20)]
    assert await consumer.consume(batch(notes(*texts))) == 20  # type: ignore[arg-type]
    assert runs == [texts]


@dataclass
class FakeConsumer:
    held: set[TopicPartition]
    sought: dict[TopicPartition, int] = field(default_factory=dict)

    def assignment(self) -> set[TopicPartition]:
        return self.held

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.sought[tp] = offset


def test_rewind_seeks_each_held_partition_to_its_first_handed_back_record() -> None:
    fake = FakeConsumer({TopicPartition("t", 0), TopicPartition("t", 1)})
    Rewind(fake)([record(0, 7, b"x"), record(0, 8, b"x"), record(1, 3, b"x"), record(2, 5, b"x")])  # type: ignore[arg-type]
    # partition 2 moved to another member: it reads from the committed offset
    assert fake.sought == {TopicPartition("t", 0): 7, TopicPartition("t", 1): 3}


@dataclass
class Acked:
    error: Exception | None = None
    acks: int = 0

    async def ack(self) -> None:
        self.acks += 1
        if self.error is not None:
            raise self.error


async def test_a_commit_refused_after_a_rebalance_is_counted_not_raised() -> None:
    metrics = Metrics()
    assert await commit(Acked(), "g", metrics) is True  # type: ignore[arg-type]
    refused = Acked(CommitFailedError("the group has already rebalanced"))
    assert await commit(refused, "g", metrics) is False  # type: ignore[arg-type]
    assert refused.acks == 1
    assert (
        metrics.registry.get_sample_value("mnemostream_batch_commits_refused_total", {"group": "g"})
        == 1
    )
