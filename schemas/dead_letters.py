"""What the dead-letter topic (`memory.dlq.v1`) holds for one failed message: the contract
the consumers write (`services.stream.guard`) and the operator tools and the gateway's console
read. A contract of its own, so a reader of the DLQ loads no store driver."""

from __future__ import annotations

import base64
from datetime import datetime

from pydantic import BaseModel


class DeadLetter(BaseModel):
    """What the DLQ holds for one failed message."""

    group: str
    source_topic: str
    partition: int
    offset: int
    key: str | None
    error: str
    """Why the message failed, in one line (a validation error names the field)."""
    error_type: str
    attempts: int
    payload: str
    """The value as text (invalid UTF-8 replaced by U+FFFD); only its head when `partial`."""
    failed_at: datetime
    redrive: str = ""
    """The command that re-publishes this message once its cause is fixed (empty in letters
    written before it was recorded; `mnemostream dlq redrive --group G` still finds those)."""
    raw: str = ""
    """The value's exact bytes, base64, at most `RAW_CAP_BYTES` of them."""
    size: int | None = None
    """Bytes in the value (None in letters written before it was recorded)."""
    tombstone: bool = False
    """The record had no value at all (null, as a compacted topic's delete marker)."""
    partial: bool = False
    """The letter does not hold the exact value (too big for a letter, or longer than
    `RAW_CAP_BYTES` and not UTF-8): a redrive reads it back from its source offset."""
    trace_id: str | None = None
    """The failed record's trace (32 hex digits: its W3C `traceparent`, else the span it was
    handled in), to find its hops in the trace store; None when it was not traced."""

    def value(self) -> bytes | None:
        """The failed record's exact value (None for a tombstone); `LookupError` when the
        letter is `partial`."""
        if self.tombstone:
            return None
        if self.partial:
            raise LookupError(f"the letter of {self.source_topic}@{self.offset} is partial")
        if self.size is not None and self.size <= RAW_CAP_BYTES:
            return base64.b64decode(self.raw)
        return self.payload.encode()


RAW_CAP_BYTES = 64 * 1024
"""Bytes of the failed value kept verbatim (base64) in its dead letter."""
