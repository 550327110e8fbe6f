"""How every subscriber reads a record before its handler: FastStream's parser with header
values made valid UTF-8 (`safe_headers`), and no body decoding (`raw_body`), so a record that
is not what it should be reaches the code that dead-letters or answers it instead of failing
inside FastStream and being read again forever (`services.stream.consumers` passes both to
every subscriber)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from aiokafka import ConsumerRecord
from faststream.kafka.message import KafkaMessage as Record

Raw: TypeAlias = ConsumerRecord[Any, Any] | tuple[ConsumerRecord[Any, Any], ...]
Parse = Callable[[Raw], Awaitable[Record]]


async def safe_headers(raw: Raw, original: Parse) -> Record:
    """FastStream's own parser, on the record (or each record of a batch) with every header
    value made valid UTF-8 (in place): that parser decodes header values strictly, so a null
    or non-UTF-8 value raised before any handler ran and the record was read again forever.
    Undecodable bytes become U+FFFD; the body is untouched."""
    for record in raw if isinstance(raw, tuple | list) else (raw,):
        record.headers = [(name, _utf8(value)) for name, value in record.headers or ()]
    return await original(raw)


def _utf8(value: bytes | None) -> bytes:
    return b"" if value is None else value.decode("utf-8", "replace").encode()


async def raw_body(message: Record) -> bytes | list[bytes]:
    """The record's value (a batch: each record's), undecoded. Every handler reads the raw
    message and validates it into its contract itself (`services.stream.guard.consume`, or the
    request handlers), so a body that is not JSON reaches the code that dead-letters or
    answers it. FastStream's default decoder parsed JSON (when the producer sent
    `content-type: application/json`) before the handler ran, and its failure re-read the
    record forever."""
    return message.body
