"""What runs when a `MemoryClient` closes, before its producer stops: an adapter that
acknowledged writes before publishing them (`MnemoStore`'s write lane) publishes them here,
so closing the client loses none of them."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from functools import cached_property

log = logging.getLogger(__name__)

Hook = Callable[[], Awaitable[None]]


class ClosingHooks:
    """A mixin of `MemoryClient`: `before_close` hooks, awaited in order by `close`."""

    @cached_property
    def _closing(self) -> list[Hook]:
        return []

    def before_close(self, hook: Hook) -> None:
        """Await `hook` when the client closes, while it can still publish."""
        self._closing.append(hook)

    async def close(self) -> None:
        """Run the hooks (a failing one is logged, the others still run), then close."""
        hooks, self._closing[:] = list(self._closing), []
        for hook in hooks:
            try:
                await hook()
            except Exception:  # closing goes on; the log says what was not published
                log.exception("a hook run before the client closed failed")
        await super().close()  # type: ignore[misc]
