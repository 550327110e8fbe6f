"""The throughput benchmark's visibility phase: paced publishing at an offered rate; every
`MARKER_EVERY`-th turn carries a unique nonsense word, and a separate task per marker polls
pre_turn for it, one request in flight per marker (as one agent asks after its own turn),
until the packed context shows it.

Until stop 46 the markers shared 8 requests in flight: at 500 turns/s a pre_turn took
~240 ms, so the 8 slots answered ~35 polls a second for ~25 new markers a second and their
re-polls, and a marker whose turn was already visible waited for a slot (an ad-hoc probe
timed each poll's wait: p50 2.0 s, p95 4.5 s; the request itself p50 237 ms, p95 532 ms).
The figure measured the harness's queue more than the stream."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from benchmarks.throughput_text import MARKER_EVERY, Scope, exchange, marker_word, turn_body
from schemas.inputs import turn_recorded
from services.sdk.client import MemoryClient, RequestFailed

MARKER_TIMEOUT_S = 300.0


@dataclass(slots=True)
class Visibility:
    offered: int = 0
    publish_seconds: float = 0.0
    """From the first scheduled publish until the last was acknowledged."""
    visible_ms: list[float] = field(default_factory=list)
    missed: int = 0
    polls: int = 0
    errors: int = 0
    poll_ms: list[float] = field(default_factory=list)
    """Each poll's request time (pre_turn over the broker, under the phase's load)."""
    lag_after_publish: int | None = None
    """The transcripts group's lag when the last publish was acknowledged."""
    last_turns: dict[Scope, tuple[int, str]] = field(default_factory=dict)
    """The turn id with the highest offset per thread (for the durability check)."""


async def _seen(client: MemoryClient, word: str, scope: Scope, out: Visibility) -> bool:
    out.polls += 1
    began = time.perf_counter()
    try:
        reply = await client.context(f"locker code {word}", scope.wire(), timeout=30)
    except (RequestFailed, TimeoutError):
        out.errors += 1
        return False
    out.poll_ms.append((time.perf_counter() - began) * 1000)
    return word in (reply.prompt or "")


async def _marker(
    client: MemoryClient, word: str, scope: Scope, began: float, out: Visibility
) -> None:
    """Poll until visible: the pause grows with the wait (a tenth of it, 20 ms to 0.5 s),
    so the error stays within about 10 % while a backlog drains without flooding pre_turn."""
    while True:
        if await _seen(client, word, scope, out):
            out.visible_ms.append((time.perf_counter() - began) * 1000)
            return
        waited = time.perf_counter() - began
        if waited > MARKER_TIMEOUT_S:
            out.missed += 1
            return
        await asyncio.sleep(min(0.5, max(0.02, waited / 10)))


async def _publish(
    client: MemoryClient, body: dict[str, object], scope: Scope, out: Visibility
) -> None:
    event = turn_recorded(body)
    pos = await client.publish_turn(event)
    if pos.offset > out.last_turns.get(scope, (-1, ""))[0]:
        out.last_turns[scope] = (pos.offset, event.turn_id)


async def visibility(
    client: MemoryClient,
    threads: list[Scope],
    rate: float,
    seconds: float,
    seed: int,
    lag: Callable[[], Awaitable[int]] | None = None,
) -> Visibility:
    """Publish `rate * seconds` turns paced at `rate` a second, round-robin over `threads`;
    returns when every marker was seen (or timed out)."""
    rng = random.Random(seed)
    out = Visibility(offered=round(rate * seconds))
    publishes: list[asyncio.Task[None]] = []
    markers: list[asyncio.Task[None]] = []
    now_ms = int(time.time() * 1000)
    start = time.perf_counter()
    for n in range(out.offered):
        pause = start + n / rate - time.perf_counter()
        if pause > 0:
            await asyncio.sleep(pause)
        scope = threads[n % len(threads)]
        user, assistant = exchange(rng, n)
        word = marker_word(rng) if n % MARKER_EVERY == 0 else None
        if word is not None:
            user = f"My locker code is {word}. {user}"
        body = turn_body(scope, user, assistant, now_ms + n)
        began = time.perf_counter()
        publishes.append(asyncio.create_task(_publish(client, body, scope, out)))
        if word is not None:
            markers.append(asyncio.create_task(_marker(client, word, scope, began, out)))
    await asyncio.gather(*publishes)
    out.publish_seconds = time.perf_counter() - start
    if lag is not None:
        out.lag_after_publish = await lag()
    await asyncio.gather(*markers)
    return out
