"""Starting a broker's subscribers together instead of one after another.

A subscriber's start returns once its consumer has joined its Kafka group, and a join waits
out the coordinator's rebalance delay (about 5 s on the local broker, 3 s by Kafka's default
`group.initial.rebalance.delay.ms`). FastStream's `broker.start()` starts the subscribers in
turn, so a process of every group (16 subscribers) took about 80 s to be ready; started
together, the joins overlap and the process is ready in about one delay.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from faststream.kafka import KafkaBroker

__all__ = ["start_together"]


async def start_together(broker: KafkaBroker, started: Callable[[Any], None] | None = None) -> None:
    """What `broker.start()` does (connect, start every subscriber, then every publisher,
    mark it running), with the subscribers started concurrently. `started(subscriber)` is
    called as each subscriber has started (joined its group), in the order they finish. If
    one fails to start, the others are still awaited and the first error is raised."""
    await broker.connect()

    async def start(subscriber: Any) -> None:
        await subscriber.start()
        if started is not None:
            started(subscriber)

    results = await asyncio.gather(
        *(start(subscriber) for subscriber in broker.subscribers), return_exceptions=True
    )
    for result in results:
        if isinstance(result, BaseException):
            raise result
    for publisher in broker.publishers:
        await publisher.start()
    broker.running = True
