"""Ids and time helpers shared by the schemas, the engine and the services (no parsing here:
the request parsers are `schemas.inputs`).

Times on the wire and in storage are milliseconds since the Unix epoch (UTC); ids derived
from content are the first 32 hex characters of a SHA-256 (reference §0 `H32`).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from schemas.scope import Scope

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


def h32(text: str) -> str:
    """First 32 hex chars of SHA-256 of the UTF-8 text (reference §0 `H32`)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def to_ms(moment: datetime) -> int:
    """Milliseconds since epoch of an aware datetime (a naive one is read as UTC), floored
    and exact (`event_time`)."""
    return event_time(moment)[1]


def event_time(now: datetime | None = None, given_ms: int | None = None) -> tuple[datetime, int]:
    """An event's time, and it in milliseconds since epoch: `now` when given (a naive one is
    read as UTC), else `given_ms` (a body's `occurredAt`), else the wall clock. The
    milliseconds are floored and exact: integer arithmetic on the timedelta, never
    `timestamp() * 1000`, whose float product turns 257.715 s into 257714.99… and so loses a
    millisecond."""
    if now is None and given_ms is not None:
        return EPOCH + timedelta(milliseconds=given_ms), given_ms
    moment = datetime.now(UTC) if now is None else now
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment, (moment - EPOCH) // _ONE_MS


def from_ms(ms: int) -> datetime:
    """Aware UTC datetime of milliseconds since epoch (exact: no float rounding)."""
    return EPOCH + timedelta(milliseconds=ms)


def thread_session_id(scope: Scope, thread_id: str | None = None) -> str:
    """reference §1.5: `session:<global:agent | local:hai-or-agent>:<thread or main>`."""
    if scope.mode == "local":
        key = f"local:{scope.hai_id or scope.agent_wallet}"
    else:
        key = f"global:{scope.agent_wallet}"
    return f"session:{key}:{thread_id or scope.thread_id or 'main'}"
