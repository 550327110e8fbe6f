"""OpenAI Agents SDK memory on mnemostream: `MnemoSession` (the SDK's `Session` protocol)
and `memory_instructions` (dynamic instructions with pre_turn context).

    async with MemoryClient(bootstrap) as client:
        session = MnemoSession(client, "chat-42", agent="0xAgent", user="alice")
        agent = Agent(name="helper", instructions=session.instructions("You help Alice."))
        result = await Runner.run(agent, "Where do I live?", session=session)

**Scope.** A session is one thread of one tenant: the agent and the user it is built with,
and the thread `session_id`. Every write and read names exactly that scope, so a session
never reads another tenant's turns.

**Storage.** Each `add_items` call is one mnemostream turn (`record_turn`, split into turns
of at most `ITEMS_PER_TURN` items): every item is one message of the turn, with a readable
content (a message's text; "[tool call] name(arguments)"; "[tool result] output"; or the
item's type) and the item itself as JSON in the message's `raw`, which mnemostream keeps
verbatim. A function call answered in the same call is also a tool event of the turn (its
name, arguments and result), so mnemostream learns the agent's tool patterns; the output's
message then only names the tool, the event says the result. So the conversation is memory
like any other: its facts are extracted, its turns are found by the scene and working layers
and pre_turn. An item is at most 32,000 characters as JSON (`session_items`).

`get_items` reads the thread's transcript (the sessions group's `transcript` pages) and
returns the items in order; messages of the thread without an item (turns another client
recorded) come back as plain `{"role", "content"}` messages. `pop_item` and
`clear_session` append a marker to the transcript (a system message naming the removed
item, or clearing everything before it) that `get_items` honours: the transcript stays an
append-only record, and what was said stays in long-term memory (use the items API or the
gateway to forget facts).

Each write returns once the transcript shows it (it is read back until it does, for at most
`write_timeout` seconds), so a `get_items` right after `add_items` sees the items.

**Any loop, any thread.** Every call runs on the loop its client was started on
(`services.integrations.loops`), so `Runner.run` from another loop or thread works; for sync
code (`Runner.run_sync`), `MnemoSession.open(bootstrap, session_id, agent=..., user=...)`
gives the session a client on a loop and thread of its own (`close()` stops them). A call
that could not be served (its client's loop is not running) fails at once, never hangs.
`get_items()` honours `session_settings.limit`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from schemas.ids import h32, thread_session_id
from schemas.scope import Scope
from services.integrations import session_items as wire
from services.integrations.loops import LoopThread, on_home_loop
from services.integrations.session_items import ENVELOPE, MAX_ITEM_CHARS
from services.integrations.visibility import until_visible
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed, ScopeInput

if TYPE_CHECKING:
    from agents import Agent, RunContextWrapper, TResponseInputItem
    from agents.memory import SessionSettings

__all__ = ["MnemoSession", "memory_instructions"]

log = logging.getLogger(__name__)

MODEL = "openai-agents"
"""The `modelUsed` of the recorded turns."""

Instructions: TypeAlias = (
    "str | Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str] | str]"
)


def _now_ms() -> int:
    return int(time.time() * 1000)


class MnemoSession:
    """An Agents SDK session kept as mnemostream turns (see the module docstring).
    `timeout`: seconds a request waits for its reply (the client's default when None);
    `write_timeout`: seconds a write waits until the transcript shows it."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        client: MemoryClient,
        session_id: str,
        *,
        agent: str,
        user: str | None = None,
        timeout: float | None = None,
        write_timeout: float = 30.0,
    ) -> None:
        self._client = client
        self.session_id = session_id
        self.scope = Scope.parse(
            {"agentWallet": agent, "userAddress": user, "threadId": session_id}
        )
        self.transcript_id = thread_session_id(self.scope)
        """The mnemostream session id of the thread's transcript and working buffer."""
        self._timeout = timeout
        self._write_timeout = write_timeout
        self._newest_ms = 0
        self._writing = asyncio.Lock()
        self._owned: LoopThread | None = None

    @classmethod
    def open(
        cls,
        bootstrap: str,
        session_id: str,
        *,
        agent: str,
        user: str | None = None,
        timeout: float | None = None,
        write_timeout: float = 30.0,
        **client_options: Any,
    ) -> MnemoSession:
        """A session with a `MemoryClient` of its own, started on a loop in a thread of its
        own, so any loop and thread may use it (`Runner.run_sync` included); `close()` stops
        both. `client_options` go to `MemoryClient`."""
        thread = LoopThread(f"mnemostream-session-{session_id}")
        client = MemoryClient(bootstrap, **client_options)
        try:
            thread.run(client.start())
        except BaseException:
            thread.stop()
            raise
        session = cls(
            client,
            session_id,
            agent=agent,
            user=user,
            timeout=timeout,
            write_timeout=write_timeout,
        )
        session._owned = thread
        return session

    def close(self) -> None:
        """Stop the client and the thread of a session made by `open` (else nothing)."""
        thread, self._owned = self._owned, None
        if thread is not None:
            try:
                thread.run(self._client.close(), timeout=30)
            finally:
                thread.stop()

    # --- the Session protocol --------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first; the newest `limit` when given (else
        `session_settings.limit`, when set)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = [item for _, item in await on_home_loop(self._client, self._replay)]
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return cast("list[TResponseInputItem]", items)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Record `items` as turns of the thread; returns once the transcript shows them."""
        await on_home_loop(self._client, lambda: self._add_items(items))

    async def _add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        dicts = [dict(cast("Mapping[str, Any]", item)) for item in items]
        raws = [json.dumps({ENVELOPE: 1, "item": d}, ensure_ascii=False) for d in dicts]
        for d, raw in zip(dicts, raws, strict=True):
            if len(raw) > MAX_ITEM_CHARS:
                raise ValueError(
                    f"a {d.get('type') or d.get('role') or 'session'} item is {len(raw)} "
                    f"characters as JSON; a mnemostream session keeps items of at most "
                    f"{MAX_ITEM_CHARS}"
                )
        said = [wire.said(d) for d in dicts]
        answered = wire.answered(dicts)
        for i, d in enumerate(dicts):  # a tool event of the turn holds the result: say it once
            call = (
                answered.get(d.get("call_id")) if d.get("type") == "function_call_output" else None
            )
            if call is not None:
                said[i] = ("tool", f"[tool result] of {call['name']}")
        async with self._writing:
            for part in wire.chunks(raws, [c for _, c in said]):
                await self._record(
                    [said[i] for i in part], [raws[i] for i in part], [dicts[i] for i in part]
                )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest item and return it (None when the session is empty). Each item
        is returned once, whatever pops concurrently: a pop is won by the first marker of
        that item in the transcript, and a pop that lost pops the next newest item."""
        return await on_home_loop(self._client, self._pop_item)

    async def _pop_item(self) -> TResponseInputItem | None:
        async with self._writing:
            while True:
                items = await self._replay()
                if not items:
                    return None
                stamp, item = items[-1]
                turn_id = await self._record(
                    [("system", "(the session's newest item was removed)")],
                    [json.dumps({ENVELOPE: 1, "pop": stamp})],
                    [],
                )
                if await self._first_pop(stamp) == turn_id:
                    return cast("TResponseInputItem", item)

    async def _first_pop(self, stamp: int) -> str | None:
        """The turn id of the transcript's first marker removing the item of `stamp`."""
        for m in await self._messages():
            envelope = wire.envelope(m.get("raw"))
            if envelope is not None and envelope.get("pop") == stamp:
                return str(m.get("turnId"))
        return None

    async def clear_session(self) -> None:
        """Start the session afresh: `get_items` answers nothing recorded before."""
        await on_home_loop(self._client, self._clear_session)

    async def _clear_session(self) -> None:
        async with self._writing:
            if await self._page(None) is None:
                return  # nothing was ever recorded
            await self._record(
                [("system", "(the session's history was cleared)")],
                [json.dumps({ENVELOPE: 1, "clear": True})],
                [],
            )

    # --- instructions ------------------------------------------------------------------------

    def instructions(
        self,
        base: Instructions,
        *,
        budget_chars: int | None = 2_000,
        layers: Sequence[str] | None = None,
    ) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
        """`memory_instructions` with this session's scope (its thread included)."""
        return memory_instructions(
            self._client,
            base,
            scope=self.scope,
            budget_chars=budget_chars,
            layers=layers,
            timeout=self._timeout,
        )

    # --- transcript ----------------------------------------------------------------------------

    async def _page(self, before: int | None) -> dict[str, Any] | None:
        """One transcript page (None when the thread has no transcript yet)."""
        reply = await self._client.transcript(
            self.transcript_id, self.scope, before=before, timeout=self._timeout
        )
        if reply.not_found:
            return None
        if reply.error or reply.transcript is None:
            raise RequestFailed(reply.error or "no transcript in the reply")
        return reply.transcript

    async def _messages(self) -> list[dict[str, Any]]:
        """The transcript's messages since its last clear marker, oldest first."""
        pages: list[list[dict[str, Any]]] = []
        before: int | None = None
        while True:
            page = await self._page(before)
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

    async def _replay(self) -> list[tuple[int, dict[str, Any]]]:
        """(timestamp, item) of the session's items, after its markers."""
        items: list[tuple[int, dict[str, Any]]] = []
        for m in await self._messages():
            stamp = int(m["timestamp"])
            envelope = wire.envelope(m.get("raw"))
            if envelope is None:
                if m.get("role") in ("user", "assistant", "system"):
                    items.append((stamp, {"role": m["role"], "content": m["content"]}))
            elif envelope.get("clear"):
                items.clear()
            elif "pop" in envelope:
                items = [(s, i) for s, i in items if s != envelope["pop"]]
            elif isinstance(envelope.get("item"), dict):
                items.append((stamp, envelope["item"]))
        return items

    async def _record(
        self,
        said: Sequence[tuple[str, str]],
        raws: Sequence[str],
        items: Sequence[Mapping[str, Any]],
    ) -> str:
        """Record one turn of these messages and wait until the transcript shows it; its
        turn id. Their timestamps follow every timestamp this session saw, so the transcript
        keeps them in order."""
        if self._newest_ms == 0:
            await self._messages()  # learn the newest timestamp of an existing transcript
        first = max(_now_ms(), self._newest_ms + 1)
        stamps = [first + i for i in range(len(said))]
        turn_id = "oa_" + h32(f"{self.transcript_id}|{first}|{h32(''.join(raws))}")
        await self._client.record_turn(
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
            timeout=self._write_timeout,
            what=f"turn {turn_id} of session {self.session_id!r}",
        )
        return turn_id

    async def _shows(self, turn_id: str) -> bool | None:
        page = await self._page(None)
        messages = [] if page is None else page.get("messages") or []
        return True if any(m.get("turnId") == turn_id for m in messages) else None


