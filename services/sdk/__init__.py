"""The Python SDK: `MemoryClient` publishes events and asks request-reply questions over Kafka.

Modules by concern: `transport` (producer, reply topic, request-reply), `operations` (items,
sessions, admin, jobs, rerank, item history), `waits` (which consumer groups a write goes
through, for read-your-writes) and `client` (`MemoryClient`: the agent loop's writes and
reads, on top of them). The SDK imports `schemas` and the Kafka client only, never `engine`.

Errors: `ScopeError` for a bad input (its subclass `ValueOutOfRange` for a number or a time
out of its range), raised before anything is published; `RequestFailed` for a reply that
carries an error; `TimeoutError` for no reply within the timeout (`NotProcessed` for a
`wait=True` write not yet visible).
"""

from schemas.bounds import ValueOutOfRange
from schemas.scope import ScopeError
from services.sdk.client import MemoryClient
from services.sdk.transport import Position, RequestFailed
from services.stream.progress import NotProcessed

__all__ = [
    "MemoryClient",
    "NotProcessed",
    "Position",
    "RequestFailed",
    "ScopeError",
    "ValueOutOfRange",
]
