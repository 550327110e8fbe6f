"""`MnemoSession` from any loop and thread (issue 30), on the real stack: `Runner.run_sync`
(a loop of its own in the caller's thread) with a session that owns its client and with one
on a client of another loop; a call that cannot be served fails at once instead of hanging;
concurrent pops return each item once; `session_settings.limit` is honoured.

Each sync part runs in a worker thread (`asyncio.to_thread`) while the groups keep running
on the test's loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent, Runner
from agents.memory import SessionSettings

from services.endpoints import Endpoints
from services.integrations.loops import LoopThread
from services.integrations.openai_agents import MnemoSession
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from tests.support.agents import ScriptedModel, no_trace_export, said, texts  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("no_trace_export")]


def two_runs(session: MnemoSession, name: str) -> list[Any]:
    """Two `Runner.run_sync` runs of one session (sync code); the second model call's input."""
    model = ScriptedModel([[said("Noted: Oslo.", f"{name}_1")], [said("Oslo.", f"{name}_2")]])
    assistant = Agent(name=name, model=model, instructions="You remember cities.")
    first = Runner.run_sync(assistant, "I moved to Oslo.", session=session)
    second = Runner.run_sync(assistant, "Where do I live?", session=session)
    assert (first.final_output, second.final_output) == ("Noted: Oslo.", "Oslo.")
    return list(model.calls[-1]["input"])


async def test_run_sync_works_with_a_session_that_owns_its_client(
    rules_pipeline: tuple[Runtime, MemoryClient], stack: Endpoints, unique: Any
) -> None:
    _, client = rules_pipeline
    agent = unique("0xSync")

    def sync_code() -> list[Any]:
        session = MnemoSession.open(
            stack.kafka_bootstrap,
            "sync-1",
            agent=agent,
            user="ola",
            timeout=15,
            group_prefix=client.group_prefix,
        )
        try:
            return two_runs(session, "owner")
        finally:
            session.close()

    given = await asyncio.wait_for(asyncio.to_thread(sync_code), timeout=120)

    assert texts(given) == ["I moved to Oslo.", "Noted: Oslo.", "Where do I live?"]
    # what the sync code wrote is there for any other client
    items = await MnemoSession(client, "sync-1", agent=agent, user="ola").get_items()
    assert len(items) == 4


async def test_run_sync_works_with_a_session_on_a_client_of_another_loop(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline  # started on this test's loop, which keeps running
    session = MnemoSession(client, "sync-2", agent=unique("0xSync"), user="kari")

    given = await asyncio.wait_for(asyncio.to_thread(two_runs, session, "shared"), timeout=120)

    assert texts(given) == ["I moved to Oslo.", "Noted: Oslo.", "Where do I live?"]


async def test_a_session_whose_client_loop_is_not_running_fails_at_once(
    stack: Endpoints, unique: Any
) -> None:
    thread = LoopThread("stopped")
    client = MemoryClient(stack.kafka_bootstrap, timeout=15)
    thread.run(client.start())
    thread.loop.call_soon_threadsafe(thread.loop.stop)  # the loop stops; its client stays
    await asyncio.to_thread(thread._thread.join, 10)
    session = MnemoSession(client, "stuck", agent=unique("0xSync"), user="per")
    try:
        with pytest.raises(RuntimeError, match="event loop is not running"):
            await asyncio.wait_for(session.get_items(), timeout=5)
    finally:
        await asyncio.to_thread(thread.loop.run_until_complete, client.close())
        thread.loop.close()


async def test_concurrent_pops_return_each_item_once(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    agent = unique("0xPop")
    first = MnemoSession(client, "pops", agent=agent, user="liv")
    second = MnemoSession(client, "pops", agent=agent, user="liv")  # another process's view
    await first.add_items([{"role": "user", "content": f"item {n}"} for n in range(4)])

    popped = await asyncio.gather(first.pop_item(), second.pop_item())

    assert sorted(texts([p for p in popped if p is not None])) == ["item 2", "item 3"]
    assert texts(await first.get_items()) == ["item 0", "item 1"]
    assert texts(await second.get_items()) == ["item 0", "item 1"]


async def test_get_items_honours_the_session_settings_limit(
    rules_pipeline: tuple[Runtime, MemoryClient], unique: Any
) -> None:
    _, client = rules_pipeline
    session = MnemoSession(client, "limited", agent=unique("0xLimit"), user="ada")
    await session.add_items([{"role": "user", "content": f"item {n}"} for n in range(5)])
    session.session_settings = SessionSettings(limit=2)

    assert texts(await session.get_items()) == ["item 3", "item 4"]
    assert texts(await session.get_items(limit=3)) == ["item 2", "item 3", "item 4"]