def _latest_usertext_of(items: Sequence[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, Mapping) and item.get("role") == "user":
            text = wire.text_of(item.get("content")).strip()
            if text:
                return text
        elif isinstance(item, str) and item.strip():
            return item.strip()
    return ""


def memory_instructions(
    client: MemoryClient,
    base: Instructions,
    *,
    scope: ScopeInput | Callable[[RunContextWrapper[Any]], ScopeInput],
    budget_chars: int | None = 2_000,
    layers: Sequence[str] | None = None,
    timeout: float | None = None,
) -> Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str]]:
    """Dynamic instructions for an `Agent`: `base` (a string, or the SDK's instructions
    callable) followed by mnemostream's pre_turn context for the run's newest user message
    (`client.context`, within `budget_chars` characters, of `layers`), in `scope` (or the
    scope `scope(context_wrapper)` answers, to read the user from the run's context). With
    no user message, or when pre_turn is unavailable (no reply within `timeout`, or a failed
    request, logged as a warning), the instructions are `base` alone: memory never stops the
    agent. A bad scope raises `ScopeError`."""

    async def instructions(wrapper: RunContextWrapper[Any], agent: Agent[Any]) -> str:
        if isinstance(base, str):
            text = base
        else:
            given = base(wrapper, agent)
            text = await given if not isinstance(given, str) else given
        query = _latest_usertext_of(wrapper.turn_input)
        if not query:
            return text
        where = scope(wrapper) if callable(scope) else scope
        try:
            reply = await on_home_loop(
                client,
                lambda: client.context(
                    query, where, budget_chars=budget_chars, layers=layers, timeout=timeout
                ),
            )
        except (TimeoutError, RequestFailed) as exc:
            log.warning("pre_turn context unavailable, instructions without memory: %s", exc)
            return text
        return f"{text}\n\n{reply.prompt}" if reply.prompt else text

    return instructions
