"""The transcript behind an Agents SDK session (`MnemoSession`): one thread of one tenant,
read in pages and appended to as turns, without the SDK (no framework import).

`messages` reads the thread's transcript (the sessions group's `transcript` pages) back to its
last clear marker; `replay` folds it into the session's items; `record` appends one turn and
waits until the transcript shows it (read back for at most `write_timeout` seconds), so the
next read sees it. Every call runs on the client's own loop (the caller sees to it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from schemas.ids import h32
from schemas.scope import Scope
from services.integrations import session_items as wire
from services.integrations.session_items import ENVELOPE, MAX_ITEM_CHARS
from services.integrations.visibility import until_visible
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed

MODEL = "openai-agents"
"""The `modelUsed` of the recorded turns."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class SessionTranscript:
    """The transcript `transcript_id` of `scope` (one thread of one tenant).
    `timeout`: seconds a request waits for its reply (the client's default when None)."""

    def __init__(
        self,
        client: MemoryClient,
        scope: Scope,
        transcript_id: str,
        *,
        timeout: float | None,
        write_timeout: float,
    ) -> None:
        self.client = client
        self.scope = scope
        self.transcript_id = transcript_id
        self.timeout = timeout
        self.write_timeout = write_timeout
        self._newest_ms = 0

    async def page(self, before: int | None) -> dict[str, Any] | None:
        """One transcript page (None when the thread has no transcript yet)."""
        reply = await self.client.transcript(
            self.transcript_id, self.scope, before=before, timeout=self.timeout
        )
        if reply.not_found:
            return None
        if reply.error or reply.transcript is None:
            raise RequestFailed(reply.error or "no transcript in the reply")
        return reply.transcript

    async def messages(self) -> list[dict[str, Any]]:
        """The transcript's messages since its last clear marker, oldest first."""
        pages: list[list[dict[str, Any]]] = []
        before: int | None = None
        while True:
            page = await self.page(before)
            if page is None:
                return []
            messages = list(page.get("messages") or [])
            pages.append(messages)
            if not messages:
                break
            self._newest_ms = max(self._newest_ms, *(int(m["timestamp"]) for m in messages))
            if any((wire.envelope(m.get("raw")) or {}).get("clear") for m in messages):
                break
            start = int(page.get("start") or 0)
            if start <= 0:
                break
            before = start
        return [m for page in reversed(pages) for m in page]

    async def replay(self) -> list[tuple[int, dict[str, Any]]]:
        """(timestamp, item) of the session's items, after its markers."""
        items: list[tuple[int, dict[str, Any]]] = []
        for m in await self.messages():
            stamp = int(m["timestamp"])
            envelope = wire.envelope(m.get("raw"))
            if envelope is None:
                if m.get("role") in ("user", "assistant", "system"):
                    items.append((stamp, {"role": m["role"], "content": m["content"]}))
            elif envelope.get("clear"):
                items.clear()
            elif "pop" in envelope:
                items = [(s, i) for s, i in items if s != envelope["pop"]]
            elif isinstance(envelope.get("drop"), list):  # a compaction's replaced items
                dropped = set(envelope["drop"])
                items = [(s, i) for s, i in items if s not in dropped]
            elif isinstance(envelope.get("item"), dict):
                items.append((stamp, envelope["item"]))
        return items

    async def first_pop(self, stamp: int) -> str | None:
        """The turn id of the transcript's first marker removing the item of `stamp`."""
        for m in await self.messages():
            envelope = wire.envelope(m.get("raw"))
            if envelope is not None and envelope.get("pop") == stamp:
                return str(m.get("turnId"))
        return None

    async def record(
        self,
        said: Sequence[tuple[str, str]],
        raws: Sequence[str],
        items: Sequence[Mapping[str, Any]],
    ) -> str:
        """Record one turn of these messages and wait until the transcript shows it; its
        turn id. Their timestamps follow every timestamp this object saw, so the transcript
        keeps them in order."""
        if self._newest_ms == 0:
            await self.messages()  # learn the newest timestamp of an existing transcript
        first = max(_now_ms(), self._newest_ms + 1)
        stamps = [first + i for i in range(len(said))]
        turn_id = "oa_" + h32(f"{self.transcript_id}|{first}|{h32(''.join(raws))}")
        await self.client.record_turn(
            {
                **self.scope.wire(),
                "turnId": turn_id,
                "occurredAt": first,
                "modelUsed": MODEL,
                "messages": [
                    {"role": role, "content": content[:MAX_ITEM_CHARS], "timestamp": t, "raw": r}
                    for (role, content), r, t in zip(said, raws, stamps, strict=True)
                ],
                "toolEvents": wire.tool_events(items, stamps[: len(items)]),
            }
        )
        self._newest_ms = stamps[-1]
        await until_visible(
            lambda: self._shows(turn_id),
            timeout=self.write_timeout,
            what=f"turn {turn_id} of session {self.scope.thread_id!r}",
        )
        return turn_id

    async def _shows(self, turn_id: str) -> bool | None:
        page = await self.page(None)
        messages = [] if page is None else page.get("messages") or []
        return True if any(m.get("turnId") == turn_id for m in messages) else None

    async def marker(self, note: str, envelope: Mapping[str, Any]) -> str:
        """Record a marker message (role `system`, `note` its content); its turn id."""
        return await self.record([("system", note)], [json.dumps({ENVELOPE: 1, **envelope})], [])
