"""Tool events through the SDK on the real stack (issue 17): the edge refuses tool events
that are not a list (an object used to be dropped silently and the turn published without
them); a tool event without a status is an unknown outcome that counts a run but moves no
success rate, on the live count and on the recount from stored transcripts; and the patterns
layer answers a flight question with the flight procedure but not a hotel question. Each
test failed on the code before issue 17."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from engine.adapters.local_embedder import LocalMiniLMEmbedder
from engine.ingest.patterns import PatternState, validate
from engine.scoping import TenantFilter
from schemas.scope import ScopeError
from services.endpoints import Endpoints
from services.groups.app import running_groups
from services.runtime import Runtime
from services.sdk.client import MemoryClient
from services.stream.offsets import start_at_end, wait_processed
from tests.support.jobs import run_and_wait
from tests.support.mongo import stored_transcripts
from tests.support.pipeline import subscriptions
from tests.support.settings import make_settings

pytestmark = pytest.mark.integration

FLIGHT = ["search_flights", "book_flight", "send_confirmation"]
FLIGHT_TEXT = "search_flights -> book_flight -> send_confirmation"


@pytest.fixture
async def stack_rt(
    stack: Endpoints, minilm: LocalMiniLMEmbedder, unique: Callable[[str], str]
) -> AsyncIterator[tuple[Runtime, MemoryClient]]:
    settings = make_settings(
        stack,
        unique("tools"),
        group_prefix=unique("tools-g"),
        session_timeout_ms=2000,
        heartbeat_interval_ms=500,
        extractor="none",
    )
    groups = ["transcripts", "patterns", "invalidation", "search", "jobs"]
    # the topics are shared by the session's tests: start at their ends (see groups_running)
    await start_at_end(stack.kafka_bootstrap, subscriptions(settings.group_prefix, groups))
    async with (
        running_groups(settings, groups, embedder=minilm, broker_logs=False) as rt,
        MemoryClient(stack.kafka_bootstrap, timeout=15) as client,
    ):
        yield rt, client
        await rt.mongo.drop_database(settings.mongo.db)


def trip(agent: str, n: int, at: int, status: str | None) -> dict[str, Any]:
    """Booking `n` of the user with the flight tools, each with `status` (None: none given)."""
    tools: list[dict[str, Any]] = [
        {"name": name, "timestamp": at + n * 10 + i, "args": {"trip": n}}
        for i, name in enumerate(FLIGHT)
    ]
    if status is not None:
        tools = [{**t, "status": status} for t in tools]
    return {
        "agentWallet": agent,
        "userAddress": "ana",
        "threadId": f"trip{n}",
        "userMessage": f"Please book flight number {n} for me.",
        "assistantMessage": "Done.",
        "toolEvents": tools,
    }


async def record(rt: Runtime, client: MemoryClient, body: dict[str, Any]) -> None:
    """Publish the turn and wait until the patterns and transcripts groups have it."""
    await client.record_turn(body)
    pos = client.last_position
    assert pos is not None
    for group in ("patterns", "transcripts"):
        await wait_processed(
            rt.endpoints.kafka_bootstrap,
            rt.group_id(group),
            pos.topic,
            pos.partition,
            pos.offset,
            timeout=60,
        )


async def flight_pattern(rt: Runtime, agent: str) -> PatternState:
    [state] = await rt.patterns.list(TenantFilter(agent_wallet=agent, user_address="ana"), 10)
    assert list(state.steps) == FLIGHT
    return state


async def procedures(client: MemoryClient, agent: str, query: str, *, want: bool) -> str:
    """The patterns layer's prompt for `query`, once it does (`want`) or does not hold the
    flight procedure: a cached answer of the same query is replaced after the invalidation
    group saw the count change."""
    deadline = time.monotonic() + 20
    while True:
        reply = await client.context(
            query, {"agentWallet": agent, "userAddress": "ana"}, layers=["patterns"]
        )
        prompt = reply.prompt or ""
        if (FLIGHT_TEXT in prompt) == want or time.monotonic() > deadline:
            return prompt
        await asyncio.sleep(0.2)


async def test_tool_events_that_are_not_a_list_are_refused_before_publishing(
    stack_rt: tuple[Runtime, MemoryClient], unique: Callable[[str], str], now_ms: int
) -> None:
    rt, client = stack_rt
    agent = unique("0xTools")
    await record(rt, client, trip(agent, 0, now_ms, "completed"))
    published = client.last_position
    body = trip(agent, 1, now_ms, "completed")
    for wrong, kind in ((body["toolEvents"][0], "an object"), ("search_flights", "a string")):
        with pytest.raises(
            ScopeError, match=f"^toolEvents must be a list of tool events, not {kind}"
        ):
            await client.record_turn({**body, "toolEvents": wrong})
    bad_args = [{"name": "search_flights", "args": "Lisbon"}]
    with pytest.raises(ScopeError, match=r"^toolEvents\[0\]\.args must be an object$"):
        await client.record_turn({**body, "toolEvents": bad_args})
    assert client.last_position == published  # nothing reached Kafka
    state = await flight_pattern(rt, agent)
    assert state.executions == 1  # the refused turns were never counted


async def test_outcomes_not_reported_count_runs_but_move_no_success_rate(
    stack_rt: tuple[Runtime, MemoryClient], unique: Callable[[str], str], now_ms: int
) -> None:
    rt, client = stack_rt
    agent = unique("0xTools")
    await record(rt, client, trip(agent, 0, now_ms, "completed"))
    await record(rt, client, trip(agent, 1, now_ms, "failed"))
    for n in range(2, 5):
        await record(rt, client, trip(agent, n, now_ms, None))
    state = await flight_pattern(rt, agent)
    assert (state.executions, state.successes, state.unknown) == (5, 1, 3)
    assert state.success_rate == 0.5  # was 4/5: a missing status counted as a success
    assert not validate(state).valid
    assert "3 outcomes unknown" in state.summary
    db = rt.mongo[rt.settings.mongo.db]
    [transcript] = await stored_transcripts(db, {"agentWallet": agent, "threadId": "trip2"})
    tool_lines = [m["content"] for m in transcript["messages"] if m["role"] == "tool"]
    assert tool_lines == [f"tool:{name} status:unknown" for name in FLIGHT]
    # an unreliable procedure stays out of the context, even for the question it answers
    query = "How do I book a flight?"
    assert FLIGHT_TEXT not in await procedures(client, agent, query, want=False)

    for n in range(5, 8):  # three more reported successes: 4 of 5 known runs worked
        await record(rt, client, trip(agent, n, now_ms, "completed"))
    state = await flight_pattern(rt, agent)
    assert (state.executions, state.successes, state.unknown) == (8, 4, 3)
    assert state.success_rate == pytest.approx(0.8)
    assert validate(state).valid
    assert FLIGHT_TEXT in await procedures(client, agent, query, want=True)
    # relevant only to its own questions: a hotel is booked some other way
    hotel = await procedures(client, agent, "How do I book a hotel?", want=False)
    assert FLIGHT_TEXT not in hotel

    # the recount from the stored transcripts gives the same counts (status:unknown read
    # back as unknown, not as a success)
    await db["patterns"].delete_many({"agentWallet": agent})
    job = await run_and_wait(rt, client, "patterns_extract", agentWallet=agent)
    assert job["status"] == "completed", job
    doc = await db["patterns"].find_one({"agentWallet": agent})
    assert doc is not None
    assert (doc["executionCount"], doc["successCount"], doc["unknownCount"]) == (8, 4, 3)
    assert doc["successRate"] == pytest.approx(0.8)
