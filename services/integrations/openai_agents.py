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
`session_settings` (the SDK's `SessionSettings` or its dict) is a constructor argument, as on
the SDK's own sessions, and `get_items()` honours its `limit`; after `close()` every call
raises `RuntimeError`. The transcript itself is `session_transcript.SessionTranscript`.

**Compaction.** `_get_compaction_snapshot` is the hook the SDK's own backends give its
`OpenAIResponsesCompactionSession`: the newest items, and a `replace_suffix` that swaps the
compacted items for the compaction's output in one recorded turn (the new items and a marker
dropping the old ones), after checking they are still the newest (serialised per session
object, not across processes).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

from schemas.ids import thread_session_id
from schemas.scope import Scope
from services.integrations import session_items as wire
from services.integrations.loops import LoopThread, on_home_loop
from services.integrations.session_items import ENVELOPE, MAX_ITEM_CHARS
from services.integrations.session_transcript import MODEL, SessionTranscript
from services.sdk.client import MemoryClient
from services.sdk.transport import RequestFailed, ScopeInput

if TYPE_CHECKING:
    from agents import Agent, RunContextWrapper, TResponseInputItem
    from agents.memory import SessionSettings
    from agents.memory.session import _CompactionSnapshot

__all__ = ["MODEL", "MnemoSession", "memory_instructions"]

log = logging.getLogger(__name__)

T = TypeVar("T")

Instructions: TypeAlias = (
    "str | Callable[[RunContextWrapper[Any], Agent[Any]], Awaitable[str] | str]"
)


def _settings(given: SessionSettings | Mapping[str, Any] | None) -> SessionSettings:
    """The SDK's own normalisation: a dict is checked (unknown fields are a TypeError)."""
    from agents.memory import SessionSettings
    from agents.memory.session_settings import coerce_session_settings

    if given is None:
        return SessionSettings()
    return coerce_session_settings(cast("SessionSettings | dict[str, Any]", given))


class MnemoSession:
    """An Agents SDK session kept as mnemostream turns (see the module docstring).
    `timeout`: seconds a request waits for its reply (the client's default when None);
    `write_timeout`: seconds a write waits until the transcript shows it;
    `session_settings`: the SDK's `SessionSettings` (or its dict), `SessionSettings()` when
    None, as the SDK's own sessions."""

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
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        self._client = client
        self.session_id = session_id
        self.scope = Scope.parse(
            {"agentWallet": agent, "userAddress": user, "threadId": session_id}
        )
        self.transcript_id = thread_session_id(self.scope)
        """The mnemostream session id of the thread's transcript and working buffer."""
        self.session_settings = _settings(session_settings)
        self._timeout = timeout
        self._log = SessionTranscript(
            client,
            self.scope,
            self.transcript_id,
            timeout=timeout,
            write_timeout=write_timeout,
        )
        self._writing = asyncio.Lock()
        self._owned: LoopThread | None = None
        self._closed = False

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
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
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
            session_settings=session_settings,
        )
        session._owned = thread
        return session

    def close(self) -> None:
        """Close the session: every later call raises `RuntimeError`. A session made by
        `open` also stops its client and its thread; a shared client stays open."""
        self._closed = True
        thread, self._owned = self._owned, None
        if thread is not None:
            try:
                thread.run(self._client.close(), timeout=30)
            finally:
                thread.stop()

    async def _call(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        if self._closed:
            raise RuntimeError(f"MnemoSession {self.session_id!r} is closed")
        return await on_home_loop(self._client, make)

    # --- the Session protocol --------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first; the newest `limit` when given (else
        `session_settings.limit`, when set)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = [item for _, item in await self._call(self._log.replay)]
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return cast("list[TResponseInputItem]", items)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Record `items` as turns of the thread; returns once the transcript shows them."""
        await self._call(lambda: self._add_items(items))

    async def _add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        said, raws, dicts = _encoded(items)
        async with self._writing:
            for part in wire.chunks(raws, [c for _, c in said]):
                await self._log.record(
                    [said[i] for i in part], [raws[i] for i in part], [dicts[i] for i in part]
                )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest item and return it (None when the session is empty). Each item
        is returned once, whatever pops concurrently: a pop is won by the first marker of
        that item in the transcript, and a pop that lost pops the next newest item."""
        return await self._call(self._pop_item)

    async def _pop_item(self) -> TResponseInputItem | None:
        async with self._writing:
            while True:
                items = await self._log.replay()
                if not items:
                    return None
                stamp, item = items[-1]
                turn_id = await self._log.marker(
                    "(the session's newest item was removed)", {"pop": stamp}
                )
                if await self._log.first_pop(stamp) == turn_id:
                    return cast("TResponseInputItem", item)

    async def clear_session(self) -> None:
        """Start the session afresh: `get_items` answers nothing recorded before."""
        await self._call(self._clear_session)

    async def _clear_session(self) -> None:
        async with self._writing:
            if await self._log.page(None) is None:
                return  # nothing was ever recorded
            await self._log.marker("(the session's history was cleared)", {"clear": True})

    async def _get_compaction_snapshot(
        self, limit: int, *, prune_prefix: Callable[[Any], bool] | None = None
    ) -> _CompactionSnapshot:
        """The SDK's hook for automatic compaction (its own backends have it): the newest
        `limit` items, whether they are all of them, and `replace_suffix(start, output)`,
        which replaces the items from `start` on with `output` in one recorded turn when they
        are still the newest (else False), first dropping the oldest items `prune_prefix`
        answers True for."""
        from agents.memory.session import _CompactionSnapshot

        stored = await self._call(self._log.replay)
        window = stored[-limit:] if limit > 0 else []

        async def replace_suffix(start: int, output: list[TResponseInputItem]) -> bool:
            expected = [stamp for stamp, _ in window[start:]]
            if not expected:
                return False
            return await self._call(lambda: self._replace(expected, output, prune_prefix))

        return _CompactionSnapshot(
            [cast("TResponseInputItem", i) for _, i in window],
            len(window) == len(stored),
            replace_suffix,
        )

    async def _replace(
        self,
        expected: list[int],
        output: list[TResponseInputItem],
        prune_prefix: Callable[[Any], bool] | None,
    ) -> bool:
        async with self._writing:
            stored = await self._log.replay()
            if [stamp for stamp, _ in stored[-len(expected) :]] != expected:
                return False
            dropped = list(expected)
            for stamp, item in stored[: -len(expected)]:
                if prune_prefix is None or not prune_prefix(item):
                    break
                dropped.append(stamp)
            said, raws, dicts = _encoded(output) if output else ([], [], [])
            marker = json.dumps({ENVELOPE: 1, "drop": dropped})
            # one turn: the new items and the marker that drops the old ones land together
            await self._log.record(
                [*said, ("system", "(the session's items were compacted)")],
                [*raws, marker],
                dicts,
            )
            return True

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


def _encoded(
    items: Sequence[TResponseInputItem],
) -> tuple[list[tuple[str, str]], list[str], list[dict[str, Any]]]:
    """Each item's (role, readable content), its raw JSON envelope and the item as a dict;
    a `ValueError` for an item over `MAX_ITEM_CHARS` as JSON."""
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
        call = answered.get(d.get("call_id")) if d.get("type") == "function_call_output" else None
        if call is not None:
            said[i] = ("tool", f"[tool result] of {call['name']}")
    return said, raws, dicts


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
