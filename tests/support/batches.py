"""Hand-made FastStream batches for `BatchConsumer` tests: a small event model, the batch
message the consumer reads, and a stand-in for the dead-letter publisher."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiokafka import ConsumerRecord
from pydantic import BaseModel


class Note(BaseModel):
    text: str
    weight: int = 1


@dataclass
class Batch:
    """What `BatchConsumer.consume` reads of a FastStream batch message."""

    raw_message: tuple[ConsumerRecord[Any, Any], ...]
    body: list[bytes]


@dataclass
class Letters:
    """A stand-in for the dead-letter publisher."""

    sent: list[Any] = field(default_factory=list)

    async def publish(self, letter: Any, key: bytes | None = None) -> None:
        self.sent.append(letter)


def record(partition: int, offset: int, value: bytes) -> ConsumerRecord[Any, Any]:
    return ConsumerRecord("t", partition, offset, 0, 0, b"k", value, None, 1, len(value), [])


def batch(values: list[bytes], partitions: int = 1) -> Batch:
    """`values` spread over `partitions` in consecutive runs, as a fetch returns them."""
    per = -(-len(values) // partitions)
    records = tuple(record(n // per, n % per, value) for n, value in enumerate(values))
    return Batch(records, values)


def notes(*texts: str, weight: int = 1) -> list[bytes]:
    return [Note(text=t, weight=weight).model_dump_json().encode() for t in texts]
