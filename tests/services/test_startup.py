"""`start_together`: a broker's subscribers start concurrently (each one's group join waits
out the coordinator's rebalance delay, so one after another they took ~5 s each)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from faststream.kafka import KafkaBroker

from services.stream.startup import start_together


class Part:
    """A subscriber or publisher whose start waits until every subscriber has begun."""

    def __init__(self, everyone: int, begun: list[str], name: str, fail: bool = False) -> None:
        self.everyone, self.begun, self.name, self.fail = everyone, begun, name, fail
        self.started = False

    async def start(self) -> None:
        self.begun.append(self.name)
        while len(self.begun) < self.everyone:  # a join that needs the others to be joining
            await asyncio.sleep(0.01)
        if self.fail:
            raise RuntimeError(f"{self.name} could not join")
        self.started = True


class Broker:
    def __init__(self, subscribers: list[Part], publishers: list[Part]) -> None:
        self.subscribers, self.publishers = subscribers, publishers
        self.connected = self.running = False

    async def connect(self) -> None:
        self.connected = True


def as_broker(broker: Broker) -> KafkaBroker:
    return cast(KafkaBroker, cast(Any, broker))


async def test_subscribers_start_concurrently_then_publishers() -> None:
    begun: list[str] = []
    subscribers = [Part(3, begun, f"s{i}") for i in range(3)]
    publisher = Part(0, [], "p")
    broker = Broker(subscribers, [publisher])
    # one after another, the first start would wait for the others forever
    await asyncio.wait_for(start_together(as_broker(broker)), timeout=10)
    assert broker.connected
    assert broker.running
    assert all(s.started for s in subscribers)
    assert publisher.started


async def test_a_subscriber_that_fails_to_start_fails_the_start_after_the_others() -> None:
    begun: list[str] = []
    subscribers = [Part(3, begun, "a"), Part(3, begun, "b", fail=True), Part(3, begun, "c")]
    broker = Broker(subscribers, [Part(0, [], "p")])
    with pytest.raises(RuntimeError, match="b could not join"):
        await asyncio.wait_for(start_together(as_broker(broker)), timeout=10)
    assert subscribers[0].started
    assert subscribers[2].started
    assert not broker.running
    assert not broker.publishers[0].started


async def test_each_group_is_told_ready_once_all_its_subscribers_have_joined() -> None:
    # issue 17: `run all` printed nothing until every group had joined
    from services.groups.app import JoinProgress
    from services.runtime.memory import memory_runtime
    from services.settings import Settings

    begun: list[str] = []
    subscribers = [Part(4, begun, name) for name in ("search", "search.layers", "jobs", "x")]
    for sub in subscribers:
        sub.group_id = f"mnemo.{sub.name}"  # type: ignore[attr-defined]
    lines: list[str] = []
    async with memory_runtime(Settings(group_prefix="mnemo"), needs=()) as rt:
        joins = JoinProgress(rt, ["search", "jobs", "extraction"], subscribers, lines.append)
        assert lines == ["group extraction has nothing to consume with these settings"]
        await asyncio.wait_for(
            start_together(as_broker(Broker(subscribers, [])), joins.started), 10
        )
    ready = sorted(lines[1:])
    assert ready in (
        ["group jobs ready (1/2)", "group search ready (2/2)"],
        ["group jobs ready (2/2)", "group search ready (1/2)"],
    )
