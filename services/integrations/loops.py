"""Calling a `MemoryClient` from any event loop and any thread (issue 30).

A client lives on the loop it was started on: its producer, its reply reader and the futures
of its pending requests belong to that loop, and a coroutine of the client awaited from
another loop never completes. Frameworks call their stores from loops of their own: the
Agents SDK's `Runner.run_sync` runs a new loop in the caller's thread, LangGraph runs sync
nodes in worker threads.

* `on_home_loop(client, make)` runs `make()` on the client's loop: at once when that is the
  running loop, through `asyncio.run_coroutine_threadsafe` when the client's loop runs in
  another thread, and with a clear `RuntimeError` (never a hang) when the client's loop is
  not running at all (its thread is the one blocked in the caller's `run_sync`).
* `LoopThread` is a loop of its own in a daemon thread, for clients that must serve sync
  code: `MnemoSession.open` starts its client there, so every loop and thread can use it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from services.sdk.transport import Transport

T = TypeVar("T")

NOT_RUNNING = (
    "the MemoryClient's event loop is not running (it was started on a loop that has ended "
    "or that this thread is blocking, as Runner.run_sync does): open the session with "
    "MnemoSession.open(...), whose client runs on a thread of its own"
)


async def on_home_loop(client: Transport, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`await make()` on the loop `client` was started on (see the module docstring)."""
    home = client.loop
    here = asyncio.get_running_loop()
    if home is None or home is here:
        return await make()
    if home.is_closed() or not home.is_running():
        raise RuntimeError(NOT_RUNNING)
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), home))


class LoopThread:
    """An event loop running in a daemon thread until `stop`."""

    def __init__(self, name: str = "mnemostream-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coroutine` on the thread's loop and wait for it here (never from that loop)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self.loop.close()
