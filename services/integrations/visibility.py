"""Waiting for a published write to become readable.

The SDK's writes (`remember`, `record_turn`) return once the broker has the event; the
groups apply it a moment later. An adapter whose framework expects read-your-writes (a
LangGraph `put` then `get`, an Agents session's `add_items` then `get_items`) reads the write
back until it is there: `until_visible` repeats a read, with a short growing pause between
tries, until it answers something, and gives up with `TimeoutError` after `timeout`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

FIRST_PAUSE = 0.01
"""Seconds between the first two reads; doubled after each miss, up to `LONGEST_PAUSE`."""
LONGEST_PAUSE = 0.25


async def until_visible(read: Callable[[], Awaitable[T | None]], *, timeout: float, what: str) -> T:
    """The first answer of `read` that is not None. `TimeoutError` naming `what` when none
    came within `timeout` seconds (the last read may start up to then)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pause = FIRST_PAUSE
    while True:
        found = await read()
        if found is not None:
            return found
        left = deadline - loop.time()
        if left <= 0:
            raise TimeoutError(f"{what} was not readable {timeout:g} s after it was written")
        await asyncio.sleep(min(pause, left))
        pause = min(pause * 2, LONGEST_PAUSE)
