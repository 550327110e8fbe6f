"""`BatchConsumer` on hand-made batches: a failing batch is split until only the failing
record is retried and dead-lettered; sequential work goes on after the event that failed
without running any other twice; an outage waits; the order within the batch is kept."""

from __future__ import annotations

from typing import Any

from pymongo.errors import AutoReconnect

from engine.errors import InputRejected
from services.stream.batches import BatchConsumer, one_by_one
from tests.support.batches import Letters, Note, batch, notes


def consumer(work: Any, letters: Letters, attempts: int = 3) -> BatchConsumer[Note]:
    return BatchConsumer(letters, "g", Note, work, attempts=attempts, backoff_ms=1)  # type: ignore[arg-type]


async def test_a_failing_bulk_batch_is_split_down_to_the_failing_record() -> None:
    calls: list[list[str]] = []
    stored: list[str] = []

    async def work(events: list[Note]) -> None:
        calls.append([e.text for e in events])
        if any(e.text == "bad" for e in events):
            raise RuntimeError("cannot store")
        stored.extend(e.text for e in events)

    letters = Letters()
    texts = ["a", "b", "c", "bad", "d", "e", "f", "g"]
    done = await consumer(work, letters).consume(batch(notes(*texts)))  # type: ignore[arg-type]
    assert done == 7
    assert stored == ["a", "b", "c", "d", "e", "f", "g"]  # each once, in order
    assert calls.count(["bad"]) == 3
    [letter] = letters.sent
    assert (letter.offset, letter.error_type, letter.attempts) == (3, "RuntimeError", 3)


async def test_sequential_work_goes_on_after_the_failing_event_and_runs_nothing_twice() -> None:
    runs: list[str] = []

    async def store(note: Note) -> None:
        runs.append(note.text)
        if note.text == "bad":
            raise RuntimeError("cannot store")

    letters = Letters()
    texts = ["a", "b", "bad", "c", "d"]
    done = await consumer(one_by_one(store), letters).consume(batch(notes(*texts)))  # type: ignore[arg-type]
    assert done == 4
    assert runs == ["a", "b", "bad", "bad", "bad", "c", "d"]  # 3 attempts in all, no re-runs
    [letter] = letters.sent
    assert (letter.offset, letter.attempts) == (2, 3)


async def test_a_rejected_event_is_dead_lettered_at_once() -> None:
    async def store(note: Note) -> None:
        if note.text == "refused":
            raise InputRejected("no such tenant")

    letters = Letters()
    texts = ["a", "refused", "b"]
    done = await consumer(one_by_one(store), letters).consume(batch(notes(*texts)))  # type: ignore[arg-type]
    assert done == 2
    [letter] = letters.sent
    assert (letter.error_type, letter.attempts) == ("InputRejected", 1)


async def test_an_outage_is_waited_out_without_using_attempts_or_losing_order() -> None:
    down = [AutoReconnect("mongo is down")] * 4
    stored: list[str] = []

    async def store(note: Note) -> None:
        if note.text == "c" and down:
            raise down.pop()
        stored.append(note.text)

    letters = Letters()
    done = await consumer(one_by_one(store), letters, attempts=2).consume(  # type: ignore[arg-type]
        batch(notes("a", "b", "c", "d"))
    )
    assert (done, stored, letters.sent) == (4, ["a", "b", "c", "d"], [])


async def test_undecodable_records_are_dead_lettered_and_the_rest_processed_in_one_run() -> None:
    calls: list[list[str]] = []

    async def work(events: list[Note]) -> None:
        calls.append([e.text for e in events])

    letters = Letters()
    values = [*notes("a"), b"", b"not json", *notes("b"), b'{"other": 1}']
    done = await consumer(work, letters).consume(batch(values))  # type: ignore[arg-type]
    assert (done, calls) == (2, [["a", "b"]])
    assert sorted((x.offset, x.error_type) for x in letters.sent) == [
        (1, "EmptyRecord"),
        (2, "ValidationError"),
        (4, "ValidationError"),
    ]
