"""The fast tier of the consumer groups: each group's handlers, registered exactly as
`mnemostream run <group>` registers them, on FastStream's in-memory `TestKafkaBroker` and the
in-memory runtime (`services.runtime.memory`). No server is started; a publish runs the
handlers (and the handlers of what they publish) before it returns."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from faststream.kafka import KafkaBroker, TestKafkaBroker
from pydantic import BaseModel

from engine.ports import Embedder
from schemas import topics
from schemas.events import MemoryChanged, Message, TurnRecorded
from schemas.scope import Scope
from services.groups.app import needs_of, register_groups, resolve_groups
from services.runtime import Runtime
from services.runtime.memory import memory_runtime
from services.settings import Settings
from services.stream.guard import DeadLetter

R = TypeVar("R", bound=BaseModel)


@dataclass
class Groups:
    """Groups running on a test broker. `letters` and `changes` collect what was published
    on the dead-letter and `memory.changed` topics."""

    rt: Runtime
    broker: KafkaBroker
    letters: list[DeadLetter] = field(default_factory=list)
    changes: list[MemoryChanged] = field(default_factory=list)

    async def publish(self, message: Any, topic: str, key: bytes = b"k") -> None:
        await self.broker.publish(message, topic, key=key)

    async def request(self, message: BaseModel, topic: str, reply: type[R]) -> R:
        """A request-reply round trip (FastStream's test broker returns the handler's reply)."""
        answer = await self.broker.request(message, topic, timeout=5)
        return reply.model_validate_json(answer.body)


Start = Callable[..., AbstractAsyncContextManager[Groups]]


@pytest.fixture
def start() -> Start:
    """`async with start(["transcripts"], **settings) as g:` runs the named groups on a fresh
    in-memory runtime that built only the parts those groups declare (`embedder` replaces
    the hashing embedder)."""

    @asynccontextmanager
    async def run(
        names: Sequence[str], *, embedder: Embedder | None = None, **settings: Any
    ) -> AsyncIterator[Groups]:
        groups = resolve_groups(names)
        config = Settings(
            group_prefix=f"fast-{uuid.uuid4().hex[:8]}",
            max_attempts=2,
            retry_backoff_ms=0,
            **settings,
        )
        async with memory_runtime(config, embedder=embedder, needs=needs_of(groups)) as rt:
            broker = KafkaBroker()
            register_groups(broker, rt, groups)
            harness = Groups(rt, broker)

            @broker.subscriber(topics.DLQ, group_id="fast-dlq-reader")
            async def read_dlq(letter: DeadLetter) -> None:
                harness.letters.append(letter)

            @broker.subscriber(topics.CHANGED, group_id="fast-changes-reader")
            async def read_changes(changed: MemoryChanged) -> None:
                harness.changes.append(changed)

            async with TestKafkaBroker(broker) as br:
                harness.broker = br
                yield harness

    return run


def scope(agent: str | None = None, **fields: str) -> Scope:
    """A tenant of one test (a unique agent unless given)."""
    data = {"agentWallet": agent or f"0xfast{uuid.uuid4().hex[:10]}", "userAddress": "alice"}
    return Scope.parse({**data, **fields})


def turn(
    tenant: Scope, user: str, assistant: str, *, thread: str = "t1", turn_id: str | None = None
) -> TurnRecorded:
    now = int(time.time() * 1000)
    return TurnRecorded(
        scope=tenant,
        session_id=f"s-{thread}",
        thread_id=thread,
        turn_id=turn_id or uuid.uuid4().hex,
        messages=[
            Message(role="user", content=user, timestamp=now),
            Message(role="assistant", content=assistant, timestamp=now + 1),
        ],
    )
